"""Committed offsets as records: the one writer of a group's committed offsets
(``GroupOffsetState.committed``, committed_offsets.py), as Kafka 4's
OffsetMetadataManager.replay.

Every change of committed offsets is written to ``__consumer_offsets`` first -- an
offset commit value, or for a removal (OffsetDelete, DeleteGroups, expiry) its
tombstone -- and applied only once written, by ``replay_written``, from the bytes
written, decoded as a load decodes them: the offsets a coordinator serves and the
offsets the next one loads after a failover cannot drift apart, and a write that
fails changes nothing. Loading (loader.py) applies the same ``replay`` in log order.

Per record:

    offset key, value       offsets[(topic, partition)] = the decoded value
    offset key, tombstone   that offset is removed (absent: nothing to do, so a
                            record replayed twice is harmless)
    any other key           not an offset: skipped here (group metadata is the
                            classic state machine's own, written on SyncGroup and
                            never replayed into a live group -- Kafka 4 writes classic
                            group metadata with replayRecords=false too)

Transactional offsets (TxnOffsetCommit) replay into the producer's pending offsets
(``GroupOffsetState.pending_txn``); its COMMIT marker, itself a record of the
log, moves them into the committed ones (txn_offset_ops.py, loader.py's TxnEnd).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from coordinator.group.classic import offsets_topic as ot
from coordinator.runtime.log_seam import KeyValue

TopicPartition = tuple[str, int]


def commit_records(group_id: str, offsets: Mapping[TopicPartition, ot.OffsetAndMetadata]
                   ) -> list[KeyValue]:
    """One offset commit record per partition."""
    return [(ot.offset_commit_key(group_id, tp[0], tp[1]), ot.offset_commit_value(o))
            for tp, o in offsets.items()]


def tombstones(group_id: str, partitions: Iterable[TopicPartition]) -> list[KeyValue]:
    """The records that remove these partitions' committed offsets."""
    return [(ot.offset_commit_key(group_id, tp[0], tp[1]), None) for tp in partitions]


def replay(offsets: dict[TopicPartition, ot.OffsetAndMetadata], key: ot.OffsetKey,
           value: bytes | memoryview | None) -> None:
    """Apply one offset record to one group's ``offsets``."""
    tp = (key.topic, key.partition)
    if value is None:
        offsets.pop(tp, None)
    else:
        offsets[tp] = ot.read_offset_value(value)


def replay_written(offsets: dict[TopicPartition, ot.OffsetAndMetadata], group_id: str,
                   records: Iterable[KeyValue]) -> None:
    """Apply records written for ``group_id``, decoded from their bytes; records that
    are not that group's offsets (its metadata tombstone) are skipped."""
    for key, value in records:
        k = ot.read_key(key)
        if isinstance(k, ot.OffsetKey) and k.group == group_id:
            replay(offsets, k, value)


__all__ = ["commit_records", "replay", "replay_written", "tombstones"]
