"""FrameBuffer and FrameReceiver: frames split across and packed into reads, and hostile
sizes; FrameReceiver (reads into the buffers it hands out) gives what FrameBuffer gives
for any stream and any read sizes, and holds no more than arrived plus one chunk -- with
large bodies received into their own bytes (protocol/_frame_body.c) and with the chunked
pure-Python reference alike."""

from __future__ import annotations

import os
import random
import struct
from typing import Any

import pytest

from protocol import framing
from protocol.framing import (FrameBuffer, FrameReceiver, FrameTooLarge, InvalidFrameSize,
                              size_prefixed)

# Both ways of receiving a large body: into its own bytes (C) and in chunks (the reference).
PATHS = [pytest.param(True, id="native"), pytest.param(False, id="chunks")]


@pytest.fixture
def frame_body() -> Any:
    """protocol._frame_body. `make test` builds it (setup.py): not built is a failure,
    never a skip (the chunked reference is tested on its own: native=False)."""
    if framing._frame_body is None:
        pytest.fail("protocol._frame_body is not built; `pip install -e .` builds it with a "
                    "C compiler (setup.py)")
    return framing._frame_body


def _wire(frames: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(f)) + f for f in frames)


def test_frames_survive_any_split_of_the_stream() -> None:
    rng = random.Random(7)
    frames = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 300))) for _ in range(50)]
    wire = _wire(frames)
    for _ in range(20):
        fb = FrameBuffer(1000)
        got: list[bytes] = []
        pos = 0
        while pos < len(wire):
            step = rng.randrange(1, 64)
            got += fb.feed(wire[pos:pos + step])
            pos += step
        assert got == frames
        assert fb.buffered == 0


def test_oversized_frame_is_refused_before_buffering() -> None:
    fb = FrameBuffer(max_frame_size=100)
    with pytest.raises(FrameTooLarge) as e:
        fb.feed(struct.pack(">i", 101))
    assert e.value.size == 101 and e.value.limit == 100
    assert FrameBuffer(100).feed(_wire([b"x" * 100])) == [b"x" * 100]


def test_negative_size_is_refused() -> None:
    with pytest.raises(InvalidFrameSize):
        FrameBuffer().feed(struct.pack(">i", -5) + b"abc")


def test_incomplete_frame_waits() -> None:
    fb = FrameBuffer()
    assert fb.feed(struct.pack(">i", 10) + b"12345") == []
    assert fb.buffered == 9
    assert fb.feed(b"67890") == [b"1234567890"]


def test_size_prefixed_counts_wire_size_objects() -> None:
    class FileSlice:
        wire_size = 1000

    chunks = size_prefixed([b"abc", bytearray(b"de"), FileSlice()])
    assert chunks[0] == struct.pack(">i", 1005)


def _receive(fr: FrameReceiver, wire: bytes, rng: random.Random, max_read: int) -> list[bytes]:
    """What a transport does: recv_into the buffer handed out, at most ``max_read``."""
    got: list[bytes] = []
    pos = 0
    while pos < len(wire):
        buf = fr.writable()
        assert len(buf) > 0
        n = min(len(buf), rng.randrange(1, max_read + 1), len(wire) - pos)
        buf[:n] = wire[pos:pos + n]
        got += fr.commit(n)
        pos += n
    return got


@pytest.mark.parametrize("native", PATHS)
@pytest.mark.parametrize("seed", range(8))
def test_receiver_gives_the_frames_of_any_stream_and_read_sizes(seed: int, native: bool) -> None:
    rng = random.Random(seed)
    sizes = [rng.choice([0, 1, 3, 100, 5000, FrameReceiver.READ_CHUNK - 4,
                         FrameReceiver.READ_CHUNK - 3, FrameReceiver.READ_CHUNK,
                         rng.randrange(0, 3 * FrameReceiver.MAX_CHUNK)]) for _ in range(40)]
    frames = [rng.randbytes(n) for n in sizes]
    wire = _wire(frames)
    for max_read in (4096, 70_000, 1 << 20):
        fr = FrameReceiver(4 * FrameReceiver.MAX_CHUNK, native=native)
        got = _receive(fr, wire, rng, max_read)
        assert got == frames
        assert all(type(f) is bytes for f in got)
        assert fr.buffered == 0
    small = [rng.randbytes(rng.choice([0, 1, 5, 300, 20_000])) for _ in range(30)]
    for max_read in (1, 7):
        fr = FrameReceiver(4 * FrameReceiver.MAX_CHUNK, native=native)
        assert _receive(fr, _wire(small), rng, max_read) == small


@pytest.mark.parametrize("native", PATHS)
def test_receiver_bodies_at_the_native_bound(native: bool) -> None:
    """Bodies either side of BODY_MAX (the native path's bound: above it, chunks)."""
    rng = random.Random(5)
    limit = FrameReceiver.BODY_MAX
    frames = [rng.randbytes(limit), b"x", rng.randbytes(limit + 1), b""]
    fr = FrameReceiver(2 * limit, native=native)
    assert _receive(fr, _wire(frames), rng, 1 << 21) == frames


def test_frame_body_gives_its_bytes_once_and_no_buffer_after(frame_body: Any) -> None:
    body = frame_body.FrameBody(5)
    with memoryview(body) as view:
        assert not view.readonly and view.nbytes == 5
        view[:] = b"hello"
    assert body.size == 5
    taken = body.take()
    assert type(taken) is bytes and taken == b"hello"
    with pytest.raises(BufferError):
        memoryview(body)
    with pytest.raises(BufferError):
        body.take()
    with pytest.raises(ValueError):
        frame_body.FrameBody(-1)


def test_a_view_keeps_the_body_storage_alive(frame_body: Any) -> None:
    body = frame_body.FrameBody(3)
    view = memoryview(body)
    view[:] = b"abc"
    del body                              # only the view holds it now
    assert bytes(view) == b"abc"


def _rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_claimed_body_costs_no_memory_until_its_bytes_arrive(frame_body: Any) -> None:
    """A header claiming 16 MiB (BODY_MAX) of body, 14 bytes of it sent: the receiver's
    storage is not written beyond what arrived (uninitialised, so its pages are not
    resident) -- 8 such frames raise the RSS by far less than the 128 MiB claimed."""
    before = _rss_bytes()
    held = []
    for _ in range(8):
        fr = FrameReceiver(native=True)
        buf = fr.writable()
        buf[:14] = struct.pack(">i", FrameReceiver.BODY_MAX) + b"0123456789"
        assert fr.commit(14) == []
        assert fr.buffered == 14
        held.append(fr)
    assert _rss_bytes() - before < 16 * 1024 * 1024


def test_receiver_refuses_hostile_sizes_at_the_header() -> None:
    fr = FrameReceiver(max_frame_size=100)
    buf = fr.writable()
    buf[:4] = struct.pack(">i", 101)
    with pytest.raises(FrameTooLarge) as e:
        fr.commit(4)
    assert e.value.size == 101
    fr = FrameReceiver()
    buf = fr.writable()
    buf[:7] = struct.pack(">i", -5) + b"abc"
    with pytest.raises(InvalidFrameSize):
        fr.commit(7)


def test_receiver_holds_what_arrived_not_what_a_header_claims() -> None:
    fr = FrameReceiver()                        # 100 MB allowed
    buf = fr.writable()
    buf[:14] = struct.pack(">i", 100_000_000) + b"0123456789"
    assert fr.commit(14) == []
    assert fr.buffered == 14
    for _ in range(1000):                       # a thousand reads of 5 bytes each
        buf = fr.writable()
        buf[:5] = b"abcde"
        assert fr.commit(5) == []
    assert fr.buffered == 5014
    assert sum(len(c) for c, _ in fr._parts) <= 5014 + FrameReceiver.MAX_CHUNK
