"""Ownership of ``__consumer_offsets`` partitions (mixed into GroupCoordinator;
the ownership half of Kafka's GroupMetadataManager).

A group lives in partition ``partition_for(group)``; we coordinate it while we
lead that partition. ``on_become_leader(p, epoch)`` loads the partition in a
task (``loader.LoadedPartition`` replays it); until the load is installed the
partition's groups answer COORDINATOR_LOAD_IN_PROGRESS, and NOT_COORDINATOR
when we do not lead it. ``on_resign`` unloads: the groups go Dead and waiting
joins and syncs are answered NOT_COORDINATOR. ``status`` re-checks leadership
with the log seam on every request, so a missed LeaderAndIsr heals itself.
Epochs fence: a notification older than the newest epoch seen is ignored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from coordinator.group.classic.coordinator_types import join_key, member_key
from coordinator.group.classic.group_metadata import GroupMetadata, JoinResult, SyncResult
from coordinator.group.classic.group_state import GroupState
from coordinator.group.classic.loader import OFFSETS_TOPIC, LoadedPartition
from coordinator.runtime.purgatory import Purgatory
from coordinator.runtime.runtime import CoordinatorRuntime
from coordinator.group.classic.txn_offset_ops import TxnOffsets
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

E, PR, CR, S, D = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                   GroupState.COMPLETING_REBALANCE, GroupState.STABLE, GroupState.DEAD)


class OwnershipOps:
    # provided by GroupCoordinator
    runtime: CoordinatorRuntime
    groups: dict[str, GroupMetadata]
    active: bool
    heartbeats: Purgatory
    rebalances: Purgatory
    extend_session: Callable[..., None]              # (group, member[, timeout_ms])
    _remove_sync_expiration: Callable[[GroupMetadata], None]
    txn: TxnOffsets
    consumer: Any                                # consumer_group.coordinator (issue 19)

    def partition_for(self, group_id: str) -> int:
        return self.runtime.partition_for(group_id)

    def status(self, group_id: str | None, allow_empty_id: bool = False) -> int | None:
        """Kafka's validateGroupStatus: INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE,
        COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, or None when we serve it."""
        if group_id is None or (not group_id and not allow_empty_id):
            return ErrorCode.INVALID_GROUP_ID
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        p = self.partition_for(group_id)
        self._reconcile(p)
        return self.runtime.partitions.status(p)

    def _reconcile(self, p: int) -> None:
        """Follow the log's leadership if a LeaderAndIsr notification was missed."""
        epoch = self.runtime.log.leader_epoch(p)
        owned, loading = self.runtime.partitions.owned, self.runtime.partitions.loading
        if epoch is None:
            if p in owned or p in loading:
                self.on_resign(p, None)
        elif (p not in owned and p not in loading) or (p in owned and epoch > owned[p]):
            self.on_become_leader(p, epoch)

    def on_become_leader(self, partition: int, leader_epoch: int) -> None:
        """We lead ``partition`` from ``leader_epoch``: load it (in a task)."""
        self.runtime.become_leader(partition, leader_epoch, self._load)

    def on_resign(self, partition: int, leader_epoch: int | None) -> None:
        """We no longer lead ``partition``: unload its groups."""
        was_owned = partition in self.runtime.partitions.owned
        if not self.runtime.partitions.resign(partition, leader_epoch):
            return
        unloaded = [g for g in list(self.groups.values())
                    if self.partition_for(g.group_id) == partition]
        for group in unloaded:
            self._on_group_unloaded(group)
            del self.groups[group.group_id]
        self.consumer.unload(partition)          # KIP-848 consumer groups (issue 19)
        if was_owned or unloaded:
            log.info("resigned as coordinator of %s-%d: unloaded %d groups", OFFSETS_TOPIC, partition,
                     len(unloaded))

    async def _load(self, partition: int, epoch: int) -> None:
        loaded = LoadedPartition()
        started = self.runtime.clock()
        try:
            chunks = self.runtime.log.read_chunks(partition)
            for chunk in chunks or ():
                loaded.apply_all(chunk)
                await asyncio.sleep(0)       # stay responsive during a long load
                if partition not in self.runtime.partitions.loading:
                    return                   # resigned meanwhile
        except Exception:
            log.exception("error loading %s-%d", OFFSETS_TOPIC, partition)
        if not self.runtime.partitions.loaded(partition, epoch):
            return
        self._install(loaded)
        self.txn.install_pending(loaded.pending_txn())
        self.consumer.install(loaded.consumer_groups)   # no epoch bump: no rebalance
        log.info("loaded %s-%d (epoch %d): %d groups, %d records in %d ms", OFFSETS_TOPIC, partition,
                 epoch, len(loaded.groups) + len(set(loaded.offsets) - set(loaded.groups)),
                 loaded.records, self.runtime.clock() - started)

    def _install(self, loaded: LoadedPartition) -> None:
        now = self.runtime.clock()
        for group_id in set(loaded.groups) | set(loaded.offsets):
            stored = loaded.groups.get(group_id)
            group = (GroupMetadata.from_stored(group_id, stored, now) if stored is not None
                     else GroupMetadata(group_id, E, now))
            if stored is None:
                group.current_state_timestamp = None
            group.offsets = dict(loaded.offsets.get(group_id, {}))
            self.groups[group_id] = group
            for member in list(group.members.values()):
                self.extend_session(group, member)

    def _on_group_unloaded(self, group: GroupMetadata) -> None:
        previous = group.state
        group.transition_to(D, self.runtime.clock())
        if previous is PR:
            for member in list(group.members.values()):
                group.maybe_invoke_join(member, JoinResult(ErrorCode.NOT_COORDINATOR,
                                                           member_id=member.member_id))
            self.rebalances.check_and_complete(join_key(group.group_id))
        elif previous in (S, CR):
            for member in list(group.members.values()):
                group.maybe_invoke_sync(member, SyncResult(ErrorCode.NOT_COORDINATOR))
                self.heartbeats.check_and_complete(member_key(group.group_id, member.member_id))
        self._remove_sync_expiration(group)
