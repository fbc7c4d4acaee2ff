"""protocol/_record_walk.c against protocol.record_validation._walk, its reference (issue 28).

The two must give the same answer for any bytes: the same (keyless, stamps), or the same
exception type and message. Property tests feed both valid batches (checked against what
was encoded, too) and hostile ones: random bytes, truncations, byte flips, trailing
bytes, wrong counts, wrong offset deltas, lengths and header counts off by a little or by
2**69, zig-zag values beyond int64, 10- and 11-byte varints. The native walk gets the
body as bytes, bytearray or memoryview, with and without the GIL.

Without the extension (no compiler at install time) these tests fail, saying why: `make
test` builds it, and a build that went missing is a regression, not a reason to skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from protocol import record_validation as rv
from protocol.records import HEADER_SIZE, InvalidRecordError, build_batch
from tests.unit.protocol.gil_probe import runs_beside

REPO = Path(__file__).resolve().parents[3]

try:
    from protocol import _record_walk
    WHY_NOT = ""
except ImportError as e:
    _record_walk = None  # type: ignore[assignment]
    WHY_NOT = str(e)

Walk = Callable[..., tuple[list[int], list[int] | None]]


@pytest.fixture(scope="module")
def native() -> Walk:
    # `make test` builds the extension (setup.py); not built is a failure, never a skip
    # (the pure-Python fallback is tested on its own, PYBROKER_NATIVE=0)
    if _record_walk is None:
        pytest.fail(f"protocol._record_walk is not built ({WHY_NOT}); "
                    "`pip install -e .` builds it with a C compiler (setup.py)")
    return _record_walk.walk


# ---- encoding, hostile values allowed ------------------------------------------------------

def varint(value: int, pad: int = 0) -> bytes:
    """The zig-zag varint of any int (more than 10 bytes when it needs more than 70 bits),
    with ``pad`` redundant zero groups (non-minimal, which Java and the walk accept)."""
    raw = value * 2 if value >= 0 else -value * 2 - 1
    groups = []
    while True:
        groups.append(raw & 0x7F)
        raw >>= 7
        if not raw:
            break
    groups += [0] * pad
    return bytes(g | 0x80 for g in groups[:-1]) + bytes([groups[-1]])


def record(index: int, key: bytes | None = b"k", value: bytes | None = b"v", ts: int = 0,
           headers: Sequence[tuple[bytes, bytes | None]] = (), attrs: int = 0,
           pads: dict[str, int] | None = None, **override: int) -> bytes:
    """One record. ``override`` replaces a varint's value: length, offset_delta,
    key_length, value_length, header_count, header_key_length, header_value_length (every
    header's), or adds length_adjust to the true length; ``pads`` pads those varints (and
    ts) with redundant bytes."""
    pads = pads or {}

    def field(name: str, true: int) -> bytes:
        return varint(override.get(name, true), pads.get(name, 0))

    def sized(name: str, data: bytes | None) -> bytes:
        return field(name, -1 if data is None else len(data)) + (data or b"")

    rec = bytes([attrs]) + varint(ts, pads.get("ts", 0)) + field("offset_delta", index)
    rec += sized("key_length", key) + sized("value_length", value)
    rec += field("header_count", len(headers))
    for hk, hv in headers:
        rec += sized("header_key_length", hk) + sized("header_value_length", hv)
    return field("length", len(rec) + override.get("length_adjust", 0)) + rec


def outcome(walk: Walk, *args: Any) -> tuple[Any, ...]:
    try:
        return ("returned", walk(*args))
    except Exception as e:  # noqa: BLE001 -- any exception must match, type and message
        return ("raised", type(e), str(e))


def same(native: Walk, body: bytes, count: Any, want_stamps: bool,
         container: type = bytes, release_above: int | None = None) -> tuple[Any, ...]:
    """Both walks on ``body``; asserts they agree and returns the reference's outcome."""
    expected = outcome(rv._walk, body, count, want_stamps)
    data: Any = bytearray(body) if container is bytearray else \
        memoryview(body) if container is memoryview else body
    args = (data, count, want_stamps) + (() if release_above is None else (release_above,))
    got = outcome(native, *args)
    assert got == expected, (body.hex(), count, want_stamps)
    # without the keyless indexes (a topic that is not compacted): the same verdict, and
    # an empty list in their place -- from both walks
    expected_no_keys = outcome(lambda *a: rv._walk(*a, want_keyless=False), body, count,
                               want_stamps)
    assert outcome(lambda *a: native(*a, want_keyless=False), *args) == expected_no_keys
    if expected[0] == "returned":
        assert expected_no_keys == ("returned", ([], expected[1][1]))
    else:
        assert expected_no_keys == expected
    return expected


# ---- strategies ----------------------------------------------------------------------------

WIDE = st.one_of(
    st.integers(-3, 3),
    st.integers(-3, 300),
    st.sampled_from([-1, 2**31, 2**63 - 1, -2**63, 2**63, -2**63 - 1, 2**64, 2**64 + 1,
                     -2**64, 2**69 - 1, -2**69, 2**69, 2**70]),
    st.integers(-2**70, 2**70))
STAMPS = st.one_of(st.integers(-300, 300), st.integers(-2**63, 2**63 - 1),
                   st.integers(-2**69, 2**69 - 1))
FIELDS = ("length", "offset_delta", "key_length", "value_length", "header_count",
          "header_key_length", "header_value_length")
PADDED = FIELDS + ("ts",)
DATA = st.one_of(st.none(), st.binary(max_size=12), st.binary(min_size=60, max_size=200))


@st.composite
def records_of(draw: st.DrawFn, hostile: bool) -> tuple[bytes, int, list[int], list[int]]:
    """(body, count, keyless indexes, stamps); those last two are what a valid body gives."""
    count = draw(st.integers(0, 6))
    body, keyless, stamps = b"", [], []
    for index in range(count):
        key, value, ts = draw(DATA), draw(DATA), draw(STAMPS)
        headers = draw(st.lists(st.tuples(st.binary(max_size=8), DATA), max_size=3))
        override: dict[str, int] = {}
        pads: dict[str, int] = {}
        if hostile:
            for name in draw(st.lists(st.sampled_from(FIELDS), max_size=2)):
                override[name] = draw(WIDE)
            if draw(st.integers(0, 4)) == 0:
                override["length_adjust"] = draw(st.integers(-4, 4))
            for name in draw(st.lists(st.sampled_from(PADDED), max_size=2)):
                pads[name] = draw(st.sampled_from([1, 2, 8, 9, 10]))
        else:
            # redundant bytes where a Java client could write them: not on a -1
            for name in draw(st.lists(st.sampled_from(PADDED), max_size=2)):
                pads[name] = draw(st.integers(1, 3))
            if key is None:
                pads.pop("key_length", None)
            if value is None and pads.get("value_length") == 1:
                pads.pop("value_length")  # -1 in two bytes is refused, in three accepted
            if any(hv is None for _, hv in headers) and pads.get("header_value_length") == 1:
                pads.pop("header_value_length")
            if "ts" in pads:  # at most 10 bytes
                pads["ts"] = min(pads["ts"], 10 - len(varint(ts)))
        body += record(index, key, value, ts, headers, attrs=draw(st.integers(0, 255)),
                       pads=pads, **override)
        keyless += [index] if key is None else []
        stamps.append(ts)
    return body, count, keyless, stamps


def mutate(draw: st.DrawFn, body: bytes, count: int) -> tuple[bytes, int]:
    kind = draw(st.sampled_from(["none", "truncate", "flip", "insert", "trail", "count"]))
    at = draw(st.integers(0, max(len(body) - 1, 0)))
    if kind == "truncate":
        body = body[:at]
    elif kind == "flip" and body:
        body = body[:at] + bytes([draw(st.integers(0, 255))]) + body[at + 1:]
    elif kind == "insert":
        body = body[:at] + draw(st.binary(min_size=1, max_size=11)) + body[at:]
    elif kind == "trail":
        body += draw(st.binary(min_size=1, max_size=5))
    elif kind == "count":
        count = draw(st.one_of(st.integers(-2, count + 3), st.integers(-2**31, 2**31 - 1)))
    return body, count


CALLS = st.tuples(st.booleans(), st.sampled_from([bytes, bytearray, memoryview]),
                  st.sampled_from([None, 0, -1]))


# ---- the properties ------------------------------------------------------------------------

@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records_of(hostile=False), CALLS)
def test_valid_bodies_give_the_same_lists(native: Walk, case: Any, call: Any) -> None:
    body, count, keyless, stamps = case
    want_stamps, container, release_above = call
    result = same(native, body, count, want_stamps, container, release_above)
    assert result == ("returned", (keyless, stamps if want_stamps else None))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), records_of(hostile=True), CALLS)
def test_hostile_bodies_give_the_same_verdicts(native: Walk, data: st.DataObject, case: Any,
                                              call: Any) -> None:
    body, count, _keyless, _stamps = case
    body, count = mutate(data.draw, body, count)
    same(native, body, count, *call)


@settings(max_examples=600, deadline=None)
@given(st.binary(max_size=120), st.integers(-3, 20), st.booleans())
@example(b"\x80" * 10, 1, False)            # 10 continuation bytes: longer than 10
@example(b"\x80" * 9, 1, False)             # 9 and the end: premature EOF
@example(b"\x0c" + b"\x00" * 6, 1, True)    # the smallest record but one byte short
@example(b"\x0c\x00\x00\x00\x01\x01\x00", 1, True)  # the smallest record, keyless
def test_random_bytes_give_the_same_verdicts(native: Walk, body: bytes, count: int,
                                             want_stamps: bool) -> None:
    same(native, body, count, want_stamps)


# ---- hostile values, one field at a time ---------------------------------------------------

BIG = [2**63, -2**63 - 1, 2**64, -2**64, 2**69 - 1, -2**69, 2**63 - 1, -2**63, -2, -1, 0,
       2**31, 10_000]


@pytest.mark.parametrize("name", FIELDS)
@pytest.mark.parametrize("value", BIG)
def test_a_field_at_any_value(native: Walk, name: str, value: int) -> None:
    body = record(0, headers=[(b"h", b"x")]) + record(1, **{name: value}, headers=[(b"h", b"")])
    same(native, body, 2, True)
    same(native, body, 2, False, bytearray, 0)


@pytest.mark.parametrize("name", PADDED)
@pytest.mark.parametrize("pad", [1, 2, 9, 10])
def test_redundant_bytes_in_any_varint(native: Walk, name: str, pad: int) -> None:
    """Up to 10 bytes are read; 11 are refused wherever they are."""
    for key, value in ((b"k", b"v"), (None, None)):
        body = record(0, key, value, ts=-5, headers=[(b"h", None)], pads={name: pad})
        same(native, body, 1, True)


@pytest.mark.parametrize("ts", [2**63, -2**63 - 1, 2**69 - 1, -2**69, 2**64 + 12345])
def test_timestamp_deltas_beyond_int64_are_returned_exactly(native: Walk, ts: int) -> None:
    body = record(0, ts=ts) + record(1, None, ts=7) + record(2, ts=ts)
    assert same(native, body, 3, True) == ("returned", ([1], [ts, 7, ts]))


def test_eleven_byte_varints_are_refused(native: Walk) -> None:
    body = record(0, ts=2**70)  # 71 bits: 11 bytes
    assert same(native, body, 1, True) == (
        "raised", InvalidRecordError, "varint longer than 10 bytes")


@pytest.mark.parametrize("count", [0, -1, -2**31, 2**31 - 1, 2**80, -2**80, True, False])
@pytest.mark.parametrize("body", [b"", record(0), b"\x00" * 100])
def test_counts(native: Walk, body: bytes, count: int) -> None:
    same(native, body, count, True)


def test_batches_from_the_builder(native: Walk) -> None:
    rows = [(b"key-%d" % i if i % 7 else None, bytes(i * 37 % 3000), 1_700_000_000_000 + i,
             [("h", b"x"), ("n", None)]) for i in range(2000)]
    body = bytes(build_batch(rows)[HEADER_SIZE:])  # type: ignore[arg-type]
    keyless = [i for i in range(2000) if i % 7 == 0]
    for container in (bytes, bytearray, memoryview):
        # 2000 records: over RELEASE_GIL_RECORDS, the walk runs without the GIL
        assert same(native, body, 2000, True, container) == \
            ("returned", (keyless, list(range(2000))))


# ---- the GIL -------------------------------------------------------------------------------

def test_walks_of_more_than_1000_records_let_go_of_the_gil(native: Walk) -> None:
    assert _record_walk is not None and _record_walk.RELEASE_GIL_RECORDS == 1000
    many = bytearray(b"".join(record(i) for i in range(50_000)))
    assert runs_beside(lambda b: native(b, 50_000, False), many, 2000, InvalidRecordError)
    few = bytearray(b"".join(record(i) for i in range(1000)))
    assert not runs_beside(lambda b: native(b, 1000, False), few, 300, InvalidRecordError)


# ---- which walk the validator uses ---------------------------------------------------------

def _walk_in_use(env: dict[str, str]) -> str:
    code = ("from protocol import record_validation as rv; "
            "print(rv.NATIVE, rv._walk_records is rv._walk)")
    environ = {k: v for k, v in os.environ.items() if k != "PYBROKER_NATIVE"}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**environ, **env},
                          capture_output=True, text=True, check=True).stdout.strip()


def test_pybroker_native_0_forces_the_python_walk() -> None:
    assert _walk_in_use({"PYBROKER_NATIVE": "0"}) == "False True"


def test_the_native_walk_is_used_when_built(native: Walk) -> None:
    assert _walk_in_use({}) == "True False"
    assert _walk_in_use({"PYBROKER_NATIVE": "1"}) == "True False"
    if os.environ.get("PYBROKER_NATIVE", "1") != "0":
        assert rv.NATIVE and rv._walk_records is native
