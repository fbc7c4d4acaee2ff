"""AlterPartitionManager: ISR changes from partition leaders to the active controller.

The leader never writes partition state itself (the controller is the single
writer of /brokers/topics/<t>/partitions/<p>/state); it proposes an ISR with
AlterPartition (API 56) and applies only the controller's answer.

Theory of operation (Kafka ``DefaultAlterPartitionManager``):

1. ``submit(partition, change, on_answer)`` queues one item per partition (a
   newer item for the same partition replaces an unsent older one) and wakes
   the sender task.
2. The sender sends everything queued as ONE AlterPartition request (one in
   flight at a time) to the controller that the metadata cache names,
   fenced by partition epoch: each entry carries the leader epoch and the
   partition epoch (ZooKeeper znode version) the proposal was based on, and
   the controller rejects a stale one (INVALID_UPDATE_VERSION,
   FENCED_LEADER_EPOCH) instead of overwriting a newer state.
3. Each partition's answer goes to its ``on_answer(error, leader_epoch, isr,
   partition_epoch)``, which applies it to the Partition
   (``Partition.on_alter_partition_answer``: fencing again on epochs).
4. Connection errors, a top-level error (NOT_CONTROLLER, STALE_BROKER_EPOCH,
   ...) and retriable partition errors requeue the items whose change is
   still pending, after ``backoff_ms``; the controller may have moved.

Wire versions: v0-1 name topics, v2+ use topic ids (used when every queued
partition has one), v3 sends ISR members with broker epochs (ours unknown
for peers: -1). ``max_version`` caps what we use (default 2).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from client import KafkaConnectionError
from broker.tasks import cancel_and_wait
from broker.replication.partition import Partition
from broker.replication.partition_isr import FENCED_ERRORS, REVERT_ERRORS, PendingIsrChange
from broker.replication.partition_state import NO_TOPIC_ID
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
IsrAnswer = Callable[[int, int, tuple[int, ...], int], None]
SPEC = api(ApiKey.ALTER_PARTITION).request


class Connection(Protocol):
    """The part of client.KafkaConnection we use."""

    def version_for(self, api_key: int, max_version: int | None = None) -> int: ...

    async def request(self, api_key: int, body: Struct, version: int | None = None
                      ) -> Struct | None: ...


class Pool(Protocol):
    """The part of client.BrokerPool we use."""

    async def get(self, host: str, port: int) -> Any: ...


# () -> (host, port) of the active controller, None while unknown
ControllerAddress = Callable[[], "tuple[str, int] | None"]


def metadata_controller(metadata: Any) -> ControllerAddress:
    """The controller the MetadataCache names (from LeaderAndIsr / UpdateMetadata)."""
    def address() -> tuple[str, int] | None:
        if metadata.controller_id is None or metadata.controller_id < 0:
            return None
        b = metadata.broker(metadata.controller_id)
        return None if b is None or b.port < 0 else (b.host, b.port)
    return address


@dataclass(slots=True)
class _Item:
    partition: Partition
    change: PendingIsrChange
    on_answer: IsrAnswer

    @property
    def wanted(self) -> bool:
        """Still the partition's pending change (not replaced by a LeaderAndIsr)."""
        return self.partition.pending_isr is self.change


class _Retry(Exception):
    pass


class AlterPartitionManager:
    def __init__(self, broker_id: int, broker_epoch: Callable[[], int], pool: Pool,
                 controller: ControllerAddress, *, backoff_ms: int = 500, max_version: int = 2,
                 timeout: float = 30.0) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.pool = pool
        self.controller = controller
        self.backoff_ms = backoff_ms
        self.max_version = max_version
        self.timeout = timeout
        self._unsent: dict[TopicPartition, _Item] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.requests_sent = 0

    # -- the ReplicaManager's seam ---------------------------------------------------------

    def submit(self, p: Partition, change: PendingIsrChange, on_answer: IsrAnswer) -> None:
        self._unsent[p.tp] = _Item(p, change, on_answer)
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(),
                                                                name="alter-partition")

    @property
    def pending(self) -> int:
        return len(self._unsent)

    async def shutdown(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)

    # -- the sender ----------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._unsent:
                if not await self.send_once():
                    await asyncio.sleep(self.backoff_ms / 1000)

    async def send_once(self) -> bool:
        """Send everything queued as one request and dispatch the answers; False
        when (some of) it must be retried after the backoff."""
        batch = {tp: item for tp, item in self._unsent.items() if item.wanted}
        self._unsent.clear()
        if not batch:
            return True
        try:
            answers = await self._send(batch)
        except (KafkaConnectionError, OSError, asyncio.TimeoutError, _Retry) as e:
            log.warning("AlterPartition for %d partitions failed: %s; retrying in %d ms",
                        len(batch), e, self.backoff_ms)
            self._requeue(batch.values())
            return False
        retry = []
        for tp, item in batch.items():
            answer = answers.get(tp)
            if answer is None or _retriable(answer[0]):
                retry.append(item)
                continue
            item.on_answer(*answer)
        if retry:
            log.warning("AlterPartition: retrying %d partitions", len(retry))
            self._requeue(retry)
            return False
        return True

    def _requeue(self, items: Any) -> None:
        for item in items:
            if item.wanted:
                self._unsent.setdefault(item.partition.tp, item)  # a newer one wins

    async def _send(self, batch: dict[TopicPartition, _Item]
                    ) -> dict[TopicPartition, tuple[int, int, tuple[int, ...], int]]:
        address = self.controller()
        if address is None:
            raise _Retry("no controller known")
        conn = await self.pool.get(*address)
        with_ids = all(i.partition.topic_id != NO_TOPIC_ID for i in batch.values())
        version = conn.version_for(ApiKey.ALTER_PARTITION,
                                   min(self.max_version, 3 if with_ids else 1))
        body, names = build_request(self.broker_id, self.broker_epoch(), batch, version)
        self.requests_sent += 1
        resp = await conn.request(ApiKey.ALTER_PARTITION, body, version)
        assert resp is not None
        if resp.error_code:
            raise _Retry(f"controller answered {ErrorCode.from_code(resp.error_code).name}")
        return parse_response(resp, version, names)


def _retriable(error: int) -> bool:
    return error != ErrorCode.NONE and error not in REVERT_ERRORS and error not in FENCED_ERRORS


def build_request(broker_id: int, broker_epoch: int, batch: dict[TopicPartition, _Item],
                  version: int) -> tuple[Struct, dict[Any, str]]:
    """The AlterPartition body for ``version``, and topic key (name or id) -> name."""
    by_topic: dict[str, list[Struct]] = {}
    ids: dict[str, Any] = {}
    for (topic, index), item in batch.items():
        ids[topic] = item.partition.topic_id
        isr = sorted(item.change.proposed)
        by_topic.setdefault(topic, []).append(SPEC.structs["PartitionData"].new(
            partition_index=index, leader_epoch=item.change.leader_epoch,
            new_isr=isr if version < 3 else [],
            new_isr_with_epochs=[SPEC.structs["BrokerState"].new(broker_id=b, broker_epoch=-1)
                                 for b in isr] if version >= 3 else [],
            leader_recovery_state=0, partition_epoch=item.change.partition_epoch))
    topics = [SPEC.structs["TopicData"].new(topic_name=t, topic_id=ids[t], partitions=ps)
              for t, ps in by_topic.items()]
    names = {(ids[t] if version >= 2 else t): t for t in by_topic}
    return SPEC.new(broker_id=broker_id, broker_epoch=broker_epoch, topics=topics), names


def parse_response(resp: Struct, version: int, names: dict[Any, str]
                   ) -> dict[TopicPartition, tuple[int, int, tuple[int, ...], int]]:
    out: dict[TopicPartition, tuple[int, int, tuple[int, ...], int]] = {}
    for topic in resp.topics:
        name = names.get(topic.topic_id if version >= 2 else topic.topic_name)
        if name is None:
            continue
        for p in topic.partitions:
            out[(name, p.partition_index)] = (p.error_code, p.leader_epoch, tuple(p.isr),
                                              p.partition_epoch)
    return out
