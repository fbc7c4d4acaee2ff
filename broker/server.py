"""The asyncio listener: accept connections under the connection quotas, run each
as a task, stop cleanly.

Accepting, one connection at a time per listening socket (Kafka's Acceptor):

1. ``sock_accept`` takes the next connection from the listen backlog.
2. Its creation is recorded against ``max.connection.creation.rate``; above the
   rate the loop sleeps the throttle time (KIP-612) before going on.
3. While the broker has ``max.connections`` open (and this is not the protected
   inter-broker listener) the loop waits for one to close: the connections
   behind it stay in the kernel's listen backlog (``LISTEN_BACKLOG``), and once
   that is full the kernel drops their SYNs, which clients retry. Nothing
   already open is disturbed.
4. A connection from an address at its ``max.connections.per.ip`` (or its
   override) is closed at once, with Kafka's log line.
5. Otherwise it is counted and runs as a task (``Connection.run``); on the
   protected listener above ``max.connections`` the least recently active
   connection of another listener is closed (``NetworkLimits.close_excess``).

The quotas, request memory pool and request queue are shared by every listener
of one broker: the broker makes one ``NetworkLimits`` and gives it to each of its
servers (a server given none makes its own: unit tests with one listener).

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
import socket
import ssl
from typing import Any

from broker.context import BrokerServices
from broker.listeners import Endpoint
from broker.network.connection import Connection
from broker.network.connection_quotas import UNLIMITED
from broker.network.frame_stream import FrameStream, zero_copy_for
from broker.network.limits import NetworkLimits
from broker.security.listeners import PLAINTEXT_LISTENER, ListenerSecurity
from broker.security.principal import NoMatchingRule
from broker.security.tls_stream import TlsStream

log = logging.getLogger(__name__)

# the listen(2) backlog: connections the kernel completes while the accept loop
# waits (Kafka's socket.listen.backlog.size is 50; more here so that a burst of
# clients connecting at once is not slowed by SYN retries)
LISTEN_BACKLOG = 1024
# asyncio's StreamReader limit: reading pauses above twice this much unread
STREAM_LIMIT = 64 * 1024


class KafkaServer:
    """Accepts on one endpoint; every connection runs ``Connection.run``."""

    def __init__(self, broker: BrokerServices, endpoint: Endpoint,
                 security: ListenerSecurity = PLAINTEXT_LISTENER,
                 limits: NetworkLimits | None = None) -> None:
        self.broker = broker
        self.endpoint = endpoint
        self.security = security
        self.limits = limits if limits is not None else NetworkLimits.from_config(broker.config)
        self._sockets: list[socket.socket] = []
        self._accepting: list[asyncio.Task[None]] = []
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        return int(self._sockets[0].getsockname()[1])

    async def start(self) -> None:
        self.limits.quotas.add_listener(self.endpoint.name,
                                        _listener_max_connections(self.broker.config,
                                                                  self.endpoint.name))
        try:
            self._sockets = _listen(self.endpoint.host, self.endpoint.port)
        except BaseException:
            self._release_limits()
            raise
        loop = asyncio.get_running_loop()
        self._accepting = [loop.create_task(self._accept_loop(s)) for s in self._sockets]
        log.info("listening on %s://%s:%d (%s)", self.endpoint.name,
                 self.endpoint.host or "0.0.0.0", self.port, self.security.protocol)

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        quotas = self.limits.quotas
        listener = self.endpoint.name
        while True:
            try:
                conn_sock, address = await loop.sock_accept(sock)
            except asyncio.CancelledError:
                raise
            except OSError as e:      # EMFILE and friends: wait, do not spin
                log.warning("listener %s: accept failed: %s", listener, e)
                await asyncio.sleep(0.1)
                continue
            ip = address[0] if isinstance(address, tuple) else "?"
            try:
                delay = quotas.record_connection(listener, loop.time())
                if delay > 0:
                    await asyncio.sleep(delay)            # 2. creation rate
                if not quotas.slot_available(listener):
                    await quotas.wait_for_slot(listener)  # 3. max.connections
                limit = quotas.at_ip_limit(ip)
            except BaseException:
                conn_sock.close()
                raise
            if limit is not None:                         # 4. per address
                log.info("Rejected connection from %s, address already has the "
                         "configured maximum of %d connections.", ip, limit)
                conn_sock.close()
                continue
            quotas.inc(listener, ip)
            task = loop.create_task(self._serve(conn_sock, ip))
            self._tasks.add(task)
            if quotas.is_protected(listener):
                self.limits.close_excess()

    async def _serve(self, conn_sock: socket.socket, ip: str) -> None:
        task = asyncio.current_task()
        assert task is not None
        limits = self.limits
        writer: asyncio.StreamWriter | FrameStream | None = None
        try:
            loop = asyncio.get_running_loop()
            if conn_sock.family in (socket.AF_INET, socket.AF_INET6):
                conn_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            stream: Any = None
            if self.security.uses_tls:
                reader = asyncio.StreamReader(limit=STREAM_LIMIT)
                protocol = asyncio.StreamReaderProtocol(reader)
                try:
                    transport, _ = await loop.connect_accepted_socket(lambda: protocol,
                                                                      conn_sock)
                except OSError as e:
                    log.debug("connection from %s: %s", ip, e)
                    conn_sock.close()
                    return
                writer = asyncio.StreamWriter(transport, protocol, reader, loop)
                stream = await self._start_tls(reader, writer)
                if stream is None:
                    return
            else:   # plaintext: frames received in place (broker/network/frame_stream.py)
                stream = FrameStream(self.broker.config.socket_request_max_bytes,
                                     zero_copy=zero_copy_for(
                                         self.broker.config.fetch_zero_copy, ip))
                try:
                    await loop.connect_accepted_socket(lambda: stream, conn_sock)
                except OSError as e:
                    log.debug("connection from %s: %s", ip, e)
                    conn_sock.close()
                    return
                writer = stream
            try:
                conn = Connection(self.broker, stream, stream, self.security, limits)
            except NoMatchingRule as e:
                log.info("Failed authentication with /%s (listener=%s) (%s)",
                         _peer(writer), self.endpoint.name, e)
                writer.close()
                return
            await conn.run()
        except asyncio.CancelledError:
            pass               # stop() cancels connections; end the task normally
        except Exception:      # nothing may escape a connection's task unlogged
            log.exception("connection from %s on listener %s failed", ip, self.endpoint.name)
        finally:
            if writer is not None:
                writer.close()
            limits.quotas.dec(self.endpoint.name, ip)
            self._tasks.discard(task)

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

    def serves_current_task(self) -> bool:
        """Whether the running task serves one of this listener's connections (a
        request that closes its own listener must not await its own cancellation)."""
        return asyncio.current_task() in self._tasks

    async def stop(self) -> None:
        for task in self._accepting:
            task.cancel()
        if self._accepting:
            await asyncio.gather(*self._accepting, return_exceptions=True)
        self._accepting = []
        for s in self._sockets:
            s.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._release_limits()

    def _release_limits(self) -> None:
        self.limits.quotas.remove_listener(self.endpoint.name)


def _listener_max_connections(config: Any, listener: str) -> int:
    """``listener.name.<listener>.max.connections`` when set, else no limit of its own."""
    key = f"listener.name.{listener.lower()}.max.connections"
    if key not in config.listener_overrides:
        return UNLIMITED
    return int(config.for_listener(listener, "max.connections"))


def _listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for ``host`` ("" = every interface), non-blocking."""
    if not host:
        if socket.has_dualstack_ipv6():
            try:
                return [_bound(socket.create_server(("::", port), family=socket.AF_INET6,
                                                    dualstack_ipv6=True, reuse_port=False,
                                                    backlog=LISTEN_BACKLOG))]
            except OSError:
                pass
        return [_bound(socket.create_server(("0.0.0.0", port), backlog=LISTEN_BACKLOG))]
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    out: list[socket.socket] = []
    try:
        for family, _, _, _, addr in dict.fromkeys((i[0], i[1], i[2], i[3], i[4])
                                                   for i in infos):
            out.append(_bound(socket.create_server(addr[:2], family=family,
                                                   backlog=LISTEN_BACKLOG)))
            if port == 0:     # one socket: every address must share the port taken
                break
    except BaseException:
        for s in out:
            s.close()
        raise
    return out


def _bound(sock: socket.socket) -> socket.socket:
    sock.setblocking(False)
    return sock


def _peer(writer: asyncio.StreamWriter | FrameStream) -> str:
    peer = writer.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if peer else "?"
