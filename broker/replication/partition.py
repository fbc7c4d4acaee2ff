"""One partition hosted by this broker (Kafka ``Partition``): leader or follower.

State, all written on the event loop only:

* role: leader when ``leader_id == local_broker_id``; ``leader_epoch``,
  ``partition_epoch``, ``isr`` and ``replicas`` as the controller last said
  (LeaderAndIsr) — or, in issue 4, as AlterPartition answers.
* the log (storage.PartitionLog). Its ``high_watermark`` field IS the
  partition's high watermark (one copy; the log manager checkpoints it).
* per follower (leader only): its log end offset as its last fetch offset
  said, and when it last caught up — the inputs of the ``maybe_*`` steps.
* idempotent producer state (broker.producer_state), rebuilt from the log
  when the log is attached.

Invariant: leader HW = min LEO over the ISR, never moving backwards
(``maybe_increment_high_watermark``). With RF 1 the ISR is the leader alone,
so every append moves the HW to the LEO.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from broker.producer_state import ProducerStateManager
from broker.replication.partition_state import NO_TOPIC_ID, PartitionState
from protocol import records
from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader
from storage.log import PartitionLog, ReadResult, RecordBatchTooLargeError

log = logging.getLogger(__name__)

Clock = Callable[[], int]

READ_UNCOMMITTED = 0
READ_COMMITTED = 1


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower (from its Fetch requests)."""

    broker_id: int
    log_end_offset: int = -1         # -1: not fetched since this broker became leader
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0


@dataclass(frozen=True, slots=True)
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

    def __repr__(self) -> str:
        return (f"Partition({self.topic}-{self.partition}, leader={self.leader_id}, "
                f"epoch={self.leader_epoch}, isr={sorted(self.isr)})")

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    # -- the log ----------------------------------------------------------------------

    def attach_log(self, plog: PartitionLog, producer_expiration_ms: int | None = None) -> None:
        """Adopt the log and rebuild producer state from its batch headers."""
        self.log = plog
        now = self.clock()
        headers = self._headers_since(now - producer_expiration_ms
                                      if producer_expiration_ms is not None else None)
        seen = self.producers.rebuild(headers)
        if producer_expiration_ms is not None:
            self.producers.remove_expired(now, producer_expiration_ms)
        if self.producers.producers:
            log.debug("%s-%d: %d producers restored from %d batch headers", self.topic,
                      self.partition, len(self.producers), seen)

    def _headers_since(self, min_timestamp: int | None) -> Iterator[BatchHeader]:
        """Batch headers of segments that may hold unexpired producers, in order."""
        assert self.log is not None
        segments = self.log.segments
        for i, segment in enumerate(segments):
            if (min_timestamp is not None and i + 1 < len(segments)
                    and segment.largest_timestamp() < min_timestamp):
                continue
            for _pos, header in segment.batches(0):
                if header.base_offset + header.last_offset_delta >= self.log.log_start_offset:
                    yield header

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
        """No transactions yet: the LSO is the high watermark."""
        return self.high_watermark

    # -- role changes (LeaderAndIsr) ----------------------------------------------------

    def _apply(self, state: PartitionState) -> None:
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
        self._apply(state)
        if new_epoch:
            self.leader_epoch_start_offset = plog.log_end_offset
            plog.leader_epoch_cache.assign(state.leader_epoch, plog.log_end_offset)
            now = self.clock()
            self.followers = {
                r: FollowerState(r, last_caught_up_ms=now if r in self.isr else 0)
                for r in self.replicas if r != self.local_broker_id}
        self.maybe_increment_high_watermark()
        return new_epoch

    def make_follower(self, state: PartitionState) -> bool:
        """Follow ``state.leader``; True if the leader or epoch changed (the fetcher seam:
        issue 4 truncates by leader epoch and starts fetching on True)."""
        changed = state.leader != self.leader_id or state.leader_epoch != self.leader_epoch
        self._apply(state)
        self.followers = {}
        self.leader_epoch_start_offset = -1
        return changed

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
                                 single_batch: bool = False) -> LeaderAppendResult:
        """Validate and append one produce request's records for this partition.

        Raises KafkaError (nothing appended) for: not leader; CRC/size damage
        (CORRUPT_MESSAGE); rule breaks (INVALID_RECORD); a batch above
        max.message.bytes (MESSAGE_TOO_LARGE); more than a segment
        (RECORD_LIST_TOO_LARGE); acks=all with ISR < min.insync.replicas
        (NOT_ENOUGH_REPLICAS); producer epoch/sequence errors. An exact
        duplicate of a recent batch is answered with its original offsets.
        ``single_batch``: Produce v3+ must carry exactly one batch (INVALID_RECORD).
        """
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"broker {self.local_broker_id} is not the leader of {self.topic}-{self.partition}")
        plog = self.local_log()
        if required_acks == -1 and len(self.isr) < min_insync_replicas:
            raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                             f"ISR {sorted(self.isr)} is smaller than min.insync.replicas {min_insync_replicas}")
        headers = _validate(data, plog.config.max_message_bytes)
        if single_batch and len(headers) != 1:
            raise KafkaError(ErrorCode.INVALID_RECORD,
                             f"produce v3+ needs exactly one record batch, not {len(headers)}")
        producer_batches = [h for h in headers if h.has_producer_id]
        for header in producer_batches:
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

    def _update_producers(self, headers: list[BatchHeader], first_offset: int, append_time: int) -> None:
        offset = first_offset
        for header in headers:
            if header.has_producer_id:
                self.producers.update(header, offset,
                                      append_time if append_time >= 0 else header.max_timestamp)
            offset += header.last_offset_delta + 1

    def append_records_as_follower(self, data: bytes | bytearray | memoryview) -> int:
        """Issue 4's seam: append the leader's batches as they are; returns the new LEO."""
        plog = self.local_log()
        headers = records.validate(data, from_client=False)
        plog.append(data, assign_offsets=False)
        for header in headers:
            if header.has_producer_id:
                self.producers.update(header, header.base_offset, header.max_timestamp)
        return plog.log_end_offset

    # -- high watermark and followers (the maybe_* steps) ------------------------------

    def maybe_increment_high_watermark(self) -> bool:
        """Move the HW up to min LEO over the ISR; True if it moved.

        Invariant: HW <= LEO of every ISR member, and it never decreases (a
        follower that has not fetched since we became leader counts as -1
        and holds the HW where it is).
        """
        if not self.is_leader:
            return False
        plog = self.local_log()
        new_hw = plog.log_end_offset
        for replica in self.isr:
            if replica == self.local_broker_id:
                continue
            state = self.followers.get(replica)
            new_hw = min(new_hw, state.log_end_offset if state is not None else -1)
        if new_hw <= plog.high_watermark:
            return False
        plog.update_high_watermark(new_hw)
        return True

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int) -> bool:
        """A follower fetched at ``fetch_offset`` (= its LEO); True if the HW moved.

        Issue 4 adds ``maybe_expand_isr`` here (a follower reaching the HW
        rejoins the ISR through AlterPartition).
        """
        state = self.followers.get(replica_id)
        if state is None or not self.is_leader:
            return False
        now = self.clock()
        state.log_end_offset = fetch_offset
        state.last_fetch_ms = now
        if fetch_offset >= self.log_end_offset:
            state.last_caught_up_ms = now
        return self.maybe_increment_high_watermark()

    def out_of_sync_replicas(self, max_lag_ms: int) -> set[int]:
        """ISR followers that have not caught up within ``max_lag_ms`` (issue 4's shrink input)."""
        now = self.clock()
        return {r for r, s in self.followers.items()
                if r in self.isr and now - s.last_caught_up_ms > max_lag_ms}

    def check_enough_replicas_reach_offset(self, required_offset: int,
                                           min_insync_replicas: int) -> tuple[bool, int]:
        """DelayedProduce's question: (done, error) for an acks=all append ending before
        ``required_offset`` (Kafka ``checkEnoughReplicasReachOffset``)."""
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

    def fetch_upper_bound(self, replica_id: int, isolation: int) -> int | None:
        if replica_id >= 0:
            return None
        return self.last_stable_offset if isolation == READ_COMMITTED else self.high_watermark


def _validate(data: bytes | bytearray | memoryview, max_message_bytes: int) -> list[BatchHeader]:
    """records.validate plus the max.message.bytes bound, mapped to Kafka's error codes."""
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
    return headers
