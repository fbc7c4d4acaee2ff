"""MetadataCache: what this broker knows of the cluster, as the controller told it.

Fed only by UpdateMetadata (live brokers, every partition's leader/ISR/replicas,
topic ids) and, for leadership of its own partitions, by LeaderAndIsr. Read by
the Metadata, FindCoordinator and DescribeCluster handlers. A partition whose
leader is -2 (LeaderDuringDelete) is being deleted and leaves the cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

LEADER_DURING_DELETE = -2
_SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


@dataclass(frozen=True, slots=True)
class PartitionMeta:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    zk_version: int = 0


@dataclass(frozen=True, slots=True)
class BrokerMeta:
    id: int
    host: str
    port: int
    rack: str | None = None
    # listener name -> (host, port)
    endpoints: dict[str, tuple[str, int]] = field(default_factory=dict, compare=False)


@dataclass
class MetadataCache:
    controller_id: int | None = None
    controller_epoch: int = -1          # newest controller epoch seen (fencing)
    listener: str = "PLAINTEXT"         # the listener whose endpoints clients get
    _brokers: dict[int, BrokerMeta] = field(default_factory=dict)
    _topics: dict[str, dict[int, PartitionMeta]] = field(default_factory=dict)
    _topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    # the reverse of _topic_ids (one writer: _set_topic_id / _drop_topic_id): a Fetch
    # v13+ names its topics by id, and every consumer fetch resolves them
    _topic_names: dict[uuid.UUID, str] = field(default_factory=dict)
    # set by the first UpdateMetadata: until then the cache knows no broker and no topic
    received: asyncio.Event = field(default_factory=asyncio.Event, compare=False)

    async def wait_received(self, timeout_s: float) -> bool:
        """Until a controller's first UpdateMetadata arrived (``timeout_s`` at most);
        -> whether it did. A restarted broker serves clients (its listeners open
        before it registers) before the controller has told it the cluster: a
        Metadata answer from the empty cache then lists no broker and no topic, and
        librdkafka forgets every broker it does not list, its group coordinator
        with them (confluentinc/librdkafka#5511: transactional calls and
        committed() hang), and fails the queued records of topics it does not list."""
        if not self.received.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.received.wait(), timeout_s)
        return self.received.is_set()

    # -- reads ---------------------------------------------------------------------------

    def topics(self) -> list[str]:
        return sorted(self._topics)

    def has_topic(self, name: str) -> bool:
        return name in self._topics

    def topic_id(self, name: str) -> uuid.UUID | None:
        return self._topic_ids.get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self._topic_names.get(topic_id)

    def _set_topic_id(self, name: str, topic_id: uuid.UUID) -> None:
        old = self._topic_ids.get(name)
        if old == topic_id:
            return
        if old is not None and self._topic_names.get(old) == name:
            del self._topic_names[old]          # the topic was created again
        self._topic_ids[name] = topic_id
        self._topic_names[topic_id] = name

    def _drop_topic_id(self, name: str) -> None:
        old = self._topic_ids.pop(name, None)
        if old is not None and self._topic_names.get(old) == name:
            del self._topic_names[old]

    def partitions(self, topic: str) -> list[PartitionMeta]:
        return [m for _, m in sorted(self._topics.get(topic, {}).items())]

    def partition_count(self, topic: str) -> int:
        """How many partitions the cache knows of ``topic`` (0: unknown)."""
        return len(self._topics.get(topic, ()))

    def partition(self, topic: str, partition: int) -> PartitionMeta | None:
        return self._topics.get(topic, {}).get(partition)

    def brokers(self) -> list[BrokerMeta]:
        return [b for _, b in sorted(self._brokers.items())]

    def broker(self, broker_id: int) -> BrokerMeta | None:
        return self._brokers.get(broker_id)

    def brokers_on(self, listener: str) -> list[BrokerMeta]:
        """Live brokers as a client on ``listener`` must see them: host and port of
        that listener; brokers without it are left out (as Kafka's MetadataCache)."""
        return [b if listener == self.listener else BrokerMeta(b.id, *b.endpoints[listener],
                                                               b.rack, b.endpoints)
                for b in self.brokers() if listener in b.endpoints or listener == self.listener]

    def broker_on(self, broker_id: int, listener: str) -> BrokerMeta | None:
        """One broker on ``listener`` (None: not live, or without that listener)."""
        b = self._brokers.get(broker_id)
        if b is None or listener == self.listener:
            return b
        if listener not in b.endpoints:
            return None
        return BrokerMeta(b.id, *b.endpoints[listener], b.rack, b.endpoints)

    # -- updates -------------------------------------------------------------------------

    def is_stale(self, controller_epoch: int) -> bool:
        """A request from a controller older than the newest seen must be dropped."""
        return controller_epoch < self.controller_epoch

    def note_controller(self, controller_id: int, controller_epoch: int) -> None:
        if controller_epoch >= self.controller_epoch:
            self.controller_epoch = controller_epoch
            self.controller_id = controller_id

    def update_metadata(self, request: Any, version: int) -> None:
        """Apply an UpdateMetadata request body of any version (0-8)."""
        self.note_controller(request.controller_id, request.controller_epoch)
        self._brokers = {b.id: self._broker(b, version) for b in request.live_brokers}
        if version >= 5:
            for ts in request.topic_states:
                tid = getattr(ts, "topic_id", None)
                if version >= 7 and tid is not None and tid.int != 0:
                    self._set_topic_id(ts.topic_name, tid)
                for ps in ts.partition_states:
                    self._put(ts.topic_name, ps)
        else:
            for ps in request.ungrouped_partition_states:
                self._put(ps.topic_name, ps)
        self.received.set()

    def _broker(self, b: Any, version: int) -> BrokerMeta:
        if version == 0:
            return BrokerMeta(b.id, b.v0_host, b.v0_port, None, {"PLAINTEXT": (b.v0_host, b.v0_port)})
        eps: dict[str, tuple[str, int]] = {}
        for e in b.endpoints:
            name = e.listener if version >= 3 and e.listener else _SECURITY_PROTOCOLS.get(
                e.security_protocol, "PLAINTEXT")
            eps[name] = (e.host, e.port)
        host, port = eps.get(self.listener) or next(iter(eps.values()), ("", -1))
        return BrokerMeta(b.id, host, port, b.rack if version >= 2 else None, eps)

    def _put(self, topic: str, ps: Any) -> None:
        if ps.leader == LEADER_DURING_DELETE:
            parts = self._topics.get(topic, {})
            parts.pop(ps.partition_index, None)
            if not parts:
                self._topics.pop(topic, None)
                self._drop_topic_id(topic)
            return
        self._topics.setdefault(topic, {})[ps.partition_index] = PartitionMeta(
            ps.partition_index, ps.leader, ps.leader_epoch, tuple(ps.replicas), tuple(ps.isr),
            tuple(getattr(ps, "offline_replicas", None) or ()), getattr(ps, "zk_version", 0))

    def apply_leader_and_isr(self, states: Iterable[Any]) -> None:
        """Leadership of this broker's partitions (PartitionState values), ahead of
        the UpdateMetadata that follows."""
        for s in states:
            cur = self._topics.get(s.topic, {}).get(s.partition)
            if cur is not None and cur.leader_epoch > s.leader_epoch:
                continue
            self._topics.setdefault(s.topic, {})[s.partition] = PartitionMeta(
                s.partition, s.leader, s.leader_epoch, tuple(s.replicas), tuple(s.isr),
                cur.offline_replicas if cur else (), s.partition_epoch)
            if s.topic_id is not None and s.topic_id.int != 0:
                self._set_topic_id(s.topic, s.topic_id)


def partition_count_or(metadata: MetadataCache, topic: str, configured: int) -> int:
    """How many partitions ``topic`` has once it exists, else ``configured``: the
    coordinators hash ids onto __consumer_offsets / __transaction_state with it."""
    return metadata.partition_count(topic) or int(configured)
