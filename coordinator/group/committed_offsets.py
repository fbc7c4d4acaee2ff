"""Committed offsets by group id, whatever the kind of the group (Kafka 4's
OffsetMetadataManager): classic groups, consumer groups and simple groups (standalone
commits) keep theirs here, so a group that changes kind (migration.py) or is
replaced keeps its offsets without anything being moved.

Per group id, one ``GroupOffsetState``:

    committed     (topic, partition) -> OffsetAndMetadata: what OffsetFetch answers;
                  written only by offset_records.replay of written bytes (a commit,
                  a tombstone) and by a transaction's COMMIT marker
    writing       (topic, partition) -> commits of it being written (they do not
                  expire meanwhile)
    pending_txn   producer id -> offsets written in its open transaction (moved into
                  ``committed`` by its COMMIT marker, dropped by an ABORT)

Invariants: an id has an entry only while it holds something (``drop_if_empty``
after a write that failed); an entry lives in the coordinator's partition of its
id and goes with it (``unload``). Every id with an entry names a group in the
GroupMap too (a commit into an unknown id makes a simple classic group first, as
Kafka does), except for the instant of a deletion, which drops both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from coordinator.group.classic.offsets_topic import OffsetAndMetadata

TopicPartition = tuple[str, int]
# when an offset's retention starts (the group's rule): the offset -> ms
RetentionBase = Callable[[OffsetAndMetadata], int]


@dataclass
class GroupOffsetState:
    """One group's committed offsets and the writes of them in flight."""

    committed: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    writing: Counter[TopicPartition] = field(default_factory=Counter)
    pending_txn: dict[int, dict[TopicPartition, OffsetAndMetadata]] = field(
        default_factory=dict)

    def is_empty(self) -> bool:
        return not self.committed and not +self.writing and not self.pending_txn

    def unstable_partitions(self) -> set[TopicPartition]:
        """Partitions with offsets in an open transaction."""
        return {tp for pending in self.pending_txn.values() for tp in pending}

    def expired(self, now_ms: int, retention_ms: int, base: RetentionBase,
                keep_topics: set[str]) -> list[TopicPartition]:
        """The offsets past ``retention_ms`` (Kafka's removeExpiredOffsets): counted
        from ``base`` (the group's rule, group_metadata.retention_rule), except an
        offset with its own expire timestamp (old clients), which expires then.
        Offsets of ``keep_topics`` (subscribed) and offsets being written never do."""
        out = []
        for tp, o in self.committed.items():
            if tp[0] in keep_topics or self.writing[tp]:
                continue
            if o.expire_timestamp >= 0:
                if now_ms >= o.expire_timestamp:
                    out.append(tp)
            elif now_ms - base(o) >= retention_ms:
                out.append(tp)
        return out


class CommittedOffsets:
    """Group id -> GroupOffsetState, for the groups of the partitions served here."""

    def __init__(self) -> None:
        self._by_group: dict[str, GroupOffsetState] = {}

    def get(self, group_id: str) -> GroupOffsetState | None:
        return self._by_group.get(group_id)

    def of(self, group_id: str) -> GroupOffsetState:
        """The id's entry, made empty if it has none."""
        entry = self._by_group.get(group_id)
        if entry is None:
            entry = self._by_group[group_id] = GroupOffsetState()
        return entry

    def committed(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        """The id's committed offsets (an empty dict when it has none; do not write)."""
        entry = self._by_group.get(group_id)
        return entry.committed if entry is not None else {}

    def has_offsets(self, group_id: str) -> bool:
        entry = self._by_group.get(group_id)
        return entry is not None and not entry.is_empty()

    def drop(self, group_id: str) -> None:
        self._by_group.pop(group_id, None)

    def drop_if_empty(self, group_id: str) -> None:
        entry = self._by_group.get(group_id)
        if entry is not None and entry.is_empty():
            del self._by_group[group_id]

    def unload(self, in_partition: Callable[[str], bool]) -> None:
        """Forget every id for which ``in_partition`` holds (a partition resigned)."""
        for group_id in [g for g in self._by_group if in_partition(g)]:
            del self._by_group[group_id]

    def items(self) -> Iterator[tuple[str, GroupOffsetState]]:
        """(group id, offsets), a snapshot: callers drop entries while they walk."""
        return iter(list(self._by_group.items()))

    def __contains__(self, group_id: str) -> bool:
        return group_id in self._by_group


__all__ = ["CommittedOffsets", "GroupOffsetState", "RetentionBase", "TopicPartition"]
