"""SyncGroup (``GroupSync``, the group coordinator's ``sync`` collaborator): members
of a CompletingRebalance group
park until the leader's assignment is stored, Stable members get their current
assignment back (Kafka's GroupCoordinator.handleSyncGroup + storeGroup).

The leader's SyncGroup writes the group's metadata with acks=-1 before any
member sees the assignment; the write's callback re-checks that the group is
still CompletingRebalance in the same generation, since another member may
have joined meanwhile (then that rebalance answers everyone).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from coordinator.group.classic import offsets_topic as ot
from coordinator.group.classic.group_metadata import GroupMetadata, SyncCallback, SyncResult
from coordinator.group.classic.group_state import GroupState
from coordinator.group.classic.coordinator_types import group_write_error
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from coordinator.group.classic.coordinator_types import CoordinatorConfig
    from coordinator.group.group_map import KindView
    from coordinator.group.classic.group_metadata import MemberMetadata
    from coordinator.runtime.runtime import CoordinatorRuntime

log = logging.getLogger(__name__)

E, PR, CR, S, D = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                   GroupState.COMPLETING_REBALANCE, GroupState.STABLE, GroupState.DEAD)


class ClassicSyncHook(Protocol):
    def classic_sync(self, group_id: str, generation_id: int, member_id: str,
                     instance_id: str | None, protocol_type: str | None,
                     protocol_name: str | None, respond: SyncCallback) -> bool | None: ...


class SyncHost(Protocol):
    """What SyncGroup uses of the group coordinator."""

    config: CoordinatorConfig
    runtime: CoordinatorRuntime
    groups: KindView[GroupMetadata]

    @property
    def consumer(self) -> ClassicSyncHook: ...

    def status(self, group_id: str | None, allow_empty_id: bool = False) -> int | None: ...

    def validate_member(self, group: GroupMetadata, member_id: str,
                        instance_id: str | None) -> int | None: ...

    def extend_session(self, group: GroupMetadata, member: MemberMetadata,
                       timeout_ms: int | None = None) -> None: ...

    def remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None: ...

    def maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None: ...


class GroupSync:
    def __init__(self, groups: SyncHost) -> None:
        self.gc = groups

    async def sync_group(self, group_id: str, generation_id: int, member_id: str,
                         instance_id: str | None, protocol_type: str | None,
                         protocol_name: str | None, assignment: dict[str, bytes]) -> SyncResult:
        future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()

        def respond(result: SyncResult) -> None:
            if not future.done():
                future.set_result(result)
        self.handle(group_id, generation_id, member_id, instance_id, protocol_type,
                    protocol_name, assignment, respond)
        return await future

    def handle(self, group_id: str, generation_id: int, member_id: str,
               instance_id: str | None, protocol_type: str | None,
               protocol_name: str | None, assignment: dict[str, bytes],
               respond: SyncCallback) -> None:
        error = self.gc.status(group_id)
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # the rebalance state is lost: make the member rejoin (old clients
            # do not expect COORDINATOR_LOAD_IN_PROGRESS here)
            respond(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
            return
        if error is not None:
            respond(SyncResult(error))
            return
        if self.gc.consumer.classic_sync(group_id, generation_id, member_id, instance_id,
                                      protocol_type, protocol_name, respond) is not None:
            return                               # a classic member of a consumer group
        group = self.gc.groups.get(group_id)
        if group is None:
            respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            return
        error = self._validate_sync(group, generation_id, member_id, instance_id,
                                    protocol_type, protocol_name)
        if error is not None:
            respond(SyncResult(error))
        elif group.is_(E):
            respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        elif group.is_(PR):
            respond(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.is_(CR):
            group.members[member_id].awaiting_sync = respond
            self.gc.remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                self._leader_sync(group, generation_id, assignment)
        else:  # Stable: hand out the current assignment
            self.gc.remove_pending_sync_member(group, member_id)
            member = group.members[member_id]
            respond(SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name,
                               member.assignment))
            self.gc.extend_session(group, member)

    def _validate_sync(self, group: GroupMetadata, generation_id: int, member_id: str,
                       instance_id: str | None, protocol_type: str | None,
                       protocol_name: str | None) -> int | None:
        if group.is_(D):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self.gc.validate_member(group, member_id, instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if protocol_type is not None and protocol_type != group.protocol_type:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if protocol_name is not None and protocol_name != group.protocol_name:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _leader_sync(self, group: GroupMetadata, generation_id: int,
                     assignment: dict[str, bytes]) -> None:
        full = {member_id: assignment.get(member_id, b"") for member_id in group.members}
        missing = set(group.members) - set(assignment)
        if missing:
            log.warning("group %s generation %d: empty assignment for %s", group.group_id,
                        generation_id, sorted(missing))

        def stored(error: int) -> None:
            if not (group.is_(CR) and group.generation_id == generation_id):
                return   # another member joined meanwhile: that rebalance answers everyone
            if error != ErrorCode.NONE:
                self.reset_and_propagate_assignment_error(group, error)
                self.gc.maybe_prepare_rebalance(group, f"error {error} storing the assignment")
            else:
                for member in group.members.values():
                    member.assignment = full.get(member.member_id, b"")
                self._propagate_assignment(group, ErrorCode.NONE)
                group.transition_to(S, self.gc.runtime.clock())
        self.store_group(group, full, stored)

    def reset_and_propagate_assignment_error(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: int) -> None:
        ok = error == ErrorCode.NONE
        for member in list(group.members.values()):
            result = SyncResult(error, group.protocol_type if ok else None,
                                group.protocol_name if ok else None, member.assignment)
            if group.maybe_invoke_sync(member, result):
                self.gc.extend_session(group, member)

    def store_group(self, group: GroupMetadata, assignment: dict[str, bytes],
                     done: Callable[[int], None]) -> None:
        """Write the group's metadata (acks=-1), then call ``done(error)`` on the loop."""
        value = ot.group_metadata_value(group.to_stored(assignment))
        record = (ot.group_metadata_key(group.group_id), value)
        partition = self.gc.runtime.partition_for(group.group_id)

        async def write() -> None:
            try:
                error = await self.gc.runtime.log.append(
                    partition, [record], acks=-1,
                    timeout_ms=self.gc.config.offsets_commit_timeout_ms,
                    timestamp=self.gc.runtime.clock())
            except Exception:
                log.exception("writing group %s failed", group.group_id)
                error = ErrorCode.UNKNOWN_SERVER_ERROR
            done(group_write_error(error))
        self.gc.runtime.spawn(write())
