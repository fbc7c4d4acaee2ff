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
  3. other key versions are ignored; control and transactional batches are
     skipped (no transactional offset commits yet).
The whole log is read to its end (Kafka reads to the log end, not the high
watermark: the new leader's log is what will be committed).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from broker.coordinator import offsets_topic as ot
from protocol.records import BatchBuilder, iter_batches, iter_records

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
LOAD_BUFFER_SIZE = 5 * 1024 * 1024        # offsets.load.buffer.size

KeyValue = tuple[bytes, bytes | None]
TopicPartition = tuple[str, int]


class OffsetsLog(Protocol):
    async def append(self, partition: int, records: list[KeyValue], *, acks: int,
                     timeout_ms: int, timestamp: int) -> int:
        """Append one batch; -> the partition's error code (0 = written as asked)."""
        ...

    def read_chunks(self, partition: int) -> Iterator[list[KeyValue]] | None:
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

    def apply(self, key: bytes, value: bytes | None) -> None:
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

    def apply_all(self, records: Iterable[KeyValue]) -> None:
        for key, value in records:
            self.apply(key, value)


def build_batch(records: list[KeyValue], timestamp: int) -> bytearray:
    """One uncompressed magic-2 batch, no producer id (producer id -1)."""
    builder = BatchBuilder()
    for key, value in records:
        builder.append(key, value, timestamp)
    return builder.build()


class BrokerOffsetsLog:
    """``OffsetsLog`` over the broker's replica manager and log manager, for
    ``topic`` (__consumer_offsets; the transaction coordinator's __transaction_state)."""

    def __init__(self, broker: Any, topic: str = OFFSETS_TOPIC) -> None:
        self.broker = broker
        self.topic = topic

    async def append(self, partition: int, records: list[KeyValue], *, acks: int,
                     timeout_ms: int, timestamp: int) -> int:
        tp = (self.topic, partition)
        results = await self.broker.replicas.append_records(
            acks, timeout_ms, {tp: bytes(build_batch(records, timestamp))})
        return int(results[tp].error)

    def read_chunks(self, partition: int) -> Iterator[list[KeyValue]] | None:
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


def _chunks(plog: Any, topic: str = OFFSETS_TOPIC) -> Iterator[list[KeyValue]]:
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, LOAD_BUFFER_SIZE, None).slice.read()
        chunk: list[KeyValue] = []
        advanced = False
        for pos, header in iter_batches(data):
            advanced = True
            offset = header.base_offset + header.last_offset_delta + 1
            if header.is_control or header.is_transactional:
                continue
            for record in iter_records(data, pos):
                if record.key is None:
                    log.warning("%s: record at offset %d has no key; skipped", topic,
                                record.offset)
                    continue
                chunk.append((bytes(record.key),
                              None if record.value is None else bytes(record.value)))
        if not advanced:
            break
        yield chunk
