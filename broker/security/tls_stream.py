"""TLS over an accepted plaintext stream, with ``ssl.SSLObject`` and memory BIOs.

Why not the loop's TLS: uvloop's ``start_tls`` on a server-side stream never
completes the handshake (seen here with uvloop 0.2x: the handshake times out
while the client waits), and a TLS server made with ``start_server(ssl=...)``
drops failed handshakes silently, while Kafka logs each one. Driving OpenSSL
through memory BIOs works on any loop and leaves every failure to us.

``TlsStream`` offers the part of StreamReader/StreamWriter the connection uses:
``read``, ``writelines``, ``drain``, ``close``, ``get_extra_info`` (``peercert``
is the verified client certificate, ``ssl_object`` the SSLObject).

Data flow: ciphertext read from the socket goes into ``incoming``; ``read``
pulls plaintext out of the SSLObject (several TLS records per socket read);
``writelines`` encrypts in pieces of at most 256 KiB (a fetch response of many
MiB is never joined into one buffer: that cost three full-size copies and page
faults) and hands each piece's ciphertext to the socket writer at once. The
peer's close_notify ends the stream like EOF, so the connection closes and
``close`` answers with ours (a TLS client waits for it in its close). ``handshake`` pumps both until OpenSSL is done, or raises
``ssl.SSLError`` / ``ConnectionError`` / ``TimeoutError``.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from typing import Any

_READ = 64 * 1024
_PIECE = 256 * 1024       # plaintext encrypted per SSLObject.write


class TlsStream:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 context: ssl.SSLContext) -> None:
        self._reader = reader
        self._writer = writer
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self.ssl_object = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._eof = False            # the socket reached EOF
        self._peer_closed = False    # the peer sent close_notify

    async def handshake(self, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            while True:
                try:
                    self.ssl_object.do_handshake()
                    self._flush()
                    return
                except ssl.SSLWantReadError:
                    self._flush()
                    await self._fill()
                    if self._eof:
                        raise ConnectionResetError("the client closed the connection "
                                                   "during the TLS handshake")

    async def _fill(self) -> None:
        data = await self._reader.read(_READ)
        if data:
            self._incoming.write(data)
        else:
            self._eof = True
            self._incoming.write_eof()

    def _flush(self) -> None:
        data = self._outgoing.read()
        if data:
            self._writer.write(data)

    # -- the StreamReader part ---------------------------------------------------------

    async def read(self, n: int) -> bytes:
        """Up to ``n`` plaintext bytes; b"" at the end of the stream."""
        while True:
            chunks: list[bytes] = []
            size = 0
            try:
                while size < n:
                    chunk = self.ssl_object.read(n - size)
                    if not chunk:          # close_notify from the peer
                        self._peer_closed = True
                        break
                    chunks.append(chunk)
                    size += len(chunk)
            except ssl.SSLWantReadError:
                pass
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                self._peer_closed = True
            self._flush()                  # TLS 1.3 tickets, key updates, alerts
            if chunks:
                return b"".join(chunks)
            if self._eof or self._peer_closed:
                return b""
            await self._fill()

    # -- the StreamWriter part ---------------------------------------------------------

    def writelines(self, chunks: Iterable[Any]) -> None:
        pending = bytearray()        # small chunks coalesced up to one piece
        for chunk in chunks:
            view = memoryview(chunk).cast("B")
            if len(pending) + len(view) <= _PIECE:
                pending += view
                continue
            if pending:
                self._encrypt(pending)
                pending = bytearray()
            for off in range(0, len(view), _PIECE):
                self._encrypt(view[off:off + _PIECE])
        if pending:
            self._encrypt(pending)

    def _encrypt(self, data: Any) -> None:
        self.ssl_object.write(data)
        self._flush()

    async def drain(self) -> None:
        await self._writer.drain()

    def close(self) -> None:
        if not self._writer.is_closing():
            try:
                self.ssl_object.unwrap()       # queue our close_notify
            except ssl.SSLError:
                pass
            self._flush()
        self._writer.close()

    def is_closing(self) -> bool:
        return self._writer.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "peercert":
            return self.ssl_object.getpeercert()
        if name == "ssl_object":
            return self.ssl_object
        if name == "cipher":
            return self.ssl_object.cipher()
        return self._writer.get_extra_info(name, default)
