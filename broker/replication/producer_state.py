"""Idempotent producer state of one partition (Kafka ``ProducerStateManager``).

Per producer id the partition remembers the producer epoch and the metadata
of its last five batches (first/last sequence, first/last offset, timestamp),
which is exactly what a producer with max.in.flight <= 5 may retry.

Rules for a client batch with a producer id, in Kafka 3.9's order
(``UnifiedLog.analyzeAndValidateProducerState`` then ``ProducerAppendInfo``):

1. Duplicate: same epoch and the exact sequence range of one of the five
   remembered batches -> nothing is appended and the producer is answered
   with the ORIGINAL offsets, error NONE (not DUPLICATE_SEQUENCE_NUMBER).
2. Epoch older than the remembered one -> INVALID_PRODUCER_EPOCH.
3. New epoch: the first sequence must be 0, unless the producer is unknown
   here (then anything is accepted) -> else OUT_OF_ORDER_SEQUENCE_NUMBER.
4. Same epoch: the first sequence must follow the last one (wrapping from
   Int32.MAX to 0) -> else OUT_OF_ORDER_SEQUENCE_NUMBER; but a batch behind the
   producer's next one, which was refused unwritten a moment ago, gets that refusal's
   error (``note_refused``: librdkafka#4953). A producer whose
   state was removed (unknown id) is accepted with any sequence, as Kafka
   3.9 does (UNKNOWN_PRODUCER_ID is no longer returned).

Replicated and reloaded batches skip the checks and just update the state,
which is how ``rebuild`` restores de-duplication after a restart: it reads
batch headers, and of control batches the marker type.

Transactions (Kafka's ongoingTxns / unreplicatedTxns):

* a transactional data batch opens the producer's transaction at its first
  offset unless one is open (``ongoing``: producer id -> first offset);
* an end-transaction marker (a control batch: COMMIT or ABORT) closes it:
  the ``CompletedTxn`` (first offset, marker offset, aborted?) is returned, so
  that the partition records an abort in the ``.txnindex``, and it stays
  *unreplicated* until the high watermark passes its marker;
* the first unstable offset is the smallest first offset among the open and
  the unreplicated transactions; the partition's last stable offset (LSO) is
  min(first unstable offset, high watermark). Nothing at or past the LSO may
  be read by a read_committed consumer.

Client-side rules for transactions (in ``check_client_batch``): a producer
with an open transaction may not write a non-transactional batch
(INVALID_TXN_STATE); markers come from the coordinator and are checked by
``check_marker`` (an epoch older than the producer's is INVALID_PRODUCER_EPOCH).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from protocol.errors import ErrorCode, KafkaError
from protocol.records import CONTROL_ABORT, BatchHeader
from storage.producer_snapshot import SnapshotEntry

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
INT32_MAX = 0x7FFFFFFF


def last_sequence(header: BatchHeader) -> int:
    """Sequence of the batch's last record (Kafka ``DefaultRecordBatch.incrementSequence``)."""
    seq = header.base_sequence + header.last_offset_delta
    return seq - INT32_MAX - 1 if seq > INT32_MAX else seq


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def _behind(first: int, later: int) -> bool:
    """``later`` comes after ``first`` in a producer's sequence (which wraps at Int32.MAX),
    within a pipeline's reach (well under half the sequence space)."""
    return 0 < (later - first) % (INT32_MAX + 1) < (1 << 30)


# Built per request and never changed afterwards; not frozen=True, whose __init__
# sets each field through object.__setattr__ (5x the cost: 2 µs for 8 fields here).
@dataclass(slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    last_timestamp: int = -1
    coordinator_epoch: int = -1        # of the last marker (snapshots keep it)
    markers: int = 0                   # markers seen here (KIP-890's verification guard)
    # the producer's next batch, refused before it was written: (its base sequence, the
    # error it got); the batches pipelined behind it get that error too instead of
    # OUT_OF_ORDER_SEQUENCE_NUMBER (see ProducerStateManager.note_refused). Cleared by
    # the next batch written; not in snapshots (a restart forgets it: Kafka's answer then)
    refused: tuple[int, int] | None = None

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def bump_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self.batches.clear()
            self.epoch = epoch

    def add(self, epoch: int, meta: BatchMetadata) -> None:
        self.bump_epoch(epoch)
        self.batches.append(meta)
        self.last_timestamp = meta.timestamp
        self.refused = None


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction its marker just ended: data from ``first_offset``, the marker at
    ``last_offset``."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class ProducerStateManager:
    """Producer entries of one partition, keyed by producer id, and its transactions."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}              # producer id -> first offset of its txn
        self.unreplicated: list[CompletedTxn] = []     # ended, marker not yet below the HW

    def __len__(self) -> int:
        return len(self.producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self.producers.get(producer_id)

    def duplicate_of(self, header: BatchHeader) -> BatchMetadata | None:
        """The batch already appended that ``header`` repeats exactly (same producer,
        epoch and sequences), or None; never raises (check_client_batch's rule 1 alone)."""
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return None
        return entry.find_duplicate(header.producer_epoch, header.base_sequence,
                                    last_sequence(header))

    def note_refused(self, header: BatchHeader, error: int) -> None:
        """``header``'s batch was refused before the sequence checks, so not written
        (NOT_ENOUGH_REPLICAS, NOT_LEADER_OR_FOLLOWER). When it is the producer's next
        batch, the batches pipelined behind it (up to max.in.flight - 1) are answered the
        same error until it is written, where Kafka answers them
        OUT_OF_ORDER_SEQUENCE_NUMBER: librdkafka (up to 2.16 at least) takes that answer
        to a batch behind a failed one as a reason to bump its epoch and renumber the
        unacknowledged messages of *every* partition, which writes twice those already in
        a log under the old epoch (confluentinc/librdkafka#4953; seen in ``make fault``:
        the copy had the next epoch and sequence 0). Retried in order, the refused batch
        goes first and the others follow it in sequence. The Java client retries either
        answer without a bump."""
        entry = self.producers.get(header.producer_id)
        if (entry is not None and entry.batches and header.producer_epoch == entry.epoch
                and _in_sequence(entry.last_seq, header.base_sequence)):
            entry.refused = (header.base_sequence, error)

    def check_client_batch(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate a client batch (rules 1-4 above) before it is appended.

        Returns the original batch's metadata for a duplicate (answer with it,
        append nothing), None when the batch may be appended; raises
        KafkaError(INVALID_PRODUCER_EPOCH / OUT_OF_ORDER_SEQUENCE_NUMBER).
        """
        pid, epoch, first_seq = header.producer_id, header.producer_epoch, header.base_sequence
        entry = self.producers.get(pid)
        if entry is None:
            return None  # unknown producer: any sequence is accepted (Kafka 3.9)
        duplicate = entry.find_duplicate(epoch, first_seq, last_sequence(header))
        if duplicate is not None:
            return duplicate
        if not header.is_transactional and pid in self.ongoing and epoch >= entry.epoch:
            raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                             f"producer {pid} wrote a non-transactional batch inside its "
                             f"transaction")
        if epoch < entry.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"producer {pid} epoch {epoch} is older than {entry.epoch}")
        if epoch != entry.epoch:
            if first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"producer {pid} new epoch {epoch} starts at sequence {first_seq}, not 0")
        elif entry.batches and not _in_sequence(entry.last_seq, first_seq):
            refused = entry.refused
            if refused is not None and _behind(refused[0], first_seq):
                raise KafkaError(refused[1], f"producer {pid}: sequence {first_seq} waits for "
                                             f"{refused[0]}, refused before it was written")
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"producer {pid}: sequence {first_seq} does not follow {entry.last_seq}")
        return None

    def check_coordinator_batch(self, header: BatchHeader) -> None:
        """A coordinator's transactional write for a producer (TxnOffsetCommit's
        offsets): no sequence checks, but an epoch older than the producer's (a marker
        bumped it: the transaction was fenced or timed out) is INVALID_PRODUCER_EPOCH,
        as Kafka's AppendOrigin.COORDINATOR. Without this a zombie's offsets would be
        written after its transaction's abort marker and stay pending for ever."""
        entry = self.producers.get(header.producer_id)
        if entry is not None and header.producer_epoch < entry.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"producer {header.producer_id} epoch {header.producer_epoch} is "
                             f"older than {entry.epoch}")

    def check_marker(self, producer_id: int, producer_epoch: int,
                     coordinator_epoch: int = -1) -> None:
        """A coordinator's marker for ``producer_id`` at ``producer_epoch`` may be written:
        raises KafkaError(INVALID_PRODUCER_EPOCH) when the producer moved past it, and
        TRANSACTION_COORDINATOR_FENCED when an earlier marker came from a newer
        coordinator (a zombie coordinator's markers, as Kafka's appendEndTxnMarker)."""
        entry = self.producers.get(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"marker for producer {producer_id} at epoch {producer_epoch}, "
                             f"older than {entry.epoch}")
        if entry is not None and coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                             f"marker for producer {producer_id} from coordinator epoch "
                             f"{coordinator_epoch}, older than {entry.coordinator_epoch}")

    def update(self, header: BatchHeader, first_offset: int, timestamp: int,
               marker: int | None = None, coordinator_epoch: int = -1) -> CompletedTxn | None:
        """Record an appended (or replicated, or reloaded) batch at ``first_offset``;
        ``marker`` is a control batch's type (CONTROL_ABORT / CONTROL_COMMIT) and
        ``coordinator_epoch`` the epoch its coordinator wrote in it. Returns the
        transaction a marker ended, if one was open."""
        pid = header.producer_id
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(pid)
        if header.is_control:  # an end-transaction marker: the epoch moves, the txn ends
            entry.bump_epoch(header.producer_epoch)
            entry.coordinator_epoch = max(entry.coordinator_epoch, coordinator_epoch)
            entry.markers += 1
            entry.last_timestamp = timestamp
            start = self.ongoing.pop(pid, None)
            if start is None or marker is None:
                return None
            done = CompletedTxn(pid, start, first_offset, marker == CONTROL_ABORT)
            self.unreplicated.append(done)
            return done
        if header.producer_epoch < entry.epoch:
            return None  # a zombie's batch that replication kept: Kafka only warns
        entry.add(header.producer_epoch, BatchMetadata(
            header.base_sequence, last_sequence(header), first_offset,
            first_offset + header.last_offset_delta, timestamp))
        if header.is_transactional:
            self.ongoing.setdefault(pid, first_offset)
        return None

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of the earliest transaction not yet decided below the HW
        (open, or ended by a marker the HW has not passed); None when there is none.
        Forgets the ended transactions the HW has passed."""
        if not self.ongoing and not self.unreplicated:
            return None                # the common case, asked on every fetch
        if self.unreplicated:
            self.unreplicated = [t for t in self.unreplicated if t.last_offset >= high_watermark]
        firsts = [t.first_offset for t in self.unreplicated]
        if self.ongoing:
            firsts.append(min(self.ongoing.values()))
        return min(firsts) if firsts else None

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LSO an aborted-transaction index entry records: the first offset of the
        earliest transaction still open (``completed`` is no longer), else the offset
        after the marker (Kafka's ProducerStateManager.lastStableOffset)."""
        return min(self.ongoing.values(), default=completed.last_offset + 1)

    def rebuild(self, batches: Iterable[tuple[BatchHeader, tuple[int, int] | None]], *,
                reset: bool = True) -> int:
        """Replace the state from the log's batches (header, and of a control batch its
        (marker type, coordinator epoch)), in offset order; batches seen.
        ``reset=False`` replays them on top of a loaded snapshot instead."""
        if reset:
            self.producers.clear()
            self.ongoing.clear()
            self.unreplicated.clear()
        seen = 0
        for header, marker in batches:
            seen += 1
            if header.producer_id >= 0:
                kind, epoch = marker if marker is not None else (None, -1)
                self.update(header, header.base_offset, header.max_timestamp, kind, epoch)
        return seen

    def snapshot_entries(self) -> list[SnapshotEntry]:
        """The state as a snapshot file holds it (``storage.producer_snapshot``): each
        producer's epoch, last batch and open transaction's first offset."""
        out = []
        for pid, e in self.producers.items():
            last = e.batches[-1] if e.batches else None
            out.append(SnapshotEntry(
                pid, e.epoch, last.last_seq if last else -1, last.last_offset if last else -1,
                last.last_offset - last.first_offset if last else 0,
                last.timestamp if last else e.last_timestamp, e.coordinator_epoch,
                self.ongoing.get(pid, -1)))
        return out

    def load_snapshot(self, entries: Iterable[SnapshotEntry]) -> None:
        """Replace the state by a snapshot's (then ``rebuild(..., reset=False)`` replays
        the batches after the snapshot's offset)."""
        self.producers.clear()
        self.ongoing.clear()
        self.unreplicated.clear()
        for s in entries:
            e = self.producers[s.producer_id] = ProducerEntry(s.producer_id, s.epoch)
            e.coordinator_epoch = s.coordinator_epoch
            e.last_timestamp = s.timestamp
            if s.last_offset >= 0:
                e.batches.append(BatchMetadata(
                    s.last_sequence - s.offset_delta, s.last_sequence,
                    s.last_offset - s.offset_delta, s.last_offset, s.timestamp))
            if s.current_txn_first_offset >= 0:
                self.ongoing[s.producer_id] = s.current_txn_first_offset

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers silent for ``producer.id.expiration.ms``; how many went."""
        doomed = [pid for pid, e in self.producers.items()
                  if now_ms - e.last_timestamp >= expiration_ms and pid not in self.ongoing]
        for pid in doomed:
            del self.producers[pid]
        return len(doomed)
