"""protocol/_gzip_members.c against its reference, compression._gzip_decompress_bounded.

Both readers get the same streams -- valid, with every header field, padded, damaged,
cut, bombs past the bound, random bytes -- and must give the same verdict: the same
output, or the same exception class with the same message. Then the GIL: the C reader
lets go of it for inputs over RELEASE_GIL_BYTES and keeps it below.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import compression
from protocol.compression import CorruptCompressedData, DecompressedTooLarge
from tests.unit.protocol.gil_probe import runs_beside

REPO = Path(__file__).resolve().parents[3]

try:
    from protocol import _gzip_members
    WHY_NOT = ""
except ImportError as e:
    _gzip_members = None  # type: ignore[assignment]
    WHY_NOT = str(e)

Reader = Callable[[bytes | bytearray | memoryview, int], bytes]
Verdict = tuple[str, bytes | str]


@pytest.fixture(scope="module")
def native() -> Reader:
    # `make test` builds the extension (setup.py, with zlib's headers); not built is a
    # failure, never a skip (the Python reader is tested on its own)
    if _gzip_members is None:
        pytest.fail(f"protocol._gzip_members is not built ({WHY_NOT}); "
                    "`pip install -e .` builds it with a C compiler and zlib.h (setup.py)")
    return compression._gzip_decompress_native


def verdict(read: Reader, data: bytes | bytearray | memoryview, max_size: int) -> Verdict:
    try:
        return ("returned", read(data, max_size))
    except DecompressedTooLarge as e:
        return ("too large", str(e))
    except CorruptCompressedData as e:
        return ("corrupt", str(e))


def same(native: Reader, data: bytes, max_size: int = 1 << 20) -> Verdict:
    """The verdict both readers give (asserted equal), on bytes and on a bytearray."""
    want = verdict(compression._gzip_decompress_bounded, data, max_size)
    assert verdict(native, data, max_size) == want
    assert verdict(native, bytearray(data), max_size) == want
    assert verdict(native, memoryview(data), max_size) == want
    return want


def with_flags(member: bytes, flags: int, fields: bytes = b"") -> bytes:
    """``member`` with header flags ``flags`` and the optional ``fields`` they announce."""
    return member[:3] + bytes([flags]) + member[4:10] + fields + member[10:]


AB = gzip.compress(b"ab", mtime=0)

STREAMS = {
    "one member": AB,
    "three members and padding": gzip.compress(b"x" * 5000) * 3 + b"\x00" * 4,
    "reserved flag bits": AB + with_flags(gzip.compress(b"", mtime=0), 0xE0),
    "zeros between members": AB + b"\x00\x00" + gzip.compress(b"cd", mtime=0),
    "every optional field": with_flags(AB, 2 | 4 | 8 | 16, b"\x02\x00xyname\x00comment\x00\xff\xff"),
    "a name to the end": with_flags(AB, 8)[:10] + b"no-end",
    "an extra field past the end": with_flags(AB, 4)[:10] + b"\xff\x00ab",
    "an extra length cut": with_flags(AB, 4)[:11],
    "a header CRC cut": with_flags(AB, 2)[:11],
    "a wrong CRC": AB[:-8] + b"\x00" * 8,
    "a wrong size": AB[:-4] + b"\x09\x00\x00\x00",
    "a cut trailer": AB[:-3],
    "a cut deflate stream": gzip.compress(b"y" * 10_000)[:40],
    "a damaged deflate stream": AB[:10] + b"\xff\xff\xff" + AB[13:],
    "one byte": b"\x1f",
    "not gzip": b"hello world",
    "a short header": AB[:7],
    "not deflate": AB[:2] + b"\x07" + AB[3:],
    "garbage after a member": AB + b"\x01\x02",
    "a stored block": gzip.compress(os.urandom(3000), compresslevel=0),
}


@pytest.mark.parametrize("name", list(STREAMS))
def test_streams_give_the_same_verdicts(native: Reader, name: str) -> None:
    same(native, STREAMS[name])


def test_many_tiny_members(native: Reader) -> None:
    data = gzip.compress(b"x") * 50_000
    assert same(native, data) == ("returned", b"x" * 50_000)


@pytest.mark.parametrize("max_size", [0, 1, 4999, 5000, 5001, 14_999, 15_000, 15_001, 65_536])
def test_the_bound_is_the_same_at_every_edge(native: Reader, max_size: int) -> None:
    data = gzip.compress(b"x" * 5000) * 3
    assert same(native, data, max_size)[0] == ("returned" if max_size >= 15_000 else "too large")


def test_a_cut_stream_already_past_the_bound_is_too_large(native: Reader) -> None:
    """The bound is checked before the end of the input, as the reference does: a
    member cut after its first output byte, with max_size 0, is too large, not cut
    (found by the property test below)."""
    data = (gzip.compress(b"", mtime=0) + gzip.compress(b"\x00", mtime=0))[:32]
    assert same(native, data, 0)[0] == "too large"
    assert same(native, data, 1)[0] == "corrupt"


def test_a_bomb_stops_at_the_bound(native: Reader) -> None:
    bomb = gzip.compress(b"\x00" * (64 << 20))           # 64 MiB from ~65 KB
    assert same(native, bomb, 1 << 20)[0] == "too large"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=3000), min_size=1, max_size=5), st.integers(0, 12),
       st.data())
def test_damaged_and_cut_streams_give_the_same_verdicts(native: Reader, bodies: list[bytes],
                                                        padding: int,
                                                        draw: st.DataObject) -> None:
    data = b"".join(gzip.compress(b) for b in bodies) + b"\x00" * padding
    if draw.draw(st.booleans()):
        at = draw.draw(st.integers(0, len(data) - 1))
        if draw.draw(st.booleans()):
            data = data[:at] + bytes([draw.draw(st.integers(0, 255))]) + data[at + 1:]
        else:
            data = data[:max(at, 1)]
    same(native, data, draw.draw(st.integers(0, 20_000)))


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=200))
def test_random_bytes_after_a_header_give_the_same_verdicts(native: Reader, tail: bytes) -> None:
    same(native, AB[:10] + tail)


def test_what_the_zlib_errors_say_is_zlibs_wording(native: Reader) -> None:
    bad = AB[:10] + b"\xff\xff\xff" + AB[13:]
    kind, message = same(native, bad)
    assert kind == "corrupt" and isinstance(message, str)
    with pytest.raises(zlib.error) as info:
        zlib.decompress(bad[10:], wbits=-15)
    assert str(info.value) in message


# ---- the GIL -------------------------------------------------------------------------------

def test_inputs_over_64_kib_are_read_without_the_gil(native: Reader) -> None:
    assert _gzip_members is not None and _gzip_members.RELEASE_GIL_BYTES == 65_536
    big = bytearray(gzip.compress(b"x") * 20_000)           # 420 KB of tiny members
    assert runs_beside(lambda b: native(b, 1 << 24), big, 200, CorruptCompressedData)
    small = bytearray(gzip.compress(b"x") * 3000)           # 63 KB
    assert len(small) <= 65_536
    assert not runs_beside(lambda b: native(b, 1 << 24), small, 200, CorruptCompressedData)


def test_small_inputs_that_inflate_far_let_go_of_the_gil(native: Reader) -> None:
    """The work follows the output: a small input inflating past RELEASE_GIL_OUTPUT
    (a bomb, 16 MiB from 16 KB) lets go of the GIL from there; one that stays under it
    keeps the GIL."""
    assert _gzip_members is not None and _gzip_members.RELEASE_GIL_OUTPUT == 262_144
    bomb = bytearray(gzip.compress(bytes(16 << 20), 9))
    assert len(bomb) <= 65_536
    assert native(bytes(bomb), 1 << 25) == bytes(16 << 20)
    assert runs_beside(lambda b: native(b, 1 << 25), bomb, 50, CorruptCompressedData)
    under = bytearray(gzip.compress(bytes(100_000), 9))     # 64 KiB buffer, then 128 KiB
    assert not runs_beside(lambda b: native(b, 1 << 25), under, 300, CorruptCompressedData)


# ---- which reader decompress uses ----------------------------------------------------------

def _reader_in_use(env: dict[str, str]) -> str:
    code = "from protocol import compression as c; print(c.NATIVE_GZIP)"
    environ = {k: v for k, v in os.environ.items() if k != "PYBROKER_NATIVE"}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**environ, **env},
                          capture_output=True, text=True, check=True).stdout.strip()


def test_pybroker_native_0_forces_the_python_reader() -> None:
    assert _reader_in_use({"PYBROKER_NATIVE": "0"}) == "False"


def test_the_native_reader_is_used_when_built(native: Reader, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    assert _reader_in_use({}) == "True"
    calls: list[int] = []
    monkeypatch.setattr(compression, "NATIVE_GZIP", True)
    monkeypatch.setattr(compression, "_gzip_decompress_native",
                        lambda data, max_size: calls.append(max_size) or b"ab")
    assert compression.decompress(compression.Codec.GZIP, AB, max_size=100) == b"ab"
    assert calls == [100]
