"""The produce side of the ReplicaManager: leader appends of records and of
transaction markers, and the wait for the high watermark (acks=all) in the produce
purgatory (Kafka's ReplicaManager.appendRecords).

``LeaderAppends`` is the ReplicaManager's ``appends`` collaborator: the manager holds
the partitions' life cycle and the fetch side; this reads, through ``AppendHost``, the
manager's partitions, fence, clock, verifier, produce purgatory and metrics, and tells
it when a partition changed.

Per produce request (``append_records``): KIP-890 verification of a transactional
first batch; heavy records (compressed, or many) validated in a worker thread
(``record_checks``), and recompressed there when the topic's compression.type asks for
another codec (issue 18); per partition the fence, then ``Partition.append_records_as_leader``
(errors, KIP-467 record errors and storage failures answered per partition);
``appended`` called once every append is done (the connection reads on); with acks=all
the wait for the HW. With metrics on (``topic_stats`` set, broker/metrics/) each
partition's outcome is added to its topic's counters: a few int adds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from broker.replication.partition import Partition, RecordErrorsError
from broker.replication.purgatory import DelayedProduce
from coordinator.runtime.purgatory import Purgatory
from broker.replication.record_checks import check_and_recompress
from broker.replication.txn_verify import Verifier, unverified
from protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from broker.metrics.topic_stats import BrokerTopicStats
    from broker.replication.leader_fence import LeaderFence

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


# Built per request and never changed afterwards; not frozen=True, whose __init__
# sets each field through object.__setattr__ (5x the cost: 2 µs for 8 fields here).
@dataclass(slots=True)
class ProduceResult:
    error: int = ErrorCode.NONE
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    # KIP-467: the (batch_index, message) pairs of a record-level refusal
    record_errors: tuple[tuple[int, str], ...] = ()



class AppendHost(Protocol):
    """What the appends use of the ReplicaManager."""

    partitions: dict[TopicPartition, Partition]
    offline_partitions: set[TopicPartition]
    fence: LeaderFence
    clock: Callable[[], int]
    verifier: Verifier | None                       # KIP-890 (None: off)
    produce_purgatory: Purgatory
    min_insync_replicas: Callable[[str], int]       # topic -> min.insync.replicas
    topic_stats: BrokerTopicStats | None            # metrics (None: off)

    def absent(self, tp: TopicPartition) -> int: ...   # the error of a partition not hosted

    def partition_changed(self, tp: TopicPartition) -> None: ...   # waiters re-check


class LeaderAppends:
    """Produce appends as leader (see the module docstring)."""

    def __init__(self, host: AppendHost) -> None:
        self.host = host

    async def append_records(self, acks: int, timeout_ms: int,
                             entries: dict[TopicPartition, Any], *,
                             transactional_id: str | None = None,
                             single_batch: bool = False,
                             appended: Callable[[], None] | None = None,
                             from_coordinator: bool = False
                             ) -> dict[TopicPartition, ProduceResult]:
        """Append each partition's records as leader; wait for the HW with acks=all.

        ``single_batch``: Produce v3+ (exactly one batch per partition).
        ``transactional_id``: with a ``verifier`` (KIP-890), the first batch of a
        transaction on a partition is appended only once the coordinator confirmed
        the partition is in it (``txn_verify``).
        ``appended`` is called once every append is done, before the wait.
        ``from_coordinator``: a coordinator's own write (Kafka's AppendOrigin
        COORDINATOR): producer sequences are not checked.
        """
        if acks not in (-1, 0, 1):
            return {tp: ProduceResult(ErrorCode.INVALID_REQUIRED_ACKS) for tp in entries}
        h = self.host
        results: dict[TopicPartition, ProduceResult] = {}
        pending: dict[TopicPartition, int] = {}
        if transactional_id is not None and h.verifier is not None and not from_coordinator:
            failed = await unverified(h.partitions, h.verifier, transactional_id, entries)
            results.update((tp, ProduceResult(e)) for tp, e in failed.items())
            entries = {tp: d for tp, d in entries.items() if tp not in failed}
        # heavy records (compressed, or many) are validated in a worker thread first
        # (issue 18: and recompressed to the topic's compression.type, ``rewritten``)
        checked, rewritten = ({}, {}) if from_coordinator else await check_and_recompress(
            h.partitions, entries, h.clock)
        for tp, data in entries.items():
            data = rewritten.get(tp, data)
            p = h.partitions.get(tp)
            if p is None:
                results[tp] = ProduceResult(h.absent(tp))
                continue
            try:
                refused = checked.get(tp)
                if refused is not None:
                    raise refused
                try:
                    h.fence.check(tp, p, h.clock())
                except KafkaError as e:
                    if not from_coordinator:
                        p.note_refused(data, e.code)
                    raise
                r = p.append_records_as_leader(data, required_acks=acks,
                                               min_insync_replicas=h.min_insync_replicas(tp[0]),
                                               single_batch=single_batch,
                                               check_sequences=not from_coordinator,
                                               records_checked=tp in checked)
            except KafkaError as e:
                results[tp] = ProduceResult(
                    e.code, error_message=e.message, record_errors=tuple(
                        e.record_errors if isinstance(e, RecordErrorsError) else ()))
                if h.topic_stats is not None:
                    _count_failed(h.topic_stats, tp[0], e.code, len(data))
                continue
            except OSError as e:    # its log dir failed (the log's guard reported it)
                log.error("%s-%d: append failed: %s", tp[0], tp[1], e)
                results[tp] = ProduceResult(ErrorCode.KAFKA_STORAGE_ERROR, error_message=str(e))
                if h.topic_stats is not None:
                    _count_failed(h.topic_stats, tp[0], ErrorCode.KAFKA_STORAGE_ERROR, 0)
                continue
            results[tp] = ProduceResult(ErrorCode.NONE, r.first_offset, r.log_append_time,
                                        r.log_start_offset)
            pending[tp] = r.last_offset + 1
            if not r.duplicate:
                h.partition_changed(tp)
                if h.topic_stats is not None:
                    c = h.topic_stats.of(tp[0])
                    c.total_produce += 1
                    c.messages_in += r.last_offset - r.first_offset + 1
                    c.bytes_in += len(data)
        if appended is not None:
            appended()
        if acks == -1 and pending:
            errors = await self._wait_for_high_watermark(timeout_ms, pending)
            for tp, error in errors.items():
                if error:
                    old = results[tp]
                    results[tp] = ProduceResult(error, old.base_offset, old.log_append_time,
                                                old.log_start_offset)
        return results

    async def append_markers(self, timeout_ms: int, producer_id: int, producer_epoch: int,
                             commit: bool, coordinator_epoch: int,
                             tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """WriteTxnMarkers for one producer: a COMMIT/ABORT control batch on each
        partition we lead, then the wait for the HW to pass them (markers are always
        written acks=all, as Kafka's coordinator-origin appends). -> error per partition."""
        h = self.host
        errors: dict[TopicPartition, int] = {}
        pending: dict[TopicPartition, int] = {}
        for tp in tps:
            p = h.partitions.get(tp)
            if p is None:
                errors[tp] = h.absent(tp)
                continue
            try:
                h.fence.check(tp, p, h.clock())
                offset = p.append_marker_as_leader(commit=commit, producer_id=producer_id,
                                                   producer_epoch=producer_epoch,
                                                   coordinator_epoch=coordinator_epoch)
            except KafkaError as e:
                errors[tp] = e.code
                continue
            except OSError as e:
                log.error("%s-%d: marker append failed: %s", tp[0], tp[1], e)
                errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            pending[tp] = offset + 1
            errors[tp] = ErrorCode.NONE
            h.partition_changed(tp)
        if pending:
            waited = await self._wait_for_high_watermark(timeout_ms, pending)
            errors.update({tp: e for tp, e in waited.items() if e})
        return errors

    async def _wait_for_high_watermark(self, timeout_ms: int,
                                       pending: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        future: asyncio.Future[dict[TopicPartition, int]] = asyncio.get_running_loop().create_future()
        op = DelayedProduce(timeout_ms, pending, self._enough_replicas, future)
        self.host.produce_purgatory.try_complete_else_watch(op, list(pending))
        return await future

    def _enough_replicas(self, tp: TopicPartition, required: int) -> tuple[bool, int]:
        h = self.host
        p = h.partitions.get(tp)
        if p is None:
            return True, (ErrorCode.KAFKA_STORAGE_ERROR if tp in h.offline_partitions
                          else ErrorCode.NOT_LEADER_OR_FOLLOWER)
        done, error = p.check_enough_replicas_reach_offset(required, h.min_insync_replicas(tp[0]))
        if not done and h.fence.up and h.fence.fenced(tp, p, h.clock()):
            # appended but not committed, and we are fenced: answered now rather than
            # at the client's request timeout, "possibly persisted" (leader_fence.py:
            # not NOT_LEADER_OR_FOLLOWER, which librdkafka takes as "not persisted");
            # the client's retry is refused NOT_LEADER_OR_FOLLOWER and it moves
            return True, ErrorCode.REQUEST_TIMED_OUT
        return done, error


# As Kafka 3.9's ReplicaManager.appendToLocalLog: these errors are not counted as
# failed produce requests; the size errors count their bytes as rejected instead.
_NOT_FAILED = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                         ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
                         ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR})
_REJECTED = frozenset({ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE})


def _count_failed(stats: BrokerTopicStats, topic: str, code: int, size: int) -> None:
    """Metrics of a partition whose append failed with ``code``."""
    c = stats.of(topic)
    c.total_produce += 1
    if code not in _NOT_FAILED:
        c.failed_produce += 1
    if code in _REJECTED:
        c.bytes_rejected += size
