"""Fakes for the replication tests: brokers in one process, a fake clock, a
LeaderEndpoint that calls the leader's ReplicaManager directly, a recording
AlterPartition sink, and a test-driven "controller" that sends LeaderAndIsr.

Storage is real (one LogManager per broker under tmp_path); time is a FakeClock.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from client import KafkaConnectionError
from broker.replication.fetch_reads import FetchPartitionRequest
from broker.replication.fetcher import ReplicaFetcherManager
from broker.replication.leader_endpoint import (EpochEndOffset, FetchedPartition,
                                                FetchRequestPartition)
from broker.replication.partition import Partition
from broker.replication.partition_isr import PendingIsrChange
from broker.replication.partition_state import PartitionState
from broker.replication.replica_manager import IsrAnswer, ReplicaManager
from protocol.errors import ErrorCode, KafkaError
from storage.config import LogConfig
from storage.log_manager import LogManager

from tests.unit.broker.replication.fakes import FakeClock

TP = tuple[str, int]


class FakeLeaderEndpoint:
    """LeaderEndpoint over another in-process broker's ReplicaManager (no wire).
    ``down`` makes every call fail as a lost connection would."""

    def __init__(self, cluster: FakeCluster, local_id: int, leader_id: int) -> None:
        self.cluster = cluster
        self.local_id = local_id
        self.leader_id = leader_id
        self.fetches = 0
        self.epoch_requests: list[dict[TP, tuple[int, int]]] = []

    def _leader(self) -> ReplicaManager:
        node = self.cluster.nodes.get(self.leader_id)
        if node is None or not node.up:
            raise KafkaConnectionError(f"broker {self.leader_id} is down")
        return node.replicas

    async def fetch(self, partitions: dict[TP, FetchRequestPartition]) -> dict[TP, FetchedPartition]:
        self.fetches += 1
        rm = self._leader()
        req = {tp: FetchPartitionRequest(p.fetch_offset, p.max_bytes, p.current_leader_epoch,
                                         p.log_start_offset, p.last_fetched_epoch)
               for tp, p in partitions.items()}
        res = await rm.fetch(self.local_id, 0, 1, 10 << 20, 0, req)
        return {tp: FetchedPartition(r.error, r.high_watermark, r.log_start_offset,
                                     bytes(r.records) if r.size else b"", r.diverging_epoch)
                for tp, r in res.items()}

    async def fetch_epoch_end_offsets(self, partitions: dict[TP, tuple[int, int]]
                                      ) -> dict[TP, EpochEndOffset]:
        self.epoch_requests.append(dict(partitions))
        rm = self._leader()
        return {tp: EpochEndOffset(*rm.last_offset_for_leader_epoch(tp, current, epoch))
                for tp, (current, epoch) in partitions.items()}

    async def _offset(self, tp: TP, current: int, timestamp: int) -> tuple[int, int]:
        try:
            return ErrorCode.NONE, self._leader().fetch_offset_for_timestamp(tp, timestamp, None, current)[0]
        except KafkaError as e:
            return e.code, -1

    async def fetch_earliest_offset(self, tp: TP, current_leader_epoch: int) -> tuple[int, int]:
        return await self._offset(tp, current_leader_epoch, -2)

    async def fetch_latest_offset(self, tp: TP, current_leader_epoch: int) -> tuple[int, int]:
        return await self._offset(tp, current_leader_epoch, -1)

    async def close(self) -> None:
        pass


@dataclass
class Submitted:
    partition: Partition
    change: PendingIsrChange
    on_answer: IsrAnswer


class RecordingAlterPartition:
    """The AlterPartition seam: records proposals; the test (as controller) answers."""

    def __init__(self) -> None:
        self.submitted: list[Submitted] = []

    def submit(self, p: Partition, change: PendingIsrChange, on_answer: IsrAnswer) -> None:
        self.submitted.append(Submitted(p, change, on_answer))

    async def shutdown(self) -> None:
        pass


class Node:
    """One broker: a LogManager over its own directory and a ReplicaManager with
    a (manually driven) fetcher manager and a recording AlterPartition sink."""

    def __init__(self, cluster: FakeCluster, broker_id: int, *, min_isr: int = 1,
                 lag_ms: int = 10_000) -> None:
        self.cluster = cluster
        self.broker_id = broker_id
        self.min_isr = min_isr
        self.lag_ms = lag_ms
        self.dir = cluster.base / f"broker-{broker_id}"
        self.up = False
        self.start()

    def start(self) -> None:
        clock = self.cluster.clock
        self.logs = LogManager([str(self.dir)], self.cluster.config, clock=clock)
        self.logs.startup()
        self.alter = RecordingAlterPartition()
        self.fetchers = ReplicaFetcherManager(
            self.broker_id, lambda leader: FakeLeaderEndpoint(self.cluster, self.broker_id, leader),
            clock=clock, backoff_ms=100, autostart=False)
        self.replicas = ReplicaManager(self.broker_id, self.logs, clock=clock, timer=clock,
                                       min_insync_replicas=lambda _t: self.min_isr,
                                       fetchers=self.fetchers, alter_partitions=self.alter,
                                       replica_lag_time_max_ms=self.lag_ms)
        self.up = True

    def crash(self) -> None:
        """Stop without a clean shutdown (files stay as written; no checkpoints)."""
        self.up = False
        for _tp, plog in self.logs:
            plog.close()

    def restart(self) -> None:
        self.crash()
        self.start()

    def partition(self, tp: TP = ("t", 0)) -> Partition:
        p = self.replicas.partition(*tp)
        assert p is not None
        return p

    async def fetch_round(self) -> bool:
        worked = False
        for fetcher in list(self.fetchers.fetchers.values()):
            worked = await fetcher.run_once() or worked
        return worked


class FakeCluster:
    """Brokers sharing a clock; the test plays the controller with ``elect``."""

    def __init__(self, base: Path, ids: Sequence[int] = (1, 2, 3), *, min_isr: int = 1,
                 lag_ms: int = 10_000, config: LogConfig | None = None) -> None:
        self.base = base
        self.clock = FakeClock()
        self.config = config or LogConfig()
        self.nodes: dict[int, Node] = {}
        for i in ids:
            self.nodes[i] = Node(self, i, min_isr=min_isr, lag_ms=lag_ms)
        self.topic_id = uuid.uuid4()
        self.controller_epoch = 1
        self.leader_epoch = -1
        self.partition_epoch = 0
        self.replicas = tuple(ids)

    def elect(self, leader: int, isr: Sequence[int] | None = None, *,
              to: Sequence[int] | None = None, bump: bool = True) -> None:
        """LeaderAndIsr for ("t", 0) to every live replica (or ``to``)."""
        if bump:
            self.leader_epoch += 1
        self.partition_epoch += 1
        state = PartitionState("t", 0, self.topic_id, self.controller_epoch, leader,
                               self.leader_epoch, tuple(isr or self.replicas), self.partition_epoch,
                               self.replicas)
        for i in to or self.replicas:
            node = self.nodes[i]
            if node.up:
                errors = node.replicas.become_leader_or_follower(self.controller_epoch, [state])
                assert not any(errors.values()), (i, errors)

    def state_for(self, node: int) -> PartitionState:
        return PartitionState("t", 0, self.topic_id, self.controller_epoch,
                              self.nodes[node].partition().leader_id, self.leader_epoch,
                              tuple(self.replicas), self.partition_epoch, self.replicas)

    async def replicate(self, rounds: int = 3) -> None:
        for _ in range(rounds):
            for node in self.nodes.values():
                if node.up:
                    await node.fetch_round()


def log_bytes(p: Partition, upto: int) -> bytes:
    """The partition's batch bytes below offset ``upto`` (whole batches)."""
    if upto <= p.log_start_offset:
        return b""
    plog = p.local_log()
    return plog.read(p.log_start_offset, 1 << 30, upto, True).slice.read()
