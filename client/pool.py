"""Connections to a cluster's brokers: bootstrap lists and one connection per broker.

* ``parse_servers``: ``host:port,host:port`` -> [(host, port)].
* ``BrokerPool``: one ``KafkaConnection`` per (host, port), opened on first use and
  reopened after it drops. Its ``send(broker_id, host, port, header, body)`` has the
  shape of ``controller.BrokerTransport.send`` (the controller's channel uses it).
* ``bootstrap``: a handshaken connection to the first reachable server of a list.

Both take a ``client.security.ClientSecurity`` (TLS, SASL) used for every
connection they open; None is PLAINTEXT.
"""

from __future__ import annotations

import asyncio

from client.connection import DEFAULT_CLIENT_ID, DEFAULT_TIMEOUT, KafkaConnection
from client.errors import AuthenticationFailed, KafkaConnectionError
from client.security import ClientSecurity
from protocol.headers import RequestHeader
from protocol.schema import Struct


def parse_servers(servers: str | list[str] | tuple[str, ...]) -> list[tuple[str, int]]:
    """'h1:9092,[::1]:9093' (or a list of such) -> [(host, port), ...]."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out: list[tuple[str, int]] = []
    for item in (s.strip() for s in items):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"bad server address {item!r}: expected HOST:PORT")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("no bootstrap server given")
    return out


class BrokerPool:
    """One KafkaConnection per (host, port); reconnects when one has dropped.

    A request that fails because its connection dropped is not resent (it may
    have been applied); the next call opens a fresh connection."""

    def __init__(self, *, client_id: str | None = DEFAULT_CLIENT_ID,
                 timeout: float = DEFAULT_TIMEOUT,
                 security: ClientSecurity | None = None) -> None:
        self.client_id = client_id
        self.timeout = timeout
        self.security = security
        self._conns: dict[tuple[str, int], KafkaConnection] = {}
        self._locks: dict[tuple[str, int], asyncio.Lock] = {}

    async def get(self, host: str, port: int) -> KafkaConnection:
        key = (host, port)
        conn = self._conns.get(key)
        if conn is not None and not conn.closed:
            return conn
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:  # one connect at a time per address
            conn = self._conns.get(key)
            if conn is None or conn.closed:
                conn = await KafkaConnection.open(host, port, client_id=self.client_id,
                                                  timeout=self.timeout, security=self.security)
                self._conns[key] = conn
            return conn

    async def request(self, host: str, port: int, api_key: int, body: Struct,
                      version: int | None = None, *, expect_response: bool = True,
                      timeout: float | None = None) -> Struct | None:
        conn = await self.get(host, port)
        return await conn.request(api_key, body, version, expect_response=expect_response,
                                  timeout=timeout)

    async def send(self, broker_id: int, host: str, port: int, header: RequestHeader,
                   body: Struct) -> Struct:
        """``controller.BrokerTransport.send``: api key and version from ``header``."""
        conn = await self.get(host, port)
        resp = await conn.request_with_header(header, body)
        assert resp is not None
        return resp

    async def close_connection(self, host: str, port: int) -> None:
        conn = self._conns.pop((host, port), None)
        if conn is not None:
            await conn.close()

    async def close(self) -> None:
        conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            await conn.close()


async def bootstrap(servers: str | list[str], *, client_id: str | None = DEFAULT_CLIENT_ID,
                    timeout: float = DEFAULT_TIMEOUT, pool: BrokerPool | None = None,
                    security: ClientSecurity | None = None) -> KafkaConnection:
    """A handshaken connection to the first reachable server in ``servers`` (through
    ``pool`` when given: then the pool's security applies, not ``security``).
    AuthenticationFailed is raised at once: the next server would refuse us too."""
    errors: list[str] = []
    for host, port in parse_servers(servers):
        try:
            if pool is not None:
                return await pool.get(host, port)
            return await KafkaConnection.open(host, port, client_id=client_id, timeout=timeout,
                                              security=security)
        except AuthenticationFailed:
            raise
        except KafkaConnectionError as e:
            errors.append(str(e))
    raise KafkaConnectionError("no bootstrap server reachable: " + "; ".join(errors))
