"""A plaintext connection's transport side: frames read straight into a
``protocol.framing.FrameReceiver`` (an ``asyncio.BufferedProtocol``: the event loop's
recv_into fills the receiver's buffers), and the writer calls ``Connection`` makes.

Why: through ``asyncio.StreamReader`` every byte of a request was copied four times
before a handler saw it (into the reader's buffer, out of it, into the frame buffer,
out as the frame); here once (the frame's bytes out of the receive buffers). The
profile of a 1 KiB produce load had those copies at about a third of the broker's
busy samples (bench/throughput.py, issue 28). TLS listeners keep the stream path
(``broker.security.tls_stream``): their bytes are decrypted into Python anyway.

Reading happens only while ``read_frames`` waits (the transport is paused otherwise),
so a connection that is handling a request, throttled or short of request memory
reads nothing, as with ``StreamReader.read``: what a client that does not read its
responses costs stays bounded (connection.py, theory of operation 8). The end of the
stream (EOF or a lost connection) is a ``read_frames`` of None once what came before
it was given out; the transport stays open for the responses still owed (half close).
"""

from __future__ import annotations

import asyncio
from typing import Any

from protocol.framing import FrameReceiver


class FrameStream(asyncio.BufferedProtocol):
    """One connection's protocol: frames in (``read_frames``), responses out
    (``writelines`` / ``drain`` / ``close``, as ``asyncio.StreamWriter``)."""

    def __init__(self, max_frame_size: int) -> None:
        self.frames = FrameReceiver(max_frame_size)
        # an asyncio or a uvloop transport (uvloop's is no asyncio.Transport subclass)
        self.transport: Any = None
        self._ready: list[bytes] = []
        self._received = 0            # bytes read since the last read_frames
        self._error: Exception | None = None   # a refused frame size
        self._eof = False
        self._waiter: asyncio.Future[None] | None = None
        self._write_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._lost = False

    # -- asyncio.BufferedProtocol ---------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        transport.pause_reading()          # read only while read_frames waits

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.frames.writable()

    def buffer_updated(self, nbytes: int) -> None:
        self._received += nbytes
        try:
            self._ready.extend(self.frames.commit(nbytes))
        except Exception as e:  # noqa: BLE001 - FrameTooLarge / InvalidFrameSize, raised
            self._error = e     # by read_frames on the connection's task
        self._pause()
        self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        return True                        # keep the transport for the responses owed

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = self._lost = True
        self._wake()
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_exception(ConnectionResetError("connection lost"))
        self._drain_waiters.clear()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()

    # -- the reading side -------------------------------------------------------------------

    async def read_frames(self) -> tuple[list[bytes], int] | None:
        """The frames completed by the next read(s) and the bytes read, or None at the
        end of the stream. Raises FrameTooLarge / InvalidFrameSize for a refused size."""
        while not (self._ready or self._received or self._error or self._eof):
            if self._lost or self.transport is None or self.transport.is_closing():
                self._eof = True
                break
            self._waiter = asyncio.get_running_loop().create_future()
            self.transport.resume_reading()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if self._error is not None:
            raise self._error
        if self._ready or self._received:
            frames, self._ready = self._ready, []
            received, self._received = self._received, 0
            return frames, received
        return None

    def _pause(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # -- the writing side (asyncio.StreamWriter's calls) ------------------------------------

    def writelines(self, chunks: list[Any]) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.writelines(chunks)

    async def drain(self) -> None:
        if self._lost:
            raise ConnectionResetError("connection lost")
        if self._write_paused:
            waiter = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(waiter)
            await waiter

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default if self.transport is None else self.transport.get_extra_info(
            name, default)
