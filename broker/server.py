"""The asyncio listener: accept connections, run each as a task, stop cleanly.

An SSL / SASL_SSL listener accepts in plaintext and runs TLS itself on each
connection (``broker.security.tls_stream``: OpenSSL over memory BIOs, because
uvloop's server-side ``start_tls`` stalls), so a failed or stalled
handshake (a plaintext client on a TLS port, a client that stops half-way) is
caught here, logged with the peer, and closes only that connection. The
handshake must finish within ``request.timeout.ms``.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any

from broker.connection import Connection
from broker.listeners import Endpoint
from broker.security.listeners import PLAINTEXT_LISTENER, ListenerSecurity
from broker.security.principal import NoMatchingRule
from broker.security.tls_stream import TlsStream

log = logging.getLogger(__name__)


class KafkaServer:
    """Accepts on one endpoint; every connection runs ``Connection.run``."""

    def __init__(self, broker: Any, endpoint: Endpoint,
                 security: ListenerSecurity = PLAINTEXT_LISTENER) -> None:
        self.broker = broker
        self.endpoint = endpoint
        self.security = security
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        host = self.endpoint.host or None
        self._server = await asyncio.start_server(self._accept, host, self.endpoint.port,
                                                  reuse_address=True)
        log.info("listening on %s://%s:%d (%s)", self.endpoint.name,
                 self.endpoint.host or "0.0.0.0", self.port, self.security.protocol)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        try:
            stream: Any = None
            if self.security.uses_tls:
                stream = await self._start_tls(reader, writer)
                if stream is None:
                    return
            try:
                conn = Connection(self.broker, stream or reader, stream or writer,
                                  self.security)
            except NoMatchingRule as e:
                log.info("Failed authentication with /%s (listener=%s) (%s)",
                         _peer(writer), self.endpoint.name, e)
                writer.close()
                return
            await conn.run()
        except asyncio.CancelledError:
            # stop() cancels connections. End the task normally: asyncio's stream
            # callback would otherwise log the cancellation as an error (3.11).
            pass
        finally:
            self._tasks.discard(task)  # type: ignore[arg-type]

    async def _start_tls(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                         ) -> TlsStream | None:
        timeout = self.broker.config.request_timeout_ms / 1000
        assert self.security.tls is not None
        stream = TlsStream(reader, writer, self.security.tls)
        try:
            await stream.handshake(timeout)
            return stream
        except (ssl.SSLError, ConnectionError, OSError, TimeoutError) as e:
            reason = (f"not completed within {timeout:g} s (request.timeout.ms)"
                      if isinstance(e, TimeoutError) else str(e) or type(e).__name__)
            log.info("closing connection %s on listener %s: TLS handshake failed: %s",
                     _peer(writer), self.endpoint.name, reason)
            writer.close()
            return None

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()


def _peer(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if peer else "?"
