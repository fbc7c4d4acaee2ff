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

from protocol import native

_SIZE = struct.Struct(">i")


# protocol/_frame_body.c where built (else FrameReceiver receives large bodies in chunks)
_frame_body = native.extension("_frame_body")
# Whether a large frame's body is received straight into its bytes; PYBROKER_NATIVE=0
# forces the chunked path, as it forces the other Python references.
NATIVE_FRAME_BODY: bool = _frame_body is not None and native.wanted()


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
                pos = _split(view, frames, self.max_frame_size)
                if pos < len(view):
                    self._buf += view[pos:]
            return frames
        self._buf += data
        buf = self._buf
        with memoryview(buf) as view:
            pos = _split(view, frames, self.max_frame_size)
        if pos:
            del buf[:pos]  # one compaction per feed keeps this linear
        return frames

    @property
    def buffered(self) -> int:
        """Bytes held for a frame not yet complete."""
        return len(self._buf)


class FrameReceiver:
    """Frames received in place: the transport reads into the buffers this hands out
    (``writable``, for a ``recv_into``) and ``commit`` says how much it put there. The
    same frames and refusals as ``FrameBuffer.feed``, with fewer copies: small frames
    arrive in one buffer of ``READ_CHUNK`` bytes and are cut out of it (one copy
    each). The body of a frame larger than that:

    * native (``NATIVE_FRAME_BODY``, a body of at most ``BODY_MAX`` bytes): received
      straight into the frame's own bytes (``protocol._frame_body.FrameBody``: fresh,
      uninitialised storage; the recv is the only copy, and pages no byte has reached
      are not touched, so not resident);
    * otherwise (the pure-Python reference, and bodies above ``BODY_MAX``): received
      into zeroed chunks of at most ``MAX_CHUNK`` bytes, each allocated when the last
      one is full and the transport asks for more, and joined once into the frame's
      bytes.

    Either way the memory held stays within what arrived plus one chunk, whatever size
    a frame header claims, and a size above ``max_frame_size`` is refused as soon as
    its 4 bytes are in.

    Invariants: ``_small[:_end]`` holds the unconsumed bytes from a frame boundary
    when no large frame is in progress (``_size`` 0); while one is, its header is
    consumed, ``_got`` of its ``_size`` body bytes are in, held by ``_body`` (native)
    or by ``_parts`` as (chunk, bytes filled). A buffer handed out is never resized
    afterwards (a transport may still hold a view of it when it calls ``commit``):
    storage grows by replacement; a body's bytes are taken only once all of them are
    in, so no view handed out is written after (the transport writes into a buffer
    before it calls ``commit``).
    """

    READ_CHUNK = 16 * 1024
    MAX_CHUNK = 256 * 1024
    # Bodies up to this size are received into their own bytes (native); a larger one
    # (rare: Kafka's produce batches are at most ~1 MB) takes the chunked path, so a
    # header cannot make one allocation claim more address space than this.
    BODY_MAX = 16 * 1024 * 1024

    __slots__ = ("max_frame_size", "_small", "_end", "_parts", "_body", "_size", "_got",
                 "_native")

    def __init__(self, max_frame_size: int = 100 * 1024 * 1024,
                 native: bool | None = None) -> None:
        self.max_frame_size = max_frame_size
        self._small = bytearray()
        self._end = 0
        self._parts: list[tuple[bytearray, int]] = []
        self._body: Any = None        # a protocol._frame_body.FrameBody, or None
        self._size = 0
        self._got = 0
        # native: None = NATIVE_FRAME_BODY; False = the chunked reference (tests)
        self._native = NATIVE_FRAME_BODY if native is None else (native and _frame_body is not None)

    def writable(self) -> memoryview:
        """A buffer for the next read (never empty)."""
        if self._body is not None:
            return memoryview(self._body)[self._got:]
        if self._size:
            chunk, filled = self._parts[-1]
            if filled < len(chunk):                 # the rest of the last chunk first
                return memoryview(chunk)[filled:]
            chunk = bytearray(min(self._size - self._got, self.MAX_CHUNK))
            self._parts.append((chunk, 0))
            return memoryview(chunk)
        if len(self._small) - self._end < self.READ_CHUNK // 2:
            grown = bytearray(self._end + self.READ_CHUNK)
            grown[:self._end] = self._small[:self._end]
            self._small = grown
        return memoryview(self._small)[self._end:]

    def commit(self, n: int) -> list[bytes]:
        """``n`` bytes were read into the last buffer handed out; -> complete frames.
        Raises FrameTooLarge / InvalidFrameSize as ``FrameBuffer.feed``."""
        frames: list[bytes] = []
        if self._body is not None:
            self._got += n
            if self._got < self._size:
                return frames
            frames.append(self._body.take())
            self._body, self._size, self._got = None, 0, 0
            return frames
        if self._size:
            chunk, filled = self._parts[-1]
            self._parts[-1] = (chunk, filled + n)
            self._got += n
            if self._got < self._size:
                return frames
            frames.append(b"".join(memoryview(c)[:filled] for c, filled in self._parts))
            self._parts, self._size, self._got = [], 0, 0
            return frames
        self._end += n
        with memoryview(self._small) as whole:
            with whole[:self._end] as view:
                pos = _split(view, frames, self.max_frame_size)
                rest = self._end - pos
                if rest >= 4:
                    (size,) = _SIZE.unpack_from(view, pos)
                    if 4 + size > self.READ_CHUNK:     # a large frame begins
                        self._begin_body(size, view[pos + 4:self._end])
                        pos, rest = self._end, 0
        if pos:
            if rest:
                self._small[:rest] = self._small[pos:pos + rest]
            self._end = rest
        if not rest:
            # nothing pending: give the storage back (an idle connection holds no
            # buffer: 10,000 of them would hold 160 MB); the next read takes a fresh one
            self._small = bytearray()
        return frames

    def _begin_body(self, size: int, arrived: memoryview) -> None:
        """A frame of ``size`` body bytes begins, ``arrived`` of them already in."""
        got = len(arrived)
        if self._native and size <= self.BODY_MAX:
            assert _frame_body is not None
            body = _frame_body.FrameBody(size)
            with memoryview(body) as into:
                into[:got] = arrived
            self._body = body
        else:
            self._parts = [(bytearray(arrived), got)]
        self._size, self._got = size, got

    @property
    def buffered(self) -> int:
        """Bytes held for a frame not yet complete."""
        return self._end + (4 + self._got if self._size else 0)


def _split(view: memoryview, frames: list[bytes], max_frame_size: int) -> int:
    """Append the complete frames at the start of ``view``; -> bytes consumed. A size
    prefix out of bounds raises as soon as its 4 bytes are there."""
    pos, end = 0, len(view)
    while end - pos >= 4:
        (size,) = _SIZE.unpack_from(view, pos)
        if size < 0:
            raise InvalidFrameSize(f"negative frame size {size}")
        if size > max_frame_size:
            raise FrameTooLarge(size, max_frame_size)
        if end - pos - 4 < size:
            break
        frames.append(bytes(view[pos + 4:pos + 4 + size]))
        pos += 4 + size
    return pos


def size_prefixed(chunks: list[Any]) -> list[Any]:
    """Prefix a frame given as chunks with its total size (chunks not copied)."""
    total = 0
    for c in chunks:
        size = getattr(c, "wire_size", None)
        total += int(size) if size is not None else memoryview(c).nbytes
    return [_SIZE.pack(total), *chunks]
