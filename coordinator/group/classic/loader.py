"""The group coordinator's side of ``__consumer_offsets``: reading a partition back
into memory when this broker becomes its leader, through the ``OffsetsLog`` seam
(``coordinator/runtime/log_seam.py``).

Loading (Kafka's GroupMetadataManager.doLoadGroupsAndOffsets), per record in
log order, into a ``LoadedPartition``:
  1. offset-commit key, value -> the group's offset for that partition;
     tombstone -> the offset is removed (offset_records.replay, as the
     coordinator applies its own writes);
  2. group-metadata key, value -> the group's latest metadata;
     tombstone -> the group is removed (its offsets stay unless tombstoned too);
  3. consumer group records (KIP-848, key versions 3-8 and 16) are decoded by
     coordinator/group/consumer/record_codec.py and replayed (consumer_group/replay.py)
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
from collections.abc import Iterable
from dataclasses import dataclass, field

from coordinator.group.consumer import record_codec
from coordinator.group.consumer.model import ConsumerGroup
from coordinator.group.consumer.replay import replay as replay_consumer_record
from coordinator.group.classic import offset_records
from coordinator.group.classic import offsets_topic as ot
from coordinator.runtime.log_seam import KeyValue, LogEntry, TxnEnd, TxnRecord

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"

TopicPartition = tuple[str, int]


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
            group = self.offsets.setdefault(k.group, {})
            offset_records.replay(group, k, value)
            if not group:
                del self.offsets[k.group]
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


__all__ = ["OFFSETS_TOPIC", "LoadedPartition"]
