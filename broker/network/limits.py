"""What every listener of one broker shares: the connection quotas, the request
memory pool and queue, and the live connections.

One ``NetworkLimits`` per broker (``broker.server`` makes it with the first
listener and drops it with the last). The live connections are kept per
listener so that, when the protected inter-broker listener takes the broker
above ``max.connections``, the least recently active connection of another
listener can be closed (Kafka's ``Processor.closeExcessConnections``: the
channel with the oldest activity; here the last read). Finding it walks the
connections, which happens only in that rare case.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from broker.config import ConfigError
from broker.listeners import parse_listeners
from broker.network.connection_quotas import ConnectionQuotas
from broker.network.request_memory import RequestMemoryPool, RequestQueue

if TYPE_CHECKING:
    from broker.config import BrokerConfig

log = logging.getLogger(__name__)


class Closable(Protocol):
    @property
    def listener(self) -> str: ...

    @property
    def peer(self) -> str: ...

    @property
    def last_active(self) -> float: ...

    def close(self) -> None: ...


class NetworkLimits:
    def __init__(self, quotas: ConnectionQuotas, memory: RequestMemoryPool,
                 queue: RequestQueue) -> None:
        self.quotas = quotas
        self.memory = memory
        self.queue = queue
        self.live: dict[str, set[Closable]] = {}      # listener -> open connections

    @classmethod
    def from_config(cls, config: BrokerConfig) -> NetworkLimits:
        return cls(ConnectionQuotas.from_config(config, protected_listener(config)),
                   RequestMemoryPool(config.queued_max_request_bytes),
                   RequestQueue(config.queued_max_requests))

    @classmethod
    def unlimited(cls) -> NetworkLimits:
        return cls(ConnectionQuotas(), RequestMemoryPool(-1), RequestQueue(2**62))

    def opened(self, conn: Closable) -> None:
        self.live.setdefault(conn.listener, set()).add(conn)

    def closed(self, conn: Closable) -> None:
        self.live.get(conn.listener, set()).discard(conn)

    def close_excess(self) -> None:
        """Above max.connections, close the least recently active connection not
        on the protected listener (one: each protected accept adds one). It leaves
        ``live`` at once, so it is not picked twice; its task counts it down."""
        quotas = self.quotas
        if quotas.excess():
            victims = [c for name, conns in self.live.items()
                       if not quotas.is_protected(name) for c in conns]
            if not victims:
                return
            lru = min(victims, key=lambda c: c.last_active)
            log.info("closing connection %s on listener %s: the broker is above "
                     "max.connections=%d after an inter-broker connection "
                     "(least recently active)", lru.peer, lru.listener,
                     quotas.max_connections)
            self.closed(lru)
            lru.close()


def protected_listener(config: BrokerConfig) -> str | None:
    """The inter-broker listener's name (when the broker has more than one)."""
    from broker.security.listeners import inter_broker_listener
    try:
        endpoints = parse_listeners("listeners", config.listeners)
        if len(endpoints) < 2:
            return None
        advertised = parse_listeners("advertised.listeners",
                                     config.advertised_listeners or config.listeners)
        return inter_broker_listener(config, advertised)
    except ConfigError:
        return None
