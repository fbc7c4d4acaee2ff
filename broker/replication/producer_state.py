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
   Int32.MAX to 0) -> else OUT_OF_ORDER_SEQUENCE_NUMBER. A producer whose
   state was removed (unknown id) is accepted with any sequence, as Kafka
   3.9 does (UNKNOWN_PRODUCER_ID is no longer returned).

Replicated and reloaded batches skip the checks and just update the state,
which is how ``rebuild`` restores de-duplication after a restart: it reads
only batch headers, never records.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
INT32_MAX = 0x7FFFFFFF


def last_sequence(header: BatchHeader) -> int:
    """Sequence of the batch's last record (Kafka ``DefaultRecordBatch.incrementSequence``)."""
    seq = header.base_sequence + header.last_offset_delta
    return seq - INT32_MAX - 1 if seq > INT32_MAX else seq


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@dataclass(frozen=True, slots=True)
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

    def add(self, epoch: int, meta: BatchMetadata) -> None:
        if epoch != self.epoch:
            self.batches.clear()
            self.epoch = epoch
        self.batches.append(meta)
        self.last_timestamp = meta.timestamp


class ProducerStateManager:
    """Producer entries of one partition, keyed by producer id."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self.producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self.producers.get(producer_id)

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
        if epoch < entry.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"producer {pid} epoch {epoch} is older than {entry.epoch}")
        if epoch != entry.epoch:
            if first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"producer {pid} new epoch {epoch} starts at sequence {first_seq}, not 0")
        elif entry.batches and not _in_sequence(entry.last_seq, first_seq):
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"producer {pid}: sequence {first_seq} does not follow {entry.last_seq}")
        return None

    def update(self, header: BatchHeader, first_offset: int, timestamp: int) -> None:
        """Record an appended (or replicated, or reloaded) batch at ``first_offset``."""
        pid = header.producer_id
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(pid)
        if header.is_control:  # an end-transaction marker: only the epoch moves
            if header.producer_epoch != entry.epoch:
                entry.batches.clear()
                entry.epoch = header.producer_epoch
            entry.last_timestamp = timestamp
            return
        if header.producer_epoch < entry.epoch:
            return  # a zombie's batch that replication kept: Kafka only warns
        entry.add(header.producer_epoch, BatchMetadata(
            header.base_sequence, last_sequence(header), first_offset,
            first_offset + header.last_offset_delta, timestamp))

    def rebuild(self, headers: Iterable[BatchHeader]) -> int:
        """Replace the state from the log's batch headers (in offset order); batches seen."""
        self.producers.clear()
        seen = 0
        for header in headers:
            seen += 1
            if header.producer_id >= 0:
                self.update(header, header.base_offset, header.max_timestamp)
        return seen

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers silent for ``producer.id.expiration.ms``; how many went."""
        doomed = [pid for pid, e in self.producers.items()
                  if now_ms - e.last_timestamp >= expiration_ms]
        for pid in doomed:
            del self.producers[pid]
        return len(doomed)

    def truncate_and_reload(self, headers: Iterable[BatchHeader]) -> None:
        """After a follower truncation (issue 4): the state must match the shorter log."""
        self.rebuild(headers)
