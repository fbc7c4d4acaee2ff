"""One partition hosted by this broker (Kafka ``Partition``): leader or follower.

State, all written on the event loop only:

* role: leader when ``leader_id == local_broker_id``; ``leader_epoch``,
  ``partition_epoch``, ``isr`` and ``replicas`` as the controller last said
  (LeaderAndIsr) — or, in issue 4, as AlterPartition answers.
* the log (storage.PartitionLog). Its ``high_watermark`` field IS the
  partition's high watermark (one copy; the log manager checkpoints it).
* per follower (leader only): its log end offset as its last fetch offset
  said, and when it last caught up — the inputs of the ``maybe_*`` steps.
* ISR changes in flight (leader only, issue 4; the steps are in
  ``partition_isr``): the leader proposes an ISR through AlterPartition (``isr_sink``, the ReplicaManager's seam to the
  AlterPartitionManager) and applies it only from the controller's answer or
  a later LeaderAndIsr. While one is pending the HW is computed over the
  *maximal* ISR (committed ISR plus proposed additions; a proposed removal
  still counts), as Kafka's PendingExpandIsr/PendingShrinkIsr: so the HW
  never advances on a shrink the controller has not committed.
* idempotent producer state and open transactions (``producer_state``,
  ``partition_txn``), rebuilt from the log
  when the log is attached.

Invariant: leader HW = min LEO over the maximal ISR, never moving backwards
(``maybe_increment_high_watermark``). With RF 1 the ISR is the leader alone,
so every append moves the HW to the LEO.

Followers (issue 4) truncate by leader epoch (``truncate_to`` from the
fetcher after OffsetForLeaderEpoch / DivergingEpoch, KIP-101/279), never by
their own high watermark: truncating to the HW is what lost acknowledged
records (and let replicas diverge) in Kafka before KIP-101, because a
follower's HW lags the leader's by a fetch round trip.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass

from broker.replication import partition_isr, partition_txn
from broker.replication.partition_isr import FollowerState, IsrSink, PendingIsrChange
from broker.replication.partition_state import NO_TOPIC_ID, PartitionState
from broker.replication.producer_state import ProducerStateManager
from broker.why import isr_facts
from broker.why.isr_history import IsrHistory
from protocol import record_validation, records
from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader
from storage.config import LogConfig
from storage.log import PartitionLog, ReadResult, RecordBatchTooLargeError
from storage.txn_index import AbortedTxn

log = logging.getLogger(__name__)

Clock = Callable[[], int]

READ_UNCOMMITTED = 0
READ_COMMITTED = 1

# Change sequence numbers, unique across all Partition objects of the process: a
# fetch session remembers the number at which it last found a partition with
# nothing to send, and skips the partition while the number is unchanged.
_change_seq = itertools.count(1)


# Built per request and never changed afterwards; not frozen=True, whose __init__
# sets each field through object.__setattr__ (5x the cost: 2 µs for 8 fields here).
@dataclass(slots=True)
class LeaderAppendResult:
    first_offset: int
    last_offset: int
    log_append_time: int             # -1 unless LogAppendTime (or a duplicate's timestamp, as Kafka)
    log_start_offset: int
    duplicate: bool = False


class Partition:
    def __init__(self, topic: str, partition: int, local_broker_id: int, clock: Clock) -> None:
        self.topic = topic
        self.partition = partition
        self.local_broker_id = local_broker_id
        self.clock = clock
        self.topic_id = NO_TOPIC_ID
        self.log: PartitionLog | None = None
        self.leader_id = -1
        self.leader_epoch = -1
        self.leader_epoch_start_offset = -1
        self.partition_epoch = -1
        self.controller_epoch = -1
        self.isr: frozenset[int] = frozenset()
        self.replicas: tuple[int, ...] = ()
        self.followers: dict[int, FollowerState] = {}
        self.producers = ProducerStateManager()
        self.pending_isr: PendingIsrChange | None = None
        self.isr_sink: IsrSink | None = None   # None: ISR changes are never proposed
        self.producer_expiration_ms: int | None = None
        self.why = IsrHistory()   # broker/why: the ISR changes this leader made, with reasons
        # bumped by mark_changed (ReplicaManager.partition_changed) on every append,
        # HW move and role change: what a fetch could answer differently about
        self.change_seq = next(_change_seq)

    def __repr__(self) -> str:
        return (f"Partition({self.topic}-{self.partition}, leader={self.leader_id}, "
                f"epoch={self.leader_epoch}, isr={sorted(self.isr)})")

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    # -- the log ----------------------------------------------------------------------

    def attach_log(self, plog: PartitionLog, producer_expiration_ms: int | None = None) -> None:
        """Adopt the log and rebuild producer state: from the newest producer snapshot
        and the batches after it, or from every batch header when there is none."""
        self.log = plog
        self.producer_expiration_ms = producer_expiration_ms
        plog.snapshot_source = lambda: self.producers.snapshot_entries()
        self._rebuild_producers()

    def _rebuild_producers(self) -> None:
        producer_expiration_ms = self.producer_expiration_ms
        self.producers = ProducerStateManager()
        now = self.clock()
        plog = self.local_log()
        start = partition_txn.load_snapshot(plog, self.producers)
        batches = partition_txn.batches_with_markers(
            plog, now - producer_expiration_ms if producer_expiration_ms is not None else None,
            from_offset=start)
        seen = self.producers.rebuild(batches, reset=start is None)
        if producer_expiration_ms is not None:
            self.producers.remove_expired(now, producer_expiration_ms)
        if self.producers.producers:
            log.debug("%s-%d: %d producers (%d open transactions) restored from %s and %d "
                      "batches", self.topic, self.partition, len(self.producers),
                      len(self.producers.ongoing),
                      "no snapshot" if start is None else f"the snapshot at {start}", seen)

    def local_log(self) -> PartitionLog:
        if self.log is None:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{self.topic}-{self.partition} has no log")
        return self.log

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id and self.log is not None

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark if self.log is not None else -1

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset if self.log is not None else -1

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset if self.log is not None else -1

    @property
    def last_stable_offset(self) -> int:
        """min(first unstable offset, high watermark) (``partition_txn``)."""
        return partition_txn.last_stable_offset(self) if self.log is not None else -1

    # -- role changes (LeaderAndIsr) ----------------------------------------------------

    def _apply(self, state: PartitionState) -> None:
        self.pending_isr = None          # the controller's word replaces any proposal
        self.controller_epoch = state.controller_epoch
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.isr = frozenset(state.isr)
        self.replicas = tuple(state.replicas)
        if state.topic_id != NO_TOPIC_ID:
            self.topic_id = state.topic_id

    def make_leader(self, state: PartitionState) -> bool:
        """Become (or stay) leader at ``state.leader_epoch``; True if the epoch changed.

        Steps as Kafka's ``makeLeader``: 1. take the controller's state; 2. the
        new epoch starts at our log end offset (leader-epoch cache entry); 3.
        forget what followers had fetched (ISR members count as caught up now);
        4. the HW may move (with RF 1: to the LEO).
        """
        plog = self.local_log()
        new_epoch = state.leader_epoch != self.leader_epoch or not self.is_leader
        if self.is_leader:   # broker/why: an ISR change the controller made while we lead
            isr_facts.leader_and_isr(self, state.isr, state.leader_epoch)
        self._apply(state)
        if new_epoch:
            self.leader_epoch_start_offset = plog.log_end_offset
            plog.assign_leader_epoch(state.leader_epoch, plog.log_end_offset)
            now = self.clock()
            self.followers = {
                r: FollowerState(r, last_caught_up_ms=now if r in self.isr else 0)
                for r in self.replicas if r != self.local_broker_id}
        self.maybe_increment_high_watermark()
        return new_epoch

    def start_follower_clocks(self) -> None:
        """ISR followers count as caught up from now on (``partition_isr``)."""
        partition_isr.start_follower_clocks(self)

    def make_follower(self, state: PartitionState) -> bool:
        """Follow ``state.leader``; True if the leader or epoch changed (the fetcher seam:
        issue 4 truncates by leader epoch and starts fetching on True)."""
        changed = state.leader != self.leader_id or state.leader_epoch != self.leader_epoch
        self._apply(state)
        self.followers = {}
        self.leader_epoch_start_offset = -1
        return changed

    @property
    def latest_epoch(self) -> int:
        """Latest leader epoch in our log (the follower's LastFetchedEpoch)."""
        return self.log.leader_epoch_cache.latest_epoch if self.log is not None else -1

    # -- leader epochs -----------------------------------------------------------------

    def check_leader_epoch(self, current_leader_epoch: int) -> ErrorCode:
        """KIP-320 fencing: the client's view of the epoch against ours (-1 = not checked)."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return ErrorCode.NONE
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return ErrorCode.UNKNOWN_LEADER_EPOCH

    def last_offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int,
                                     fetch_only_from_leader: bool) -> tuple[ErrorCode, int, int]:
        """(error, epoch, end offset) for OffsetForLeaderEpoch (Kafka ``lastOffsetForLeaderEpoch``)."""
        if fetch_only_from_leader and not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1
        error = self.check_leader_epoch(current_leader_epoch)
        if error:
            return error, -1, -1
        plog = self.local_log()
        epoch, end = plog.leader_epoch_cache.end_offset_for(leader_epoch, plog.log_end_offset)
        return ErrorCode.NONE, epoch, end

    # -- leader append -----------------------------------------------------------------

    def append_records_as_leader(self, data: bytes | bytearray | memoryview, *, required_acks: int,
                                 min_insync_replicas: int,
                                 single_batch: bool = False,
                                 check_sequences: bool = True,
                                 records_checked: bool = False) -> LeaderAppendResult:
        """Validate and append one produce request's records for this partition.

        Raises KafkaError (nothing appended) for: not leader; CRC/size damage
        (CORRUPT_MESSAGE); rule breaks (INVALID_RECORD); a batch above
        max.message.bytes (MESSAGE_TOO_LARGE); more than a segment
        (RECORD_LIST_TOO_LARGE); acks=all with ISR < min.insync.replicas
        (NOT_ENOUGH_REPLICAS); producer epoch/sequence errors. An exact
        duplicate of a recent batch is answered with its original offsets, also
        while the ISR is short: its acks=all wait then answers
        NOT_ENOUGH_REPLICAS_AFTER_APPEND ("possibly persisted": it is in the log),
        where Kafka, checking min.insync.replicas first, answers NOT_ENOUGH_REPLICAS,
        which librdkafka takes as "not persisted" -- its idempotent producer may then
        re-send the batch under a new epoch, written twice (confluentinc/librdkafka#4953;
        seen in ``make fault``: a leader's ISR down to itself while a producer retried).
        Only an exact repeat is let through: every other batch meets the ISR check
        before the sequence checks, as in Kafka.
        ``single_batch``: Produce v3+ must carry exactly one batch (INVALID_RECORD).
        ``check_sequences`` False: a coordinator's write (no duplicate or sequence checks;
        the producer epoch is still checked). ``records_checked``: the records were
        validated already, off the event loop (``record_checks``): headers only here.
        """
        if not self.is_leader:
            if check_sequences:
                self.note_refused(data, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"broker {self.local_broker_id} is not the leader of {self.topic}-{self.partition}")
        plog = self.local_log()
        headers = validate_records(data, plog.config, self.topic, self.partition, self.clock(),
                                   records_inside=check_sequences and not records_checked)
        if single_batch and len(headers) != 1:
            raise KafkaError(ErrorCode.INVALID_RECORD,
                             f"produce v3+ needs exactly one record batch, not {len(headers)}")
        producer_batches = [h for h in headers if h.has_producer_id]
        if required_acks == -1 and len(self.isr) < min_insync_replicas:
            repeated = (self.producers.duplicate_of(producer_batches[0])
                        if check_sequences and len(headers) == 1 and producer_batches else None)
            if repeated is None:
                if check_sequences:
                    for header in producer_batches:
                        self.producers.note_refused(header, ErrorCode.NOT_ENOUGH_REPLICAS)
                raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                 f"ISR {sorted(self.isr)} is smaller than min.insync.replicas "
                                 f"{min_insync_replicas}")
            return LeaderAppendResult(repeated.first_offset, repeated.last_offset,
                                      repeated.timestamp, plog.log_start_offset, duplicate=True)
        for header in producer_batches:
            if not check_sequences:
                self.producers.check_coordinator_batch(header)
                continue
            duplicate = self.producers.check_client_batch(header)
            if duplicate is not None:
                return LeaderAppendResult(duplicate.first_offset, duplicate.last_offset,
                                          duplicate.timestamp, plog.log_start_offset, duplicate=True)
        try:
            info = plog.append(data, leader_epoch=self.leader_epoch)
        except RecordBatchTooLargeError as e:
            raise KafkaError(ErrorCode.RECORD_LIST_TOO_LARGE, str(e)) from None
        if producer_batches:
            self._update_producers(headers, info.first_offset, info.log_append_time)
        self.maybe_increment_high_watermark()
        return LeaderAppendResult(info.first_offset, info.last_offset, info.log_append_time,
                                  info.log_start_offset)

    def note_refused(self, data: bytes | bytearray | memoryview, error: int) -> None:
        """A client's batches refused unwritten with ``error`` (not leader, fenced): the
        producer state remembers its next one (``ProducerStateManager.note_refused``)."""
        for _, header in records.iter_batches(data):
            if header.has_producer_id:
                self.producers.note_refused(header, error)

    def append_marker_as_leader(self, *, commit: bool, producer_id: int, producer_epoch: int,
                                coordinator_epoch: int) -> int:
        """Append a WriteTxnMarkers COMMIT/ABORT marker (``partition_txn``); its offset."""
        return partition_txn.append_marker_as_leader(
            self, commit=commit, producer_id=producer_id, producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch)

    def _update_producers(self, headers: list[BatchHeader], first_offset: int, append_time: int) -> None:
        offset = first_offset
        for header in headers:
            if header.has_producer_id:
                self.producers.update(header, offset,
                                      append_time if append_time >= 0 else header.max_timestamp)
            offset += header.last_offset_delta + 1

    def append_records_as_follower(self, data: bytes | bytearray | memoryview) -> int:
        """Append the leader's batches as they are (offsets and leader epochs kept;
        the leader-epoch cache follows the batches' epochs); returns the new LEO.

        ``data`` is a fetch response's records: a partial trailing batch is
        dropped, and so are batches wholly below our LEO (a fetch may start
        inside the batch holding the fetch offset)."""
        plog = self.local_log()
        leo = plog.log_end_offset
        start, end = -1, 0
        for pos, header in records.iter_batches(data):
            if header.base_offset + header.last_offset_delta < leo:
                continue
            if start < 0:
                start = pos
                if header.base_offset < leo:  # straddles our LEO: the leader's copy wins
                    self.truncate_to(header.base_offset)
            end = pos + header.size
        if start < 0:
            return plog.log_end_offset
        whole = memoryview(data)[start:end]
        headers = records.validate(whole, from_client=False)
        plog.append(whole, assign_offsets=False)
        pos = 0
        for header in headers:
            if header.has_producer_id:
                marker = records.marker_of(whole, pos) if header.is_control else None
                kind, epoch = marker if marker is not None else (None, -1)
                completed = self.producers.update(header, header.base_offset,
                                                  header.max_timestamp, kind, epoch)
                partition_txn.record_completed(self, completed)
            pos += header.size
        return plog.log_end_offset

    def update_follower_high_watermark(self, leader_high_watermark: int) -> bool:
        """Follower: HW = min(leader's HW, our LEO), only ever moving up (the
        truncation path is the one way down); True if it moved."""
        plog = self.local_log()
        new_hw = min(leader_high_watermark, plog.log_end_offset)
        if new_hw <= plog.high_watermark:
            return False
        plog.update_high_watermark(new_hw)
        return True

    def maybe_increment_follower_log_start_offset(self, leader_log_start_offset: int) -> bool:
        """Follower: follow the leader's log start (DeleteRecords, retention) up to our HW."""
        plog = self.local_log()
        target = min(leader_log_start_offset, plog.high_watermark)
        return target > plog.log_start_offset and plog.maybe_increment_log_start_offset(target)

    def truncate_to(self, offset: int) -> bool:
        """Follower: drop offsets >= ``offset`` (the leader-epoch cache and the HW
        follow) and rebuild producer state; True if anything was removed.

        Only the fetcher calls this, with an offset from the leader's epoch
        answer (KIP-101/279) — never the follower's own HW."""
        plog = self.local_log()
        if not plog.truncate_to(offset):
            return False
        log.info("%s-%d: truncated to offset %d (leader epoch %d)", self.topic, self.partition,
                 offset, self.leader_epoch)
        self._rebuild_producers()
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Follower below the leader's log start: restart our log empty at ``offset``."""
        self.local_log().truncate_fully_and_start_at(offset)
        log.info("%s-%d: log restarted at offset %d (below the leader's log start)",
                 self.topic, self.partition, offset)
        self.producers = ProducerStateManager()

    # -- high watermark and followers (the maybe_* steps) ------------------------------

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The ISR the HW is computed over: committed, plus a pending expansion."""
        return self.pending_isr.maximal if self.pending_isr is not None else self.isr

    def maybe_increment_high_watermark(self) -> bool:
        """Move the HW up to min LEO over the maximal ISR; True if it moved.

        Invariant: HW <= LEO of every maximal-ISR member, and it never
        decreases (a follower that has not fetched since we became leader
        counts as -1 and holds the HW where it is). A follower whose removal
        is pending still holds it: HW never advances on an uncommitted shrink.
        """
        if not self.is_leader:
            return False
        plog = self.local_log()
        new_hw = plog.log_end_offset
        for replica in self.maximal_isr:
            if replica == self.local_broker_id:
                continue
            state = self.followers.get(replica)
            new_hw = min(new_hw, state.log_end_offset if state is not None else -1)
        if new_hw <= plog.high_watermark:
            return False
        plog.update_high_watermark(new_hw)
        return True

    def diverging_epoch(self, last_fetched_epoch: int, fetch_offset: int) -> tuple[int, int] | None:
        """(epoch, end offset) when a follower's log diverges from ours (Fetch v12+):
        its last fetched epoch ends earlier here, or is unknown; else None."""
        if last_fetched_epoch < 0:
            return None
        _, epoch, end = self.last_offset_for_leader_epoch(-1, last_fetched_epoch, False)
        if epoch < last_fetched_epoch or end < fetch_offset:
            return epoch, end
        return None

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int) -> bool:
        """A follower fetched at ``fetch_offset`` (= its LEO); True if the HW moved.

        Caught-up time (Kafka ``Replica.updateFetchState``): the follower is
        caught up *now* when it reached our LEO, or caught up *as of its
        previous fetch* when it reached the LEO we had then — so a follower
        that keeps up under steady load is never taken for lagging. Then
        ``maybe_expand_isr`` (a follower reaching the HW rejoins the ISR
        through AlterPartition) and the HW step.
        """
        state = self.followers.get(replica_id)
        if state is None or not self.is_leader:
            return False
        now = self.clock()
        leo = self.log_end_offset
        if fetch_offset >= leo:
            state.last_caught_up_ms = max(state.last_caught_up_ms, now)
        elif fetch_offset >= state.last_fetch_leader_leo >= 0:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.log_end_offset = fetch_offset
        state.last_fetch_ms = now
        state.last_fetch_leader_leo = leo
        self.maybe_expand_isr(replica_id)
        return self.maybe_increment_high_watermark()

    def mark_changed(self) -> None:
        self.change_seq = next(_change_seq)

    def refresh_caught_up_follower(self, replica_id: int, now: int) -> bool:
        """An idle ISR follower fetched again: note it caught up (``partition_isr``)."""
        return partition_isr.refresh_caught_up_follower(self, replica_id, now)

    def maybe_expand_isr(self, replica_id: int) -> bool:
        """Propose ``replica_id`` for the ISR if it caught up (``partition_isr``)."""
        return partition_isr.maybe_expand_isr(self, replica_id)

    def out_of_sync_replicas(self, max_lag_ms: int) -> set[int]:
        """ISR followers not caught up within ``max_lag_ms`` (``partition_isr``)."""
        return partition_isr.out_of_sync_replicas(self, max_lag_ms)

    def maybe_shrink_isr(self, max_lag_ms: int) -> bool:
        """Propose an ISR without the lagging followers (``partition_isr``)."""
        return partition_isr.maybe_shrink_isr(self, max_lag_ms)

    def on_alter_partition_answer(self, change: PendingIsrChange, error: int, leader_epoch: int = -1,
                                  isr: tuple[int, ...] = (), partition_epoch: int = -1) -> bool:
        """Apply the controller's answer to ``change`` (``partition_isr``)."""
        return partition_isr.on_alter_partition_answer(self, change, error, leader_epoch, isr,
                                                       partition_epoch)

    def check_enough_replicas_reach_offset(self, required_offset: int,
                                           min_insync_replicas: int) -> tuple[bool, int]:
        """DelayedProduce's question: (done, error) for an acks=all append ending before
        ``required_offset`` (Kafka ``checkEnoughReplicasReachOffset``): done once the
        HW passed it; NOT_ENOUGH_REPLICAS_AFTER_APPEND if the committed ISR is then
        smaller than min.insync.replicas (it shrank while the produce waited)."""
        if not self.is_leader:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark < required_offset:
            return False, ErrorCode.NONE
        if len(self.isr) < min_insync_replicas:
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return True, ErrorCode.NONE

    # -- reads ---------------------------------------------------------------------------

    def read(self, fetch_offset: int, max_bytes: int, *, upper: int | None,
             min_one_batch: bool) -> ReadResult:
        """Log read below ``upper`` (HW/LSO for consumers, None = LEO for followers).
        Raises storage's OffsetOutOfRangeError."""
        return self.local_log().read(fetch_offset, max_bytes, upper, min_one_batch)

    def aborted_txns(self, fetch_offset: int, result: ReadResult, upper: int) -> list[AbortedTxn]:
        """The aborted transactions in a read_committed read (``partition_txn``)."""
        return partition_txn.aborted_txns(self, fetch_offset, result, upper)

    def fetch_upper_bound(self, replica_id: int, isolation: int) -> int | None:
        if replica_id >= 0:
            return None
        return self.last_stable_offset if isolation == READ_COMMITTED else self.high_watermark


def validate_records(data: bytes | bytearray | memoryview, config: LogConfig, topic: str,
                     partition: int, now: int, *, records_inside: bool = True
                     ) -> list[BatchHeader]:
    """records.validate plus the max.message.bytes bound, then (``records_inside``: a
    client's write, not a coordinator's own) every record as Kafka's LogValidator
    (protocol/record_validation), mapped to Kafka's error codes. Rule breaks raise
    RecordErrorsError, which carries the KIP-467 record errors."""
    max_message_bytes = config.max_message_bytes
    try:
        headers = records.validate(data)
    except records.CorruptRecordError as e:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, str(e)) from None
    except records.InvalidRecordError as e:
        raise KafkaError(ErrorCode.INVALID_RECORD, str(e)) from None
    for header in headers:
        if header.size > max_message_bytes:
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                             f"batch of {header.size} bytes exceeds max.message.bytes {max_message_bytes}")
    if not records_inside:
        return headers
    before, after = record_validation.effective_timestamp_bounds(
        config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms,
        config.message_timestamp_difference_max_ms)
    rules = record_validation.RecordRules(
        f"{topic}-{partition}", compacted=config.compact, log_append_time=config.log_append_time,
        before_max_ms=before, after_max_ms=after,
        max_inflated=record_validation.max_inflated_bytes(max_message_bytes))
    try:
        record_validation.validate_batches(data, headers, rules, now)
    except record_validation.RecordValidationError as e:
        raise RecordErrorsError(e.error, str(e), e.record_errors) from None
    except records.CorruptRecordError as e:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, str(e)) from None
    except records.InvalidRecordError as e:
        raise KafkaError(ErrorCode.INVALID_RECORD, str(e)) from None
    return headers


class RecordErrorsError(KafkaError):
    """A produce refused for per-record rule breaks: the partition's error plus Kafka's
    KIP-467 ``record_errors`` ((batch_index, message) pairs) for Produce v8+."""

    def __init__(self, code: int, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(code, message)
        self.record_errors = record_errors
