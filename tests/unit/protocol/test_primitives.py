"""Varints and fixed-width primitives against hand-computed bytes and round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from protocol.primitives import (
    DecodeError, EncodeError, read_uvarint, read_varint, uvarint_size, varint_size,
    write_uvarint, write_varint,
)


@pytest.mark.parametrize("value, encoded", [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
    (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
])
def test_uvarint_known_bytes(value: int, encoded: bytes) -> None:
    out = bytearray()
    write_uvarint(out, value)
    assert bytes(out) == encoded
    assert read_uvarint(encoded, 0) == (value, len(encoded))
    assert uvarint_size(value) == len(encoded)


@pytest.mark.parametrize("value, encoded", [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-2, b"\x03"), (63, b"\x7e"), (-64, b"\x7f"),
    (64, b"\x80\x01"),
])
def test_zigzag_varint_known_bytes(value: int, encoded: bytes) -> None:
    out = bytearray()
    write_varint(out, value)
    assert bytes(out) == encoded
    assert read_varint(encoded, 0) == (value, len(encoded))


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    out = bytearray(b"\xaa")  # a prefix: decoding must honour the start position
    write_varint(out, value)
    assert read_varint(bytes(out), 1) == (value, len(out))
    assert varint_size(value) == len(out) - 1


def test_truncated_and_overlong_varints_are_refused() -> None:
    with pytest.raises(DecodeError):
        read_uvarint(b"\x80\x80", 0)
    with pytest.raises(DecodeError):
        read_uvarint(b"\xff" * 11, 0)
    with pytest.raises(EncodeError):
        write_uvarint(bytearray(), -1)
