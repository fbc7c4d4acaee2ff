"""Kafka's ConnectionQuotas: how many connections, from where, and how fast.

Theory of operation (as Kafka 3.9's ``SocketServer`` / ``ConnectionQuotas``; the
listener's accept loop, ``broker.server``, asks this module before it takes a
connection on):

1. ``max.connections`` (broker-wide): while that many connections are open the
   accept loop stops accepting (``wait_for_slot``): new connections wait in the
   listen backlog, nothing is closed, and accepting resumes as soon as one
   closes. ``listener.name.<listener>.max.connections`` bounds one listener the
   same way (Kafka's ListenerConnectionQuota), the inter-broker one included.
   The inter-broker listener is *protected* when the broker has more
   than one listener (Kafka: ``protectedListener``): its connections are always
   taken on, and while the total is then above the limit the least recently
   active connection of another listener is closed (Kafka's
   ``Processor.closeExcessConnections``; ``broker.network.limits``).
2. ``max.connections.per.ip`` and ``max.connections.per.ip.overrides``
   (``host:count,host:count``): a new connection from an address that already
   has its maximum is closed at once, with Kafka's INFO line
   ``Rejected connection from <ip>, address already has the configured maximum
   of <n> connections.`` Host names in the overrides are resolved to addresses
   once, when the quotas are made (Kafka: ``InetAddress.getByName``).
3. ``max.connection.creation.rate`` (KIP-612, broker-wide, not counted on the
   protected listener): every connection taken on is recorded in a ``Rate``
   over ``quota.window.num`` samples of ``quota.window.size.seconds``; when the
   observed rate O is above the bound T the accept loop waits
   ``(O - T) / T * W`` (W: the rate's window), capped at one sample window
   (Kafka's ``QuotaUtils.boundedThrottleTime``), before it goes on. As in
   Kafka, a burst from a quiet start is let through up to T times the window
   (10 s by default) before the delays begin; after that the accept rate holds
   at T.

Times are the event loop's clock in seconds, passed in by the caller (a fake
clock in unit tests). No I/O here but the one-off name resolution.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections import deque
from typing import TYPE_CHECKING

from broker.config import ConfigError

if TYPE_CHECKING:
    from broker.config import BrokerConfig

log = logging.getLogger(__name__)

UNLIMITED = 2_147_483_647      # Kafka's Int.MaxValue default: no limit
OVERRIDES_KEY = "max.connections.per.ip.overrides"


def parse_overrides(value: str, key: str = OVERRIDES_KEY) -> dict[str, int]:
    """``host:count,host:count`` -> {host: count}. The count follows the last
    colon, so an IPv6 address may be given bare. A bad item names the key."""
    out: dict[str, int] = {}
    for item in (v.strip() for v in value.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        host = host.strip().strip("[]")
        if not sep or not host or not count.strip().isdigit():
            raise ConfigError(f"Invalid value {item!r} for configuration {key}: "
                              "expected host:count (count a non-negative integer)")
        out[host] = int(count)
    return out


def resolve_overrides(overrides: dict[str, int]) -> dict[str, int]:
    """{host: count} -> {ip address text: count}; names resolve to every address."""
    out: dict[str, int] = {}
    for host, count in overrides.items():
        try:
            out[str(ipaddress.ip_address(host))] = count
            continue
        except ValueError:
            pass
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as e:
            raise ConfigError(f"Invalid value {host!r} in configuration {OVERRIDES_KEY}: "
                              f"cannot resolve the host ({e})") from None
        for info in infos:
            out[str(ipaddress.ip_address(info[4][0]))] = count
    return out


class Rate:
    """Events per second over ``samples`` windows of ``window_s`` (Kafka's
    ``Rate`` over a ``SampledStat``): the count in the live samples divided by the
    time they span, never less than ``samples - 1`` full windows."""

    __slots__ = ("samples", "window_s", "_windows")

    def __init__(self, samples: int, window_s: float) -> None:
        self.samples = samples
        self.window_s = window_s
        self._windows: deque[list[float]] = deque()    # [start time, count], oldest first

    def record(self, value: float, now: float) -> None:
        windows = self._windows
        if not windows or now - windows[-1][0] >= self.window_s:
            windows.append([now, 0.0])
        windows[-1][1] += value
        self._purge(now)

    def _purge(self, now: float) -> None:
        windows = self._windows
        while len(windows) > self.samples or (
                windows and now - windows[0][0] >= self.samples * self.window_s):
            windows.popleft()

    def window_size(self, now: float) -> float:
        elapsed = now - self._windows[0][0] if self._windows else 0.0
        full = int(elapsed / self.window_s)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_s
        return elapsed

    def measure(self, now: float) -> float:
        self._purge(now)
        total = sum(w[1] for w in self._windows)
        return total / self.window_size(now)


class ConnectionQuotas:
    """Connection counts per listener and per address, and the limits on them."""

    def __init__(self, *, max_connections: int = UNLIMITED, max_per_ip: int = UNLIMITED,
                 per_ip_overrides: dict[str, int] | None = None,
                 max_creation_rate: int = UNLIMITED, window_num: int = 11,
                 window_s: float = 1.0, protected_listener: str | None = None) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.per_ip_overrides = dict(per_ip_overrides or {})
        self.max_creation_rate = max_creation_rate
        self.max_throttle_s = window_s
        self.protected_listener = protected_listener
        self.total = 0
        self.per_ip: dict[str, int] = {}
        self.per_listener: dict[str, int] = {}
        self.listener_max: dict[str, int] = {}       # listener.name.<l>.max.connections
        self.creation_rate = Rate(window_num, window_s)
        self._slot_waiters: deque[asyncio.Future[None]] = deque()

    @classmethod
    def from_config(cls, config: BrokerConfig, protected_listener: str | None) -> ConnectionQuotas:
        return cls(max_connections=config.max_connections,
                   max_per_ip=config.max_connections_per_ip,
                   per_ip_overrides=resolve_overrides(
                       parse_overrides(config.max_connections_per_ip_overrides)),
                   max_creation_rate=config.max_connection_creation_rate,
                   window_num=config.quota_window_num,
                   window_s=config.quota_window_size_seconds,
                   protected_listener=protected_listener)

    # -- listeners
    def add_listener(self, listener: str, max_connections: int = UNLIMITED) -> None:
        self.per_listener.setdefault(listener, 0)
        self.listener_max[listener] = max_connections

    def remove_listener(self, listener: str) -> None:
        self.per_listener.pop(listener, None)
        self.listener_max.pop(listener, None)
        self.wake_slot_waiters()        # a waiting accept loop of that listener ends

    def is_protected(self, listener: str) -> bool:
        """The inter-broker listener, when there is another one to protect it from."""
        return listener == self.protected_listener and len(self.per_listener) > 1

    # -- 3. creation rate
    def record_connection(self, listener: str, now: float) -> float:
        """Record one new connection; the seconds to wait before taking it on."""
        if self.max_creation_rate >= UNLIMITED or self.is_protected(listener):
            return 0.0
        rate = self.creation_rate
        rate.record(1.0, now)
        observed = rate.measure(now)
        bound = float(self.max_creation_rate)
        if observed <= bound:
            return 0.0
        if bound <= 0:
            return self.max_throttle_s
        return min((observed - bound) / bound * rate.window_size(now), self.max_throttle_s)

    # -- 1. max.connections
    def slot_available(self, listener: str) -> bool:
        if self.per_listener.get(listener, 0) >= self.listener_max.get(listener, UNLIMITED):
            return False
        return self.is_protected(listener) or self.total < self.max_connections

    async def wait_for_slot(self, listener: str) -> None:
        """Return once a connection on ``listener`` may be taken on (at once when
        one may); woken by ``dec``."""
        loop = asyncio.get_running_loop()
        while not self.slot_available(listener) and listener in self.per_listener:
            waiter: asyncio.Future[None] = loop.create_future()
            self._slot_waiters.append(waiter)
            try:
                await waiter
            finally:
                if not waiter.done():
                    waiter.cancel()

    def excess(self) -> bool:
        """More connections than max.connections (possible only through the
        protected listener): one on another listener should be closed."""
        return self.total > self.max_connections

    # -- 2. per address
    def limit_for(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.max_per_ip)

    def at_ip_limit(self, ip: str) -> int | None:
        """The limit when ``ip`` already has as many connections, else None."""
        limit = self.limit_for(ip)
        return limit if self.per_ip.get(ip, 0) >= limit else None

    # -- counting
    def inc(self, listener: str, ip: str) -> None:
        self.total += 1
        self.per_ip[ip] = self.per_ip.get(ip, 0) + 1
        if listener in self.per_listener:
            self.per_listener[listener] += 1

    def dec(self, listener: str, ip: str) -> None:
        self.total -= 1
        left = self.per_ip.get(ip, 1) - 1
        if left > 0:
            self.per_ip[ip] = left
        else:
            self.per_ip.pop(ip, None)
        if self.per_listener.get(listener, 0) > 0:
            self.per_listener[listener] -= 1
        if self._slot_waiters:
            self.wake_slot_waiters()

    def wake_slot_waiters(self) -> None:
        waiters, self._slot_waiters = self._slot_waiters, deque()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
