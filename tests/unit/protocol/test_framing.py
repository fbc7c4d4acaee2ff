"""FrameBuffer and FrameReceiver: frames split across and packed into reads, and hostile
sizes; FrameReceiver (reads into the buffers it hands out) gives what FrameBuffer gives
for any stream and any read sizes, and holds no more than arrived plus one chunk."""

from __future__ import annotations

import random
import struct

import pytest

from protocol.framing import (FrameBuffer, FrameReceiver, FrameTooLarge, InvalidFrameSize,
                              size_prefixed)


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


@pytest.mark.parametrize("seed", range(8))
def test_receiver_gives_the_frames_of_any_stream_and_read_sizes(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [rng.choice([0, 1, 3, 100, 5000, FrameReceiver.READ_CHUNK - 4,
                         FrameReceiver.READ_CHUNK - 3, FrameReceiver.READ_CHUNK,
                         rng.randrange(0, 3 * FrameReceiver.MAX_CHUNK)]) for _ in range(40)]
    frames = [rng.randbytes(n) for n in sizes]
    wire = _wire(frames)
    for max_read in (4096, 70_000, 1 << 20):
        fr = FrameReceiver(4 * FrameReceiver.MAX_CHUNK)
        assert _receive(fr, wire, rng, max_read) == frames
        assert fr.buffered == 0
    small = [rng.randbytes(rng.choice([0, 1, 5, 300, 20_000])) for _ in range(30)]
    for max_read in (1, 7):
        fr = FrameReceiver(4 * FrameReceiver.MAX_CHUNK)
        assert _receive(fr, _wire(small), rng, max_read) == small


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
