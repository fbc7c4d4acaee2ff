"""The coordinator's side of ``__consumer_offsets``: reading a partition back into
memory when this broker becomes its leader, and the seam to the log.

``OffsetsLog`` is the seam (a fake in tests): ``append`` writes one batch of
records to a partition through the replica manager (so acks=-1 waits for the
ISR, as Kafka's coordinator writes); ``read_chunks`` walks a partition's local
log from its start to its end in pieces; ``leader_epoch`` says whether we lead
the partition now.

Loading (Kafka's GroupMetadataManager.doLoadGroupsAndOffsets), per record in
log order, into a ``LoadedPartition``:
  1. offset-commit key, value -> the group's offset for that partition;
     tombstone -> the offset is removed;
  2. group-metadata key, value -> the group's latest metadata;
     tombstone -> the group is removed (its offsets stay unless tombstoned too);
  3. consumer group records (KIP-848, key versions 3-8 and 16) are decoded by
     broker/consumer_group/record_codec.py and replayed (consumer_group/replay.py)
     into ``consumer_groups``, as the coordinator applied them when it wrote them;
     other key versions are ignored;
  4. transactional batches (TxnOffsetCommit) are held per producer id
     (``TxnRecord``) until that producer's marker (``TxnEnd``): a COMMIT applies
     them as in 1., an ABORT drops them; what is still open at the end of the
     log stays pending (``pending_txn``) so that a marker arriving later
     completes it.
The whole log is read to its end (Kafka reads to the log end, not the high
watermark: the new leader's log is what will be committed).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from broker.consumer_group import record_codec
from broker.consumer_group.model import ConsumerGroup
from broker.consumer_group.replay import replay as replay_consumer_record
from broker.coordinator import offsets_topic as ot
from protocol.records import CONTROL_COMMIT, BatchBuilder, iter_batches, iter_records, \
    marker_type

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
LOAD_BUFFER_SIZE = 5 * 1024 * 1024        # offsets.load.buffer.size

KeyValue = tuple[bytes, bytes | None]
TopicPartition = tuple[str, int]


class TxnRecord(NamedTuple):
    """A record of a transactional batch (written by TxnOffsetCommit)."""

    producer_id: int
    key: bytes
    value: bytes | None


class TxnEnd(NamedTuple):
    """A producer's COMMIT / ABORT marker."""

    producer_id: int
    commit: bool


# what read_chunks yields: plain records, and around transactions these two
LogEntry = KeyValue | TxnRecord | TxnEnd


class OffsetsLog(Protocol):
    async def append(self, partition: int, records: Sequence[KeyValue], *, acks: int,
                     timeout_ms: int, timestamp: int,
                     producer: tuple[int, int] | None = None) -> int:
        """Append one batch (transactional, of ``producer`` = (id, epoch), when given);
        -> the partition's error code (0 = written as asked)."""
        ...

    def read_chunks(self, partition: int) -> Iterator[list[LogEntry]] | None:
        """The partition's records in log order, a chunk at a time; None without a log."""
        ...

    def leader_epoch(self, partition: int) -> int | None:
        """Our leader epoch for the partition when we lead it, else None."""
        ...


@dataclass
class LoadedPartition:
    groups: dict[str, ot.StoredGroup] = field(default_factory=dict)
    removed_groups: set[str] = field(default_factory=set)
    offsets: dict[str, dict[TopicPartition, ot.OffsetAndMetadata]] = field(default_factory=dict)
    records: int = 0
    # producer id -> its open transaction's records (in log order)
    txn_records: dict[int, list[KeyValue]] = field(default_factory=dict)
    # KIP-848 consumer groups, replayed from their records (issue 19)
    consumer_groups: dict[str, ConsumerGroup] = field(default_factory=dict)

    def pending_txn(self) -> dict[str, dict[int, dict[TopicPartition, ot.OffsetAndMetadata]]]:
        """Offsets of transactions still open at the end of the log: group -> producer
        id -> offsets."""
        out: dict[str, dict[int, dict[TopicPartition, ot.OffsetAndMetadata]]] = {}
        for pid, records in self.txn_records.items():
            for key, value in records:
                k = ot.read_key(key)
                if isinstance(k, ot.OffsetKey) and value is not None:
                    out.setdefault(k.group, {}).setdefault(pid, {})[(k.topic, k.partition)] = \
                        ot.read_offset_value(value)
        return out

    def apply(self, key: bytes, value: bytes | None) -> None:
        if record_codec.is_consumer_group_key(key):
            self.records += 1
            try:
                record = record_codec.decode(key, value)
            except record_codec.DECODE_ERRORS as e:
                log.warning("undecodable consumer group record in %s (%s); skipped",
                            OFFSETS_TOPIC, e)
                return
            if record is not None:
                replay_consumer_record(self.consumer_groups, record)
            return
        k = ot.read_key(key)
        self.records += 1
        if isinstance(k, ot.OffsetKey):
            tp = (k.topic, k.partition)
            if value is None:
                group = self.offsets.get(k.group)
                if group is not None:
                    group.pop(tp, None)
                    if not group:
                        del self.offsets[k.group]
            else:
                self.offsets.setdefault(k.group, {})[tp] = ot.read_offset_value(value)
        elif isinstance(k, ot.GroupKey):
            if value is None:
                self.groups.pop(k.group, None)
                self.removed_groups.add(k.group)
            else:
                self.removed_groups.discard(k.group)
                self.groups[k.group] = ot.read_group_value(value)
        else:
            log.warning("unknown key version %d in %s; ignored", k.version, OFFSETS_TOPIC)

    def apply_all(self, entries: Iterable[LogEntry]) -> None:
        for entry in entries:
            if isinstance(entry, TxnRecord):
                self.txn_records.setdefault(entry.producer_id, []).append(
                    (entry.key, entry.value))
            elif isinstance(entry, TxnEnd):
                held = self.txn_records.pop(entry.producer_id, [])
                if entry.commit:
                    for key, value in held:
                        self.apply(key, value)
            else:
                self.apply(*entry)


def build_batch(records: Sequence[KeyValue], timestamp: int,
                producer: tuple[int, int] | None = None) -> bytearray:
    """One uncompressed magic-2 batch: no producer id, or a transactional batch of
    ``producer`` (id, epoch) with base sequence 0 (as Kafka's coordinator writes it;
    coordinator appends skip sequence checks)."""
    if producer is None:
        builder = BatchBuilder()
    else:
        builder = BatchBuilder(producer_id=producer[0], producer_epoch=producer[1],
                               base_sequence=0, transactional=True)
    for key, value in records:
        builder.append(key, value, timestamp)
    return builder.build()


class BrokerOffsetsLog:
    """``OffsetsLog`` over the broker's replica manager and log manager, for
    ``topic`` (__consumer_offsets; the transaction coordinator's __transaction_state)."""

    def __init__(self, broker: Any, topic: str = OFFSETS_TOPIC) -> None:
        self.broker = broker
        self.topic = topic

    async def append(self, partition: int, records: Sequence[KeyValue], *, acks: int,
                     timeout_ms: int, timestamp: int,
                     producer: tuple[int, int] | None = None) -> int:
        tp = (self.topic, partition)
        results = await self.broker.replicas.append_records(
            acks, timeout_ms, {tp: bytes(build_batch(records, timestamp, producer))},
            from_coordinator=producer is not None)
        return int(results[tp].error)

    def read_chunks(self, partition: int) -> Iterator[list[LogEntry]] | None:
        logs = self.broker.logs
        plog = logs.get_log(self.topic, partition) if logs is not None else None
        if plog is None:
            return None
        return _chunks(plog, self.topic)

    def leader_epoch(self, partition: int) -> int | None:
        replicas = self.broker.replicas
        p = replicas.partition(self.topic, partition) if replicas is not None else None
        if p is None or not p.is_leader:
            return None
        return int(p.leader_epoch)


def _chunks(plog: Any, topic: str = OFFSETS_TOPIC) -> Iterator[list[LogEntry]]:
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, LOAD_BUFFER_SIZE, None).slice.read()
        chunk: list[LogEntry] = []
        advanced = False
        for pos, header in iter_batches(data):
            advanced = True
            offset = header.base_offset + header.last_offset_delta + 1
            if header.is_control:
                kind = marker_type(data, pos)
                if kind is not None:
                    chunk.append(TxnEnd(header.producer_id, kind == CONTROL_COMMIT))
                continue
            for record in iter_records(data, pos):
                if record.key is None:
                    log.warning("%s: record at offset %d has no key; skipped", topic,
                                record.offset)
                    continue
                value = None if record.value is None else bytes(record.value)
                chunk.append(TxnRecord(header.producer_id, bytes(record.key), value)
                             if header.is_transactional else (bytes(record.key), value))
        if not advanced:
            break
        yield chunk
