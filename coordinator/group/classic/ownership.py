"""Ownership of ``__consumer_offsets`` partitions (``GroupOwnership``, the group
coordinator's ``ownership`` collaborator; the loading half of Kafka's
GroupMetadataManager).

A group lives in partition ``partition_for(group)``; we coordinate it while we
lead that partition. ``on_become_leader(p, epoch)`` loads the partition in a
task (``loader.LoadedPartition`` replays it); until the load is installed the
partition's groups answer COORDINATOR_LOAD_IN_PROGRESS, and NOT_COORDINATOR
when we do not lead it. ``on_resign`` unloads: the groups go Dead and waiting
joins and syncs are answered NOT_COORDINATOR. The coordinator's ``status``
re-checks leadership with the log seam on every request
(``CoordinatorRuntime.reconcile``), so a missed LeaderAndIsr heals itself.
Epochs fence: a notification older than the newest epoch seen is ignored.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Protocol

from coordinator.group.classic.coordinator_types import join_key, member_key
from coordinator.group.classic.group_metadata import GroupMetadata, JoinResult, \
    MemberMetadata, SyncResult
from coordinator.group.classic.group_state import GroupState
from coordinator.group.classic.loader import OFFSETS_TOPIC, LoadedPartition
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from coordinator.group.classic.txn_offset_ops import TxnOffsets
    from coordinator.group.committed_offsets import CommittedOffsets
    from coordinator.group.consumer.model import ConsumerGroup
    from coordinator.group.group_map import GroupMap, KindView
    from coordinator.runtime.purgatory import Purgatory
    from coordinator.runtime.runtime import CoordinatorRuntime

log = logging.getLogger(__name__)

E, PR, CR, S, D = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                   GroupState.COMPLETING_REBALANCE, GroupState.STABLE, GroupState.DEAD)


class OwnershipHost(Protocol):
    """What loading and unloading use of the group coordinator."""

    runtime: CoordinatorRuntime
    group_map: GroupMap
    groups: KindView[GroupMetadata]
    committed: CommittedOffsets
    heartbeats: Purgatory
    rebalances: Purgatory
    txn: TxnOffsets

    @property
    def consumer(self) -> ConsumerLoads: ...

    def extend_session(self, group: GroupMetadata, member: MemberMetadata,
                       timeout_ms: int | None = None) -> None: ...

    def remove_sync_expiration(self, group: GroupMetadata) -> None: ...


class ConsumerLoads(Protocol):
    """The consumer groups' side of a load and an unload of the same partition."""

    def install(self, loaded: dict[str, ConsumerGroup]) -> None: ...

    def unload(self, partition: int) -> None: ...


class GroupOwnership:
    def __init__(self, groups: OwnershipHost) -> None:
        self.gc = groups

    def on_become_leader(self, partition: int, leader_epoch: int) -> None:
        """We lead ``partition`` from ``leader_epoch``: load it (in a task)."""
        self.gc.runtime.become_leader(partition, leader_epoch, self._load)

    def on_resign(self, partition: int, leader_epoch: int | None) -> None:
        """We no longer lead ``partition``: unload its groups."""
        was_owned = partition in self.gc.runtime.partitions.owned
        if not self.gc.runtime.partitions.resign(partition, leader_epoch):
            return
        unloaded = [g for g in list(self.gc.groups.values())
                    if self.gc.runtime.partition_for(g.group_id) == partition]
        for group in unloaded:
            self._on_group_unloaded(group)
            del self.gc.groups[group.group_id]
        self.gc.consumer.unload(partition)          # KIP-848 consumer groups (issue 19)
        self.gc.committed.unload(lambda gid: self.gc.runtime.partition_for(gid) == partition)
        if was_owned or unloaded:
            log.info("resigned as coordinator of %s-%d: unloaded %d groups", OFFSETS_TOPIC, partition,
                     len(unloaded))

    async def _load(self, partition: int, epoch: int) -> None:
        loaded = LoadedPartition()
        started = self.gc.runtime.clock()
        try:
            chunks = self.gc.runtime.log.read_chunks(partition)
            for chunk in chunks or ():
                loaded.apply_all(chunk)
                await asyncio.sleep(0)       # stay responsive during a long load
                if partition not in self.gc.runtime.partitions.loading:
                    return                   # resigned meanwhile
        except Exception:
            log.exception("error loading %s-%d", OFFSETS_TOPIC, partition)
        if not self.gc.runtime.partitions.loaded(partition, epoch):
            return
        # consumer groups first: an id with offsets and no group of either kind gets a
        # simple classic group (_install), and so do open transactions' (install_pending)
        self.gc.consumer.install(loaded.consumer_groups)   # no epoch bump: no rebalance
        self._install(loaded)
        self.gc.txn.install_pending(loaded.pending_txn())
        log.info("loaded %s-%d (epoch %d): %d groups, %d records in %d ms", OFFSETS_TOPIC, partition,
                 epoch, len(loaded.groups) + len(set(loaded.offsets) - set(loaded.groups)),
                 loaded.records, self.gc.runtime.clock() - started)

    def _install(self, loaded: LoadedPartition) -> None:
        """The loaded committed offsets (every id) and classic groups: an id's stored
        metadata, else, for offsets of an id no group holds, a simple classic group
        (Empty, no protocol type) to own them, as Kafka 4's replay makes one."""
        now = self.gc.runtime.clock()
        for group_id, offsets in loaded.offsets.items():
            self.gc.committed.of(group_id).committed.update(offsets)
        for group_id in set(loaded.groups) | set(loaded.offsets):
            stored = loaded.groups.get(group_id)
            if group_id in self.gc.group_map:     # a consumer group (installed first)
                if stored is not None:   # a conversion's batch tombstones the old kind
                    log.warning("group %s is in %s both as a classic and a consumer group; "
                                "the consumer group is kept", group_id, OFFSETS_TOPIC)
                continue
            group = (GroupMetadata.from_stored(group_id, stored, now) if stored is not None
                     else GroupMetadata(group_id, E, now))
            if stored is None:
                group.current_state_timestamp = None
            self.gc.groups[group_id] = group
            for member in list(group.members.values()):
                self.gc.extend_session(group, member)

    def _on_group_unloaded(self, group: GroupMetadata) -> None:
        previous = group.state
        group.transition_to(D, self.gc.runtime.clock())
        if previous is PR:
            for member in list(group.members.values()):
                group.maybe_invoke_join(member, JoinResult(ErrorCode.NOT_COORDINATOR,
                                                           member_id=member.member_id))
            self.gc.rebalances.check_and_complete(join_key(group.group_id))
        elif previous in (S, CR):
            for member in list(group.members.values()):
                group.maybe_invoke_sync(member, SyncResult(ErrorCode.NOT_COORDINATOR))
                self.gc.heartbeats.check_and_complete(member_key(group.group_id, member.member_id))
        self.gc.remove_sync_expiration(group)
