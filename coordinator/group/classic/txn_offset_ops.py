"""Offsets committed inside a transaction (``TxnOffsets``, the group coordinator's
``txn`` collaborator): TxnOffsetCommit
and the markers that end it (Kafka's GroupCoordinator.handleTxnCommitOffsets,
GroupMetadataManager.storeOffsets for a producer, and handleTxnCompletion).

1. ``commit``: group status; an unknown group is created Empty (as
   Kafka does); KIP-447 fencing when the request names a member or generation
   (Dead -> COORDINATOR_NOT_AVAILABLE, an unknown member UNKNOWN_MEMBER_ID, a
   static member's instance id FENCED_INSTANCE_ID, another generation
   ILLEGAL_GENERATION). Then the committed offsets' ``store`` (offset_ops)
   writes them as one *transactional* batch of the producer (acks=all;
   OFFSET_METADATA_TOO_LARGE as there), and they are held in the group id's
   ``committed`` entry's ``pending_txn[producer id]`` (committed_offsets.py): not visible to
   OffsetFetch (which answers UNSTABLE_OFFSET_COMMIT for them when the caller
   requires stable offsets).
2. ``complete``: the producer's COMMIT marker was written to the
   partition: its pending offsets become the group's committed offsets; an ABORT
   drops them. The same happens on load (``loader.LoadedPartition``), and
   offsets of a transaction still open at the end of the log are installed as
   pending (``install_pending``), so a marker reaching a new coordinator
   completes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from coordinator.group.consumer import admin_ops
from coordinator.group.classic import offsets_topic as ot
from coordinator.group.classic.group_metadata import GroupMetadata, TopicPartition
from coordinator.group.classic.group_state import GroupState

from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from coordinator.group.classic.port import ConsumerGroups, OffsetStore
    from coordinator.group.committed_offsets import CommittedOffsets
    from coordinator.group.group_map import GroupMap, KindView
    from coordinator.runtime.runtime import CoordinatorRuntime


class TxnOffsetsHost(Protocol):
    """What the transactional offsets use of the group coordinator."""

    runtime: CoordinatorRuntime
    group_map: GroupMap
    groups: KindView[GroupMetadata]
    committed: CommittedOffsets

    @property
    def consumer(self) -> ConsumerGroups: ...

    def status(self, group_id: str | None, allow_empty_id: bool = False) -> int | None: ...

    def validate_member(self, group: GroupMetadata, member_id: str,
                        instance_id: str | None) -> int | None: ...

    @property
    def offsets(self) -> OffsetStore: ...


class TxnOffsets:
    """The group coordinator's offsets of open transactions (``GroupCoordinator.txn``)."""

    def __init__(self, groups: TxnOffsetsHost) -> None:
        self.gc = groups

    async def commit(self, group_id: str, producer_id: int, producer_epoch: int,
                     member_id: str, instance_id: str | None, generation_id: int,
                     offsets: dict[TopicPartition, ot.OffsetAndMetadata]
                     ) -> dict[TopicPartition, int]:
        error = self.gc.status(group_id)
        if error is not None:
            return dict.fromkeys(offsets, error)
        consumer_group = self.gc.consumer.groups.get(group_id)
        if consumer_group is not None:   # KIP-848 group (issue 19): member epochs
            error = admin_ops.validate_commit(consumer_group, member_id, generation_id,
                                              transactional=True)
        else:
            group = self.gc.groups.get(group_id)
            if group is None:
                group = self.gc.groups[group_id] = GroupMetadata(group_id, GroupState.EMPTY,
                                                                 self.gc.runtime.clock())
            error = self._validate(group, generation_id, member_id, instance_id)
        if error is not None:
            return dict.fromkeys(offsets, error)
        return await self.gc.offsets.store(group_id, offsets, (producer_id, producer_epoch))

    def _validate(self, group: GroupMetadata, generation_id: int, member_id: str,
                  instance_id: str | None) -> int | None:
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if member_id or instance_id is not None:
            error = self.gc.validate_member(group, member_id, instance_id)
            if error is not None:
                return error
        if generation_id >= 0 and generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    def complete(self, producer_id: int, partitions: Iterable[int], commit: bool) -> int:
        """The producer's marker reached these __consumer_offsets partitions: apply or
        drop its pending offsets in their groups; -> how many groups changed."""
        wanted = set(partitions)
        changed = 0
        for group_id, state in self.gc.committed.items():
            if producer_id not in state.pending_txn \
                    or self.gc.runtime.partition_for(group_id) not in wanted:
                continue
            pending = state.pending_txn.pop(producer_id)
            group = self.gc.group_map.get(group_id)
            if commit and group is not None \
                    and not (isinstance(group, GroupMetadata) and group.is_(GroupState.DEAD)):
                state.committed.update(pending)
            self.gc.committed.drop_if_empty(group_id)
            changed += 1
        return changed

    def install_pending(
            self, pending: dict[str, dict[int, dict[TopicPartition, ot.OffsetAndMetadata]]]
            ) -> None:
        """After a load: offsets of transactions the log leaves open (an id without a
        group gets a simple classic group to own them, as a commit would)."""
        for group_id, by_producer in pending.items():
            if group_id not in self.gc.group_map:
                group = self.gc.groups[group_id] = GroupMetadata(group_id, GroupState.EMPTY,
                                                                 self.gc.runtime.clock())
                group.current_state_timestamp = None
            state = self.gc.committed.of(group_id)
            for pid, offsets in by_producer.items():
                state.pending_txn.setdefault(pid, {}).update(offsets)
