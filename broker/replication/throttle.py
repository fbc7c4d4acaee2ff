"""Replication quotas (KIP-73, Kafka's ``ReplicationQuotaManager``): a reassignment's
catch-up traffic held to a byte rate so that it cannot starve clients.

Two quotas per broker, one per side of a replica fetch:

* leader side: the bytes this broker sends to followers for throttled partitions,
  bound by the dynamic broker config ``leader.replication.throttled.rate``;
* follower side: the bytes this broker's fetchers append for throttled partitions,
  bound by ``follower.replication.throttled.rate``.

Both bounds default to Long.MAX_VALUE bytes/s: no throttle.

Which partitions are throttled (topic configs, parsed as Kafka's
``TopicConfigHandler.parseThrottledPartitions``): ``leader.replication.throttled.replicas``
for the leader side, ``follower.replication.throttled.replicas`` for the follower
side; ``*`` is every partition of the topic, else a list of ``partition:broker``
of which only the entries naming *this* broker count. So on the leader side a
partition is throttled when this broker's (leader) replica is listed, whichever
follower fetches it; on the follower side when this broker's (follower) replica is.

The rate is Kafka's ``SimpleRate`` over ``replication.quota.window.num`` samples
of ``replication.quota.window.size.seconds``: bytes are added to the current sample
(a new one starts once the current one is a window old; samples older than
num x size are dropped) and the rate is the sum of the samples over the time since
the oldest one started, at least one window. The quota is exceeded while that rate
is above the bound (equal is fine). Recording never refuses: bytes already read
are counted, and the *next* reads are held back.

The rules that use it (what Kafka 3.9 does):

* leader (``ReplicaManager.shouldLeaderThrottle``): a follower fetch reads no
  records from a partition that is throttled, whose fetching replica is not in
  the ISR, while the quota is exceeded (the partition is still answered: HW, log
  start, errors). Such a partition adds nothing towards the fetch's min_bytes,
  so the fetch waits its max_wait rather than spin. After the response is built
  the bytes of every throttled partition in it are recorded (in-sync ones too).
* follower (``ReplicaFetcherThread.shouldFollowerThrottle``): a partition that is
  throttled, not in sync by our own measure (our log end is below the leader's
  high watermark of the last answer), while the quota is exceeded, is left out of
  the next Fetch until the rate may be back under the bound (at most the fetch
  back-off); the bytes appended for throttled partitions are recorded.

Replicas in the ISR are never held back: a throttle slows a reassignment, never
the replication that acks=all producers wait for.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.replication.partition import Partition

TopicPartition = tuple[str, int]
UNLIMITED = (1 << 63) - 1          # Long.MAX_VALUE: the default rate, no throttle
LEADER, FOLLOWER = "leader", "follower"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
ALL_PARTITIONS = None              # a parsed "*"


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


def parse_throttled_replicas(text: str, broker_id: int) -> frozenset[int] | None:
    """The partitions of a topic whose replica on ``broker_id`` the config value
    throttles: None for ``*`` (all), else the set (empty for ""). Entries that do
    not parse are skipped (the topic config was validated when it was written)."""
    text = text.strip()
    if text == "*":
        return ALL_PARTITIONS
    out = set()
    for item in text.split(","):
        partition, sep, broker = item.strip().partition(":")
        try:
            if sep and int(broker) == broker_id:
                out.add(int(partition))
        except ValueError:
            continue
    return frozenset(out)


class WindowedRate:
    """Bytes per second over the last ``samples`` windows of ``window_ms`` (SimpleRate)."""

    def __init__(self, samples: int = 11, window_ms: int = 1000) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._samples: deque[list[int]] = deque()     # [start ms, bytes], oldest first

    def _purge(self, now: int) -> None:
        horizon = self.samples * self.window_ms
        while self._samples and now - self._samples[0][0] >= horizon:
            self._samples.popleft()

    def record(self, n: int, now: int) -> None:
        self._purge(now)
        if not self._samples or now - self._samples[-1][0] >= self.window_ms:
            self._samples.append([now, 0])
            if len(self._samples) > self.samples:
                self._samples.popleft()
        self._samples[-1][1] += n

    def total(self, now: int) -> int:
        self._purge(now)
        return sum(v for _, v in self._samples)

    def elapsed_ms(self, now: int) -> int:
        """The window the rate is taken over: since the oldest sample began, at least
        one window."""
        self._purge(now)
        oldest = self._samples[0][0] if self._samples else now
        return max(now - oldest, self.window_ms)

    def rate(self, now: int) -> float:
        """Bytes per second."""
        return self.total(now) * 1000 / self.elapsed_ms(now)

    def ms_until_at_most(self, bound: float, now: int) -> int:
        """How long until the rate is back at or under ``bound`` if nothing more is
        recorded: when the elapsed time has grown enough, or the oldest sample has
        expired, whichever comes first (0 when it already is)."""
        total = self.total(now)
        if total * 1000 <= bound * self.elapsed_ms(now):
            return 0
        if bound <= 0:
            grow = math.inf
        else:
            oldest = self._samples[0][0]
            grow = total * 1000 / bound - (now - oldest)
        expire = self._samples[0][0] + self.samples * self.window_ms - now
        return max(1, math.ceil(min(grow, expire)))


class ReplicationQuota:
    """One side's quota: its bound, its measured rate and its throttled replicas
    (read from the topic configs through ``topic_configs(topic)``)."""

    def __init__(self, side: str, broker_id: int,
                 topic_configs: Callable[[str], Mapping[str, str]], *, samples: int = 11,
                 window_seconds: int = 1, clock: Callable[[], int] = monotonic_ms) -> None:
        if side not in (LEADER, FOLLOWER):
            raise ValueError(f"side must be {LEADER!r} or {FOLLOWER!r}, not {side!r}")
        self.side = side
        self.broker_id = broker_id
        self.topic_configs = topic_configs
        self.clock = clock
        self.replicas_key = LEADER_REPLICAS if side == LEADER else FOLLOWER_REPLICAS
        self.bound: int = UNLIMITED
        self.measured = WindowedRate(samples, window_seconds * 1000)
        self._parsed: dict[str, frozenset[int] | None] = {}   # config text -> partitions

    def __repr__(self) -> str:
        bound = "unlimited" if self.unlimited else f"{self.bound} B/s"
        return f"ReplicationQuota({self.side}, {bound}, {self.rate():.0f} B/s)"

    @property
    def unlimited(self) -> bool:
        return self.bound >= UNLIMITED

    def update_quota(self, bytes_per_second: int) -> None:
        self.bound = bytes_per_second

    def record(self, n: int) -> None:
        if n > 0:
            self.measured.record(n, self.clock())

    def rate(self) -> float:
        return self.measured.rate(self.clock())

    def is_exceeded(self) -> bool:
        return not self.unlimited and self.rate() > self.bound

    def ms_until_within(self) -> int:
        if self.unlimited:
            return 0
        return self.measured.ms_until_at_most(self.bound, self.clock())

    def is_throttled(self, tp: TopicPartition) -> bool:
        """Whether this side throttles ``tp`` (its topic's *.replication.throttled.replicas
        lists our replica of it, or is ``*``)."""
        text = self.topic_configs(tp[0]).get(self.replicas_key, "")
        if not text:
            return False
        if text in self._parsed:
            parsed = self._parsed[text]
        else:
            if len(self._parsed) > 1000:
                self._parsed.clear()
            parsed = self._parsed[text] = parse_throttled_replicas(text, self.broker_id)
        return parsed is None or tp[1] in parsed     # None: ALL_PARTITIONS ("*")


def leader_throttle(quota: ReplicationQuota | None, replica_id: int
                    ) -> Callable[[Partition], bool] | None:
    """For a fetch by ``replica_id``: a test of whether a partition's records are to
    be withheld now (the leader rule above), or None when nothing can be (a
    consumer's fetch, or no bound)."""
    if quota is None or replica_id < 0 or quota.unlimited:
        return None

    def throttled(p: Partition) -> bool:
        return (replica_id not in p.isr and quota.is_throttled(p.tp)
                and quota.is_exceeded())
    return throttled


def throttled_bytes(quota: ReplicationQuota | None, sizes: Mapping[TopicPartition, int]) -> int:
    """The bytes of the throttled partitions among ``sizes`` (what a side records)."""
    if quota is None:
        return 0
    return sum(n for tp, n in sizes.items() if n and quota.is_throttled(tp))
