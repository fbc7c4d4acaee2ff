"""Size-prefixed framing, sans-I/O.

Every Kafka request and response travels as ``size int32 | size bytes``.
``FrameBuffer.feed`` takes whatever bytes arrived and returns the complete
frames; it never touches a socket. A size above ``max_frame_size`` (or below
zero) is refused before any of the frame is buffered, so a hostile length
cannot make us allocate.
"""

from __future__ import annotations

import struct
from typing import Any

_SIZE = struct.Struct(">i")


class FrameTooLarge(ValueError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the maximum of {limit}")
        self.size = size
        self.limit = limit


class InvalidFrameSize(ValueError):
    pass


class FrameBuffer:
    """Accumulates bytes and splits them into frames (size prefix removed)."""

    __slots__ = ("max_frame_size", "_buf")

    def __init__(self, max_frame_size: int = 100 * 1024 * 1024) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()  # unconsumed bytes; starts at a frame boundary

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        # Each frame is copied once out of what arrived (bytes of a memoryview slice),
        # plus once into the buffer when it spans reads: with nothing buffered the
        # frames are cut from ``data`` itself and only an incomplete tail is kept.
        frames: list[bytes] = []
        if not self._buf:
            with memoryview(data) as view:
                pos = self._split(view, frames)
                if pos < len(view):
                    self._buf += view[pos:]
            return frames
        self._buf += data
        buf = self._buf
        with memoryview(buf) as view:
            pos = self._split(view, frames)
        if pos:
            del buf[:pos]  # one compaction per feed keeps this linear
        return frames

    def _split(self, view: memoryview, frames: list[bytes]) -> int:
        """Append the complete frames at the start of ``view``; -> bytes consumed."""
        pos, end = 0, len(view)
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(view, pos)
            if size < 0:
                raise InvalidFrameSize(f"negative frame size {size}")
            if size > self.max_frame_size:
                raise FrameTooLarge(size, self.max_frame_size)
            if end - pos - 4 < size:
                break
            frames.append(bytes(view[pos + 4:pos + 4 + size]))
            pos += 4 + size
        return pos

    @property
    def buffered(self) -> int:
        """Bytes held for a frame not yet complete."""
        return len(self._buf)


def size_prefixed(chunks: list[Any]) -> list[Any]:
    """Prefix a frame given as chunks with its total size (chunks not copied)."""
    total = 0
    for c in chunks:
        size = getattr(c, "wire_size", None)
        total += int(size) if size is not None else memoryview(c).nbytes
    return [_SIZE.pack(total), *chunks]
