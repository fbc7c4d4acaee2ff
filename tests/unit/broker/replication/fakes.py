"""Fakes for the data-path tests: a manual clock/timer, a cluster store, a broker.

Storage is real (a LogManager in tmp_path); time and ZooKeeper are fakes.
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from broker.config import BrokerConfig
from broker.context import RequestContext
from broker.producer_ids import ProducerIdManager
from broker.replication.partition_state import PartitionState
from broker.replication.fetch_sessions import FetchSessionCache
from broker.replication.replica_manager import ReplicaManager
from protocol.codec import decode, encode
from protocol.headers import RequestHeader
from protocol.spec import api
from storage.config import LogConfig
from storage.log_manager import LogManager


class FakeClock:
    """Milliseconds that move only when told; also a purgatory Timer."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms
        self._timers: list[tuple[float, int, Callable[[], Any], list[bool]]] = []
        self._seq = itertools.count()

    def __call__(self) -> int:
        return self.now_ms

    def call_later(self, delay: float, callback: Callable[[], Any]) -> Any:
        cancelled = [False]
        heapq.heappush(self._timers, (self.now_ms + delay * 1000, next(self._seq), callback, cancelled))

        class Handle:
            def cancel(self) -> None:
                cancelled[0] = True
        return Handle()

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        while self._timers and self._timers[0][0] <= self.now_ms:
            _, _, callback, cancelled = heapq.heappop(self._timers)
            if not cancelled[0]:
                callback()

    @property
    def pending(self) -> int:
        return sum(1 for t in self._timers if not t[3][0])


class FakeCluster:
    def __init__(self) -> None:
        self.next_block = 0
        self.calls = 0

    async def allocate_producer_ids(self, broker_id: int, count: int) -> tuple[int, int]:
        self.calls += 1
        first = self.next_block
        self.next_block += count
        return first, first + count - 1

@dataclass
class PartitionMeta:
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    offline_replicas: list[int] = field(default_factory=list)


@dataclass
class BrokerMeta:
    id: int
    host: str
    port: int
    rack: str | None = None


class FakeMetadata:
    def __init__(self) -> None:
        self.parts: dict[str, list[PartitionMeta]] = {}
        self.ids: dict[str, uuid.UUID] = {}
        self.nodes: dict[int, BrokerMeta] = {}

    async def wait_received(self, timeout_s: float) -> bool:
        return True                     # the controller's UpdateMetadata came

    def topics(self) -> list[str]:
        return list(self.parts)

    def topic_id(self, name: str) -> uuid.UUID | None:
        return self.ids.get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, tid in self.ids.items() if tid == topic_id), None)

    def partitions(self, topic: str) -> list[PartitionMeta]:
        return self.parts.get(topic, [])

    def partition_count(self, topic: str) -> int:
        return len(self.parts.get(topic, []))

    def broker(self, broker_id: int) -> BrokerMeta | None:
        return self.nodes.get(broker_id)

    def brokers(self) -> list[BrokerMeta]:
        return list(self.nodes.values())

    def brokers_on(self, _listener: str) -> list[BrokerMeta]:
        return self.brokers()

    def broker_on(self, broker_id: int, _listener: str) -> BrokerMeta | None:
        return self.broker(broker_id)


class FakeConnection:
    """A client connection as handlers see it (broker.context.ConnectionInfo)."""
    peer = "127.0.0.1:50000"
    client_software: tuple[str, str] | None = None
    listener = "PLAINTEXT"
    principal: str | None = "User:ANONYMOUS"
    sasl: Any = None
    close_after_response = False


class FakeBroker:
    """The services a data-path handler reads: replicas, producer_ids, metadata."""

    def __init__(self, tmp_path: Any, broker_id: int = 1, config: LogConfig | None = None,
                 clock: FakeClock | None = None, min_isr: int = 1) -> None:
        self.clock = clock or FakeClock()
        self.logs = LogManager([str(tmp_path / "logs")], config or LogConfig(), clock=self.clock)
        self.logs.startup()
        self.replicas = ReplicaManager(broker_id, self.logs, clock=self.clock, timer=self.clock,
                                       min_insync_replicas=lambda _t: min_isr)
        self.cluster = FakeCluster()
        self.producer_ids = ProducerIdManager(broker_id, self.cluster)
        self.metadata = FakeMetadata()
        self.metadata.nodes[broker_id] = BrokerMeta(broker_id, "127.0.0.1", 9092)
        self.broker_id = broker_id
        self.controller_epoch = 1
        self.leader_epochs: dict[tuple[str, int], int] = {}
        self.authorizer: Any = None          # no authorizer.class.name: every request allowed
        self.transaction_coordinator: Any = None
        self.config = BrokerConfig()         # Kafka's defaults (message.max.bytes, ...)
        self.cluster_id = "fake-cluster-id"
        self.fetch_sessions = FetchSessionCache()

    def lead(self, topic: str, partitions: int = 1, *, replicas: tuple[int, ...] | None = None,
             isr: tuple[int, ...] | None = None, leader: int | None = None) -> uuid.UUID:
        """Make this broker leader (or follower of ``leader``) of ``topic``'s partitions."""
        tid = self.metadata.ids.setdefault(topic, uuid.uuid4())
        replicas = replicas or (self.broker_id,)
        leader = self.broker_id if leader is None else leader
        states = []
        for p in range(partitions):
            epoch = self.leader_epochs.get((topic, p), -1) + 1
            self.leader_epochs[(topic, p)] = epoch
            states.append(PartitionState(topic, p, tid, self.controller_epoch, leader, epoch,
                                         isr or replicas, 0, replicas))
        errors = self.replicas.become_leader_or_follower(self.controller_epoch, states)
        assert not any(errors.values()), errors
        self.metadata.parts[topic] = [PartitionMeta(p, leader, self.leader_epochs[(topic, p)],
                                                    list(replicas), list(isr or replicas))
                                      for p in range(partitions)]
        return tid


async def call(broker: FakeBroker, api_key: int, version: int, **fields: Any) -> Any:
    """Run a handler in-process through the real codec both ways (so every
    version's encoding is exercised); returns the decoded response, or the
    handler's ``Outcome`` (no response / close the connection) as it is."""
    from broker.dispatch import REGISTRY, Outcome, load_handlers
    if api_key not in REGISTRY:
        load_handlers()
    spec = api(api_key)
    request = decode(spec.request, encode(spec.request.new(**fields), version), version)
    ctx = RequestContext(header=RequestHeader(api_key, version, 1, "test"),
                         connection=FakeConnection(), broker=broker)  # type: ignore[arg-type]
    response = await REGISTRY[api_key].fn(ctx, request)
    if isinstance(response, Outcome):
        return response
    return decode(spec.response, encode(response, version), version)


def struct(api_key: int, struct_name: str, request: bool = True, **fields: Any) -> Any:
    spec = api(api_key).request if request else api(api_key).response
    return spec.structs[struct_name].new(**fields)
