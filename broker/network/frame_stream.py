"""A plaintext connection's transport side: frames read straight into a
``protocol.framing.FrameReceiver`` (an ``asyncio.BufferedProtocol``: the event loop's
recv_into fills the receiver's buffers), and the writer calls ``Connection`` makes.

Why: through ``asyncio.StreamReader`` every byte of a request was copied four times
before a handler saw it (into the reader's buffer, out of it, into the frame buffer,
out as the frame); here once for a small frame (its bytes cut out of the receive
buffer) and not at all for a large one (received into its own bytes where
protocol/_frame_body.c is built; else once, the join of its chunks). The
profile of a 1 KiB produce load had those copies at about a third of the broker's
busy samples (bench/throughput.py, issue 28). TLS listeners keep the stream path
(``broker.security.tls_stream``): their bytes are decrypted into Python anyway.

Reading happens only while ``read_frames`` waits (the transport is paused otherwise),
so a connection that is handling a request, throttled or short of request memory
reads nothing, as with ``StreamReader.read``: what a client that does not read its
responses costs stays bounded (connection.py, theory of operation 8). The end of the
stream (EOF or a lost connection) is a ``read_frames`` of None once what came before
it was given out; the transport stays open for the responses still owed (half close).

Zero-copy responses (``write_response``): a fetch's records are a slice of a segment
file (``FileRegion``); a slice of ``SENDFILE_MIN_BYTES`` or more goes from the page
cache to the socket with ``os.sendfile`` instead of being read into Python and
written (the profile of a 1 KiB consume load had that pread at a quarter of the
broker's busy samples and the copy into the socket at half). Order is kept by
writing straight to the socket only while the transport holds nothing (uvloop's and
asyncio's transports write at once when their buffer is empty, so everything given
to them before has reached the kernel), and by finishing the slice before anything
after it is written: when the socket buffer is full, ``write_response`` waits until
the socket takes more (the event loop watches a dup of the socket's fd: the
transport owns the fd itself) and goes on with sendfile. A slice that finds bytes
queued in the transport is read and queued behind them. Kafka does the same
(``FileRecords.writeTo`` -> ``FileChannel.transferTo``) and keeps the copy for TLS,
as here: TLS listeners never use this class.

Except to a loopback peer (``zero_copy_for``, the broker key ``fetch.zero.copy``:
``auto``, the default, sends by sendfile to every peer but a loopback one; ``true``
to every peer, as Kafka; ``false`` to none). On loopback nothing is saved: the
segments that sendfile queues hold the page-cache pages themselves, they go to the
receiving socket as they are, and the receiver's recv copies them out page by page;
a copied response is one linear buffer per segment. Measured on one 2-core VM
(Intel Xeon, ``bench/loopback_send.py``, 512 MiB in 8 MiB writes, page cache warm):
sendfile 2.1-2.2 GB/s at 0.42-0.47 s/GB of sender CPU and 0.19-0.21 s/GB of receiver
CPU; pread + send 2.5-2.8 GB/s at 0.33-0.37 and 0.11-0.12 s/GB. For the broker under
the 1 KiB consume load (``bench/throughput.py``, librdkafka, one 10 MiB fetch in
flight) that was 1,320 MB/s by sendfile and 1,705 MB/s copied, at the same 0.36 s of
broker CPU per GB: the client's recv is that load's bound. A copied slice is read
whole into memory (up to the fetch's max bytes, one response at a time per
connection), which on a loopback peer is the price. To a remote peer the NIC sends
the pages by scatter-gather DMA and the copy sendfile saves is the broker's own.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
from typing import Any, Protocol

from protocol.framing import FrameReceiver

# Slices at least this large are sent with sendfile; smaller ones are read and written
# with the rest of the response (one writev), as the extra syscalls cost more than
# copying a few KiB.
SENDFILE_MIN_BYTES = 32 * 1024


class FileRegion(Protocol):
    """A response chunk that is bytes of an open file (a fetch's records:
    ``broker.replication.fetch_reads.SliceRecords``). Told from a buffer by its
    ``file_region`` attribute: an isinstance check against a runtime-checkable
    Protocol walks the protocol's members, ~20 us a chunk on every response."""

    @property
    def wire_size(self) -> int: ...

    def tobytes(self) -> bytes: ...

    def file_region(self) -> tuple[int, int, int]:
        """(fd, position, size): the bytes to send, from the file's page cache."""
        ...


Chunk = Any     # a buffer (bytes, bytearray, memoryview, ...) or a FileRegion


def zero_copy_for(setting: str, peer_ip: str) -> bool:
    """Whether a connection from ``peer_ip`` gets file slices by sendfile, under
    ``fetch.zero.copy`` = ``setting`` (auto / true / false; module docstring): auto
    sends by sendfile unless the peer is a loopback address (127.0.0.0/8, ::1,
    ::ffff:127.x.x.x). A peer that is no IP address (a Unix socket: "?") counts as
    remote."""
    if setting != "auto":
        return setting == "true"
    try:
        address = ipaddress.ip_address(peer_ip.split("%", 1)[0])
    except ValueError:
        return True
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_loopback


class FrameStream(asyncio.BufferedProtocol):
    """One connection's protocol: frames in (``read_frames``), responses out
    (``writelines`` / ``drain`` / ``close``, as ``asyncio.StreamWriter``)."""

    def __init__(self, max_frame_size: int, *, zero_copy: bool = True) -> None:
        self.frames = FrameReceiver(max_frame_size)
        # file slices by sendfile (else read and written as bytes): ``zero_copy_for``
        self.zero_copy = zero_copy
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
        self._socket_fd = -1           # the transport's socket; -1: none (never zero-copy)
        # a dup of it, ours while a response is written with sendfile: sendfile writes
        # to it and the loop watches it for room (the transport owns the original in the
        # loop and may close it, and its number be reused, while a response waits);
        # closed when that response is written (no fd held per idle connection)
        self._dup_fd = -1
        self._writable_waiter: asyncio.Future[None] | None = None
        self.zero_copy_bytes = 0       # bytes sent with sendfile (tests, benchmarks)

    # -- asyncio.BufferedProtocol ---------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        self._socket_fd = sock.fileno() if sock is not None else -1
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
        waiter = self._writable_waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(ConnectionResetError("connection lost"))
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

    async def write_response(self, chunks: list[Chunk]) -> None:
        """Write one response's chunks in order; file slices of SENDFILE_MIN_BYTES or
        more with sendfile while the transport holds nothing (module docstring),
        waiting for the socket to take the rest of a slice before what follows it.
        The caller writes nothing else meanwhile (responses go one after the other).
        Raises ConnectionError / OSError when the socket fails or the peer goes."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        plain: list[Any] = []
        try:
            for chunk in chunks:
                region = getattr(chunk, "file_region", None)
                if region is None:                     # a buffer
                    plain.append(chunk)
                    continue
                fd, position, size = region()
                if size < SENDFILE_MIN_BYTES or self._socket_fd < 0 or not self.zero_copy:
                    plain.append(chunk.tobytes())
                    continue
                if plain:
                    transport.writelines(plain)
                    plain = []
                if transport.get_write_buffer_size():
                    plain.append(chunk.tobytes())      # bytes queued before it: in order
                    continue
                sent, ended = self._sendfile(fd, position, size)
                while sent < size and not ended:
                    await self._socket_writable()
                    if transport.is_closing():
                        raise ConnectionResetError("connection closed during a response")
                    more, ended = self._sendfile(fd, position + sent, size - sent)
                    sent += more
                if sent < size:        # the file ends before the slice: as pread would say
                    plain.append(os.pread(fd, size - sent, position + sent))
                self.zero_copy_bytes += sent
            if plain:
                transport.writelines(plain)
        finally:
            self._close_dup_fd()

    def _sendfile(self, fd: int, position: int, size: int) -> tuple[int, bool]:
        """(bytes of the file's [position, position + size) the socket took now,
        whether the file ended before them)."""
        if self._dup_fd < 0:
            self._dup_fd = os.dup(self._socket_fd)
        sent = 0
        while sent < size:
            try:
                n = os.sendfile(self._dup_fd, fd, position + sent, size - sent)
            except BlockingIOError:
                return sent, False
            if n == 0:
                return sent, True
            sent += n
        return sent, False

    async def _socket_writable(self) -> None:
        """Until the socket can take more bytes (watched through ``_dup_fd``)."""
        if self._lost:
            raise ConnectionResetError("connection lost")
        loop = asyncio.get_running_loop()
        waiter = self._writable_waiter = loop.create_future()
        poll_fd = self._dup_fd
        loop.add_writer(poll_fd, _wake, waiter)
        try:
            await waiter
        finally:
            loop.remove_writer(poll_fd)
            self._writable_waiter = None

    def _close_dup_fd(self) -> None:
        if self._dup_fd >= 0:
            os.close(self._dup_fd)
            self._dup_fd = -1

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


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
