"""One map of every group this coordinator serves, classic or consumer (Kafka 4's
GroupMetadataManager.groups): a group id names one group of one kind at a time.

``GroupMap.classic`` and ``GroupMap.consumer`` are views of the one map, each a
MutableMapping of its kind only (group id -> GroupMetadata / ConsumerGroup): the
classic state machine reads and writes ``classic``, the consumer side's replay
writes ``consumer``, and neither can put a group under an id the other kind holds
(``GroupKindConflict``). A conversion between the kinds (migration.py) removes the
old group before the new one is installed, and so does a consumer group that takes
the id of an empty classic group (Kafka 4's getOrMaybeCreatePersistedConsumerGroup:
a *simple* classic group -- Empty, no protocol type, made only to own standalone
committed offsets -- is replaced; an empty one with a protocol type gets its
metadata tombstone first). Committed offsets are not here: they are keyed by group id in
committed_offsets.py and so survive a change of kind untouched.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Generic, TypeVar

from coordinator.group.classic.group_metadata import GroupMetadata
from coordinator.group.consumer.model import ConsumerGroup

AnyGroup = GroupMetadata | ConsumerGroup
G = TypeVar("G", GroupMetadata, ConsumerGroup)


class GroupKindConflict(RuntimeError):
    """A group of one kind was put under an id that a group of the other kind holds."""


class KindView(MutableMapping[str, G], Generic[G]):
    """The groups of one kind in a GroupMap, as a mapping of that kind only."""

    def __init__(self, groups: dict[str, AnyGroup], kind: type[G]) -> None:
        self._groups = groups
        self._kind: type[G] = kind

    def __getitem__(self, group_id: str) -> G:
        group = self._groups[group_id]
        if not isinstance(group, self._kind):
            raise KeyError(group_id)
        return group

    def __setitem__(self, group_id: str, group: G) -> None:
        current = self._groups.get(group_id)
        if current is not None and not isinstance(current, self._kind):
            raise GroupKindConflict(f"group {group_id} is a {type(current).__name__}, "
                                    f"not a {self._kind.__name__}")
        self._groups[group_id] = group

    def __delitem__(self, group_id: str) -> None:
        self[group_id]                   # KeyError unless it is of this kind
        del self._groups[group_id]

    def __iter__(self) -> Iterator[str]:
        # a snapshot: callers remove groups while they walk them
        return iter([gid for gid, g in self._groups.items() if isinstance(g, self._kind)])

    def __len__(self) -> int:
        return sum(1 for g in self._groups.values() if isinstance(g, self._kind))

    def __contains__(self, group_id: object) -> bool:
        return isinstance(self._groups.get(group_id), self._kind)  # type: ignore[call-overload]

    def get(self, group_id: str, default: G | None = None) -> G | None:  # type: ignore[override]
        group = self._groups.get(group_id)
        return group if isinstance(group, self._kind) else default


class GroupMap:
    """Group id -> the one group of that id (either kind)."""

    def __init__(self) -> None:
        self._groups: dict[str, AnyGroup] = {}
        self.classic: KindView[GroupMetadata] = KindView(self._groups, GroupMetadata)
        self.consumer: KindView[ConsumerGroup] = KindView(self._groups, ConsumerGroup)

    def get(self, group_id: str) -> AnyGroup | None:
        return self._groups.get(group_id)

    def __contains__(self, group_id: str) -> bool:
        return group_id in self._groups

    def __len__(self) -> int:
        return len(self._groups)


__all__ = ["AnyGroup", "GroupKindConflict", "GroupMap", "KindView"]
