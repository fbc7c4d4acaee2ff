"""``ClassicGroups``: what the consumer-group side (coordinator/group/consumer/) and
the group facts use of the classic GroupCoordinator, as a Protocol. The consumer side
imports this leaf rather than the coordinator, so the classic coordinator can own a
ConsumerGroupCoordinator without an import circle; GroupCoordinator satisfies it.

What the consumer side needs: the coordinator runtime both sides stand on (the log
seam, partition ownership, the clock, tasks), the one map of groups of both kinds
(``group_map``; ``groups`` is its classic view), the committed offsets of both kinds
by group id (``committed``), the group-id status check (``status``), the settings, the rebalance histories, and the few
classic steps a migration
performs (``handle_join``, ``extend_session``, ``maybe_prepare_rebalance``); the
committed offsets' writes (``offsets``: store, remove); ``consumer`` is the consumer groups' side as
the classic side's admin paths see it (``ConsumerGroups``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from coordinator.group.classic.coordinator_types import CoordinatorConfig, JoinRequest
    from coordinator.group.classic.group_metadata import GroupMetadata, JoinCallback, \
        MemberMetadata
    from coordinator.group.classic.offsets_topic import OffsetAndMetadata
    from coordinator.group.committed_offsets import CommittedOffsets
    from coordinator.group.group_map import GroupMap, KindView
    from coordinator.group.consumer.model import ConsumerGroup
    from coordinator.group.consumer.records import Record
    from coordinator.group.why.group_history import GroupHistories
    from coordinator.runtime.purgatory import Purgatory
    from coordinator.runtime.runtime import CoordinatorRuntime

T = TypeVar("T")
TopicPartition = tuple[str, int]
KeyValue = tuple[bytes, bytes | None]


class ConsumerGroups(Protocol):
    """The KIP-848 groups as the admin paths (admin_ops) see them."""

    groups: KindView[ConsumerGroup]

    async def locked(self, group_id: str, fn: Callable[[], Awaitable[T]]) -> T: ...

    async def write_and_apply(self, group_id: str, records: list[Record],
                              extra: list[KeyValue] | None = None, *,
                              fenced: str | None = None) -> int: ...


class OffsetStore(Protocol):
    """The writes of committed offsets (offset_ops.GroupOffsets) as the consumer side
    uses them: a consumer group's offsets are written and removed there."""

    async def store(self, group_id: str, offsets: dict[TopicPartition, OffsetAndMetadata],
                    producer: tuple[int, int] | None = None) -> dict[TopicPartition, int]: ...

    async def remove(self, group_id: str, partitions: list[TopicPartition]) -> tuple[int, int]: ...


class ClassicGroups(Protocol):
    runtime: CoordinatorRuntime      # the log seam, ownership, clock, tasks (shared)
    group_map: GroupMap              # every group, either kind
    groups: KindView[GroupMetadata]  # the classic ones
    committed: CommittedOffsets      # committed offsets by group id, either kind
    config: CoordinatorConfig
    why: GroupHistories
    rebalances: Purgatory
    heartbeats: Purgatory

    @property
    def consumer(self) -> ConsumerGroups: ...

    def partition_for(self, group_id: str) -> int: ...

    def status(self, group_id: str | None, allow_empty_id: bool = False) -> int | None: ...

    def handle_join(self, req: JoinRequest, respond: JoinCallback) -> None: ...

    def extend_session(self, group: GroupMetadata, member: MemberMetadata,
                       timeout_ms: int | None = None) -> None: ...

    def maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None: ...

    @property
    def offsets(self) -> OffsetStore: ...
