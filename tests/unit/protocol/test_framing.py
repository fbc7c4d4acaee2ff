"""FrameBuffer: frames split across and packed into reads, and hostile sizes."""

from __future__ import annotations

import random
import struct

import pytest

from protocol.framing import FrameBuffer, FrameTooLarge, InvalidFrameSize, size_prefixed


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
