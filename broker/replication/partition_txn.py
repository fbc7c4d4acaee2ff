"""The transaction side of a partition (Kafka ``UnifiedLog``'s transaction parts):
end-transaction markers, the last stable offset and the aborted transactions a
read_committed Fetch is told about.

* ``append_marker_as_leader``: a WriteTxnMarkers entry for this partition: a
  COMMIT or ABORT control batch at the leader's epoch, after checking the
  producer epoch (a marker older than the producer's epoch is
  INVALID_PRODUCER_EPOCH) and the coordinator epoch (one older than the last
  marker's is TRANSACTION_COORDINATOR_FENCED: a zombie coordinator), as Kafka's
  ``appendEndTxnMarker``; every marker's coordinator epoch is kept per producer
  (leader, follower, reload; snapshots hold it).
* ``record_completed``: a marker (ours or a replicated one) ended a transaction;
  an abort goes into the active segment's ``.txnindex`` with the LSO it leaves,
  which is what makes a read_committed reader skip its data later, on any
  replica.
* ``last_stable_offset``: min(first unstable offset, high watermark).
* ``aborted_txns``: the aborted transactions overlapping a read.
* ``batches_with_markers``: a log's batches for rebuilding producer state,
  with the type of each control batch read from its record key
  (``records.marker_type``, which the follower's append uses too), from an
  offset on when a producer snapshot covers what is before it.
* ``load_snapshot``: the newest usable ``<offset>.snapshot`` into the producer
  state (the log writes them: at every roll and at close).

Each function takes the partition as ``TxnPartition`` names it (a Protocol that
partition.py's Partition satisfies, so this module does not import it); the state
is the partition's ``producers`` and its log, written on the event loop only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from protocol import records
from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader
from storage import producer_snapshot
from storage.log import PartitionLog, ReadResult
from storage.txn_index import AbortedTxn

if TYPE_CHECKING:
    from broker.replication.producer_state import CompletedTxn, ProducerStateManager


class TxnPartition(Protocol):
    """What the transaction steps use of a Partition."""

    topic: str
    partition: int
    local_broker_id: int
    leader_epoch: int
    producers: ProducerStateManager

    @property
    def clock(self) -> Callable[[], int]: ...

    @property
    def is_leader(self) -> bool: ...

    @property
    def high_watermark(self) -> int: ...

    def local_log(self) -> PartitionLog: ...

    def maybe_increment_high_watermark(self) -> bool: ...


def append_marker_as_leader(p: TxnPartition, *, commit: bool, producer_id: int,
                            producer_epoch: int, coordinator_epoch: int) -> int:
    """Append the end-transaction marker; returns its offset. Raises KafkaError
    (NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH, KAFKA_STORAGE_ERROR)."""
    if not p.is_leader:
        raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                         f"broker {p.local_broker_id} is not the leader of {p.topic}-{p.partition}")
    p.producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
    now = p.clock()
    batch = records.build_control_batch(commit=commit, producer_id=producer_id,
                                        producer_epoch=producer_epoch,
                                        coordinator_epoch=coordinator_epoch, timestamp=now)
    info = p.local_log().append(batch, leader_epoch=p.leader_epoch)
    completed = p.producers.update(records.read_header(batch), info.first_offset, now,
                                   records.CONTROL_COMMIT if commit else records.CONTROL_ABORT,
                                   coordinator_epoch)
    record_completed(p, completed)
    p.maybe_increment_high_watermark()
    return info.first_offset


def record_completed(p: TxnPartition, completed: CompletedTxn | None) -> None:
    """Index an aborted transaction the last appended marker ended (leader and
    follower alike)."""
    if completed is None or not completed.aborted:
        return
    lso = p.producers.last_stable_offset_after(completed)
    p.local_log().append_aborted_txn(AbortedTxn(completed.producer_id, completed.first_offset,
                                                completed.last_offset, lso))


def last_stable_offset(p: TxnPartition) -> int:
    hw = p.high_watermark
    first_unstable = p.producers.first_unstable_offset(hw)
    return hw if first_unstable is None else min(first_unstable, hw)


def aborted_txns(p: TxnPartition, fetch_offset: int, result: ReadResult,
                 upper: int) -> list[AbortedTxn]:
    """The aborted transactions a read_committed reader needs to filter the data of
    ``result`` (read from ``fetch_offset`` below ``upper``)."""
    plog = p.local_log()
    return plog.collect_aborted_txns(fetch_offset, plog.fetch_upper_bound_offset(result, upper))


def batches_with_markers(plog: PartitionLog, min_timestamp: int | None, *,
                         from_offset: int | None = None
                         ) -> Iterator[tuple[BatchHeader, tuple[int, int] | None]]:
    """Batches of the segments that may hold unexpired producers, in order, each with
    its (marker type, coordinator epoch) (control batches) or None; only those at or after
    ``from_offset`` when given (the tail after a producer snapshot)."""
    segments = plog.segments
    lowest = max(plog.log_start_offset, from_offset or 0)
    for i, segment in enumerate(segments):
        nxt = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if nxt is not None and nxt <= lowest:
            continue
        if (min_timestamp is not None and nxt is not None
                and segment.largest_timestamp() < min_timestamp):
            continue
        start = 0
        if segment.base_offset < lowest:     # the offset index finds the snapshot's batch
            found = segment.translate_offset(lowest)
            if found is None:
                continue
            start = found[0]
        for pos, header in segment.batches(start):
            if header.base_offset + header.last_offset_delta < lowest:
                continue
            yield header, (records.marker_of(segment.read_batch(pos, header))
                           if header.is_control else None)


def load_snapshot(plog: PartitionLog, producers: ProducerStateManager) -> int | None:
    """Load the newest producer snapshot at or below the log end (snapshots above it,
    left by a recovery that cut the tail, are deleted; one below the log start is of
    no use) into ``producers``. -> its offset, from where the log must be replayed,
    or None when there is no usable snapshot."""
    leo = plog.log_end_offset
    plog.delete_snapshots_above(leo)
    found = producer_snapshot.latest_at_or_below(plog.dir, leo)
    if found is None or found[0] < plog.log_start_offset:
        return None
    offset, entries = found
    producers.load_snapshot(entries)
    return offset


__all__ = ["aborted_txns", "append_marker_as_leader", "batches_with_markers", "load_snapshot",
           "last_stable_offset", "record_completed"]
