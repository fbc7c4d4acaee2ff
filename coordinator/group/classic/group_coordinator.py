"""The classic group coordinator on asyncio (Kafka's GroupCoordinator + the
ownership half of GroupMetadataManager).

Theory of operation:

1. Ownership. A group lives in ``__consumer_offsets`` partition
   ``partition_for(group)``; we coordinate it while we lead that partition.
   ``ownership.on_become_leader(p, epoch)`` starts loading the partition (a task):
   requests for its groups get COORDINATOR_LOAD_IN_PROGRESS until the load is
   installed, NOT_COORDINATOR when we do not lead it. ``ownership.on_resign`` unloads
   (waiting joins/syncs are answered NOT_COORDINATOR). Each request also
   re-checks leadership with the log seam, so a missed notification heals itself.
2. Membership. JoinGroup and SyncGroup park a callback on the member; the
   rebalance is a DelayedJoin (InitialDelayedJoin for an Empty group) in the
   rebalance purgatory that completes when everyone rejoined or at the rebalance
   timeout; sessions are DelayedHeartbeats; after a join the members must sync
   within the rebalance timeout (DelayedSync). All state changes run on the loop
   thread without awaiting in the middle; writes to the log are awaited in tasks
   whose callbacks re-check the group's state and generation first.
3. Storage. The leader's SyncGroup writes the group's metadata (acks=-1) before
   the assignment is handed out; commits are written before they are visible.
   The coordinator's collaborators, each over a narrow Protocol of it:
   ``ownership`` (ownership.py: loading and unloading partitions), ``sync``
   (sync_ops.py: SyncGroup and the group write), ``offsets`` (offset_ops.py:
   offsets and deletions), ``txn`` (txn_offset_ops.py: transactional offsets),
   ``consumer`` (the KIP-848 groups of the same id space: ``group_map`` holds both
   kinds, ``committed`` the offsets of both by group id); the settings, the
   request dataclasses and the group -> partition hash are in ``coordinator_types``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from coordinator.group.classic.delayed import DelayedHeartbeat, DelayedJoin, DelayedSync, \
    InitialDelayedJoin
from coordinator.group.classic.coordinator_types import INT32_MAX, CoordinatorConfig, JoinRequest, \
    LeaveMember, java_string_hash, join_key, member_key, partition_for_group, sync_key
from coordinator.group.classic.group_metadata import GROUP_TYPE_CLASSIC, GroupMetadata, \
    JoinCallback, JoinResult, MemberMetadata
from coordinator.group.classic.group_state import GroupState, matches_filter
from coordinator.runtime.runtime import CoordinatorRuntime
from coordinator.group.classic.loader import OFFSETS_TOPIC
from coordinator.runtime.log_seam import OffsetsLog
from coordinator.group.classic.offset_ops import GroupOffsets
from coordinator.group.classic.ownership import GroupOwnership
from coordinator.group.classic.sync_ops import GroupSync
from coordinator.group.classic.txn_offset_ops import TxnOffsets
from coordinator.runtime.purgatory import Purgatory, Timer
from coordinator.group.committed_offsets import CommittedOffsets
from coordinator.group.group_map import GroupMap, KindView
from coordinator.group.why import group_facts
from coordinator.group.why.group_history import GroupHistories
from protocol.errors import ErrorCode
from storage.log import wall_clock_ms

# the data types live in coordinator_types; importable from here as before
__all__ = ["GroupCoordinator", "CoordinatorConfig", "JoinRequest", "LeaveMember",
           "java_string_hash", "partition_for_group", "INT32_MAX", "NEW_MEMBER_JOIN_TIMEOUT_MS"]

log = logging.getLogger(__name__)

E, PR, CR, S, D = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                   GroupState.COMPLETING_REBALANCE, GroupState.STABLE, GroupState.DEAD)
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class GroupCoordinator:
    def __init__(self, broker_id: int, config: CoordinatorConfig, offsets_log: OffsetsLog, *,
                 num_partitions: Callable[[], int] | None = None,
                 timer: Timer | None = None, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.broker_id = broker_id
        self.config = config
        # the log seam, partition ownership, the group -> partition hash, our tasks
        self.runtime = CoordinatorRuntime(
            OFFSETS_TOPIC, offsets_log,
            num_partitions or (lambda: config.offsets_topic_num_partitions), clock)
        self.heartbeats = Purgatory("Heartbeat", timer)
        self.rebalances = Purgatory("Rebalance", timer)
        # one group id space: classic and consumer groups in one map (group_map.py);
        # ``groups`` is its classic view, ``consumer.groups`` its consumer view
        self.group_map = GroupMap()
        self.groups: KindView[GroupMetadata] = self.group_map.classic
        # committed offsets by group id, whatever the group's kind (committed_offsets.py)
        self.committed = CommittedOffsets()
        self.why = GroupHistories()   # broker/why: what started each rebalance (group_facts)
        self.active = True
        # FindCoordinator creates __consumer_offsets once; concurrent finds see this set
        # and answer COORDINATOR_NOT_AVAILABLE instead of starting a second creation
        self.creating_topic = False
        # KIP-848 consumer groups share our partitions, ids and offsets (issue 19)
        from coordinator.group.consumer.coordinator import ConsumerGroupCoordinator
        self.consumer = ConsumerGroupCoordinator(self)
        # offsets committed inside transactions, until their markers (TxnOffsetCommit)
        self.txn = TxnOffsets(self)
        # SyncGroup and the group-metadata write
        self.sync = GroupSync(self)
        # committed offsets: OffsetCommit / Fetch / Delete, DeleteGroups, expiry
        self.offsets = GroupOffsets(self)
        # loading and unloading __consumer_offsets partitions on leadership
        self.ownership = GroupOwnership(self)

    def start(self) -> None:
        """Start the periodic offset expiry (offsets.retention.check.interval.ms)."""
        self.offsets.start()

    # -- ownership -----------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return self.runtime.partition_for(group_id)

    def status(self, group_id: str | None, allow_empty_id: bool = False) -> int | None:
        """Kafka's validateGroupStatus: INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE,
        COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, or None when we serve it (a
        missed LeaderAndIsr is caught up with first: ``runtime.reconcile``)."""
        if group_id is None or (not group_id and not allow_empty_id):
            return ErrorCode.INVALID_GROUP_ID
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        p = self.partition_for(group_id)
        self.runtime.reconcile(p, self.ownership.on_become_leader, self.ownership.on_resign)
        return self.runtime.partitions.status(p)

    async def shutdown(self) -> None:
        self.active = False
        self.offsets.stop()
        self.consumer.shutdown()
        for p in self.runtime.partitions.all():
            self.ownership.on_resign(p, None)
        self.rebalances.complete_all()
        self.heartbeats.complete_all()
        await self.runtime.cancel_tasks()

    # -- JoinGroup -----------------------------------------------------------------------

    async def join_group(self, req: JoinRequest) -> JoinResult:
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()

        def respond(result: JoinResult) -> None:
            if not future.done():
                future.set_result(result)
        self.handle_join(req, respond)
        return await future

    def handle_join(self, req: JoinRequest, respond: JoinCallback) -> None:
        error = self.status(req.group_id)
        if error is not None:
            respond(JoinResult(error, member_id=req.member_id))
            return
        if not (self.config.group_min_session_timeout_ms <= req.session_timeout_ms
                <= self.config.group_max_session_timeout_ms):
            respond(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=req.member_id))
            return
        if self.consumer.classic_join(req, respond):   # the id is a consumer group's
            return
        unknown = req.member_id == ""
        group = self.groups.get(req.group_id)
        if group is None:
            if not unknown:
                respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=req.member_id))
                return
            group = self.groups[req.group_id] = GroupMetadata(req.group_id, E, self.runtime.clock())
        if not self._accept_joining(group, req.member_id):
            group.remove(req.member_id)
            respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED))
        elif unknown:
            self._new_member_join(group, req, respond)
        else:
            self._current_member_join(group, req, respond)
        if group.is_(PR):
            self.rebalances.check_and_complete(join_key(group.group_id))

    def _accept_joining(self, group: GroupMetadata, member_id: str) -> bool:
        limit = self.config.group_max_size
        if group.state in (E, D):
            return True
        if group.is_(PR):
            m = group.members.get(member_id)
            return (m is not None and m.awaiting_join is not None) or group.num_awaiting_join < limit
        return member_id in group.members or len(group.members) < limit

    def _new_member_join(self, group: GroupMetadata, req: JoinRequest, respond: JoinCallback) -> None:
        if group.is_(D):
            respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(req.protocol_type, {n for n, _ in req.protocols}):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        new_id = group.generate_member_id(req.client_id, req.group_instance_id)
        if req.group_instance_id is not None:
            old_id = group.static_members.get(req.group_instance_id)
            if old_id is not None:
                self._update_static_member(group, old_id, new_id, req, respond)
            else:
                self._add_member_and_rebalance(group, new_id, req, respond)
        elif req.require_known_member_id:
            # KIP-394: remember the id and ask the client to come back with it
            group.pending_members.add(new_id)
            self.heartbeats.try_complete_else_watch(
                DelayedHeartbeat(self, group, new_id, True, req.session_timeout_ms),
                [member_key(group.group_id, new_id)])
            respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
        else:
            self._add_member_and_rebalance(group, new_id, req, respond)

    def _current_member_join(self, group: GroupMetadata, req: JoinRequest,
                             respond: JoinCallback) -> None:
        member_id = req.member_id
        if group.is_(D):
            respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=member_id))
            return
        if not group.supports_protocols(req.protocol_type, {n for n, _ in req.protocols}):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
            return
        if member_id in group.pending_members:
            self._add_member_and_rebalance(group, member_id, req, respond)
            return
        error = self.validate_member(group, member_id, req.group_instance_id)
        if error is not None:
            respond(JoinResult(error, member_id=member_id))
            return
        member = group.members[member_id]
        if group.is_(PR):
            self._update_member_and_rebalance(group, member, req, respond)
        elif group.is_(CR):
            if member.matches(req.protocols):   # a retry of a join we already answered
                respond(self._join_result(group, member, with_members=group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(group, member, req, respond)
        elif group.is_(S):
            if group.is_leader(member_id) or not member.matches(req.protocols):
                self._update_member_and_rebalance(group, member, req, respond)
            else:
                respond(self._join_result(group, member, with_members=False))
        else:
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))

    def _join_result(self, group: GroupMetadata, member: MemberMetadata, *,
                     with_members: bool, leader: str | None = None,
                     skip_assignment: bool = False) -> JoinResult:
        return JoinResult(
            ErrorCode.NONE, member_id=member.member_id, generation_id=group.generation_id,
            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
            leader_id=(leader if leader is not None else group.leader_id) or "",
            skip_assignment=skip_assignment,
            members=group.current_member_metadata() if with_members else [])

    def validate_member(self, group: GroupMetadata, member_id: str,
                        instance_id: str | None) -> int | None:
        """Kafka's validateCurrentMember: the static id maps to this member, and it exists."""
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def _add_member_and_rebalance(self, group: GroupMetadata, member_id: str, req: JoinRequest,
                                  respond: JoinCallback) -> None:
        member = MemberMetadata(member_id, req.group_instance_id, req.client_id, req.client_host,
                                req.rebalance_timeout_ms, req.session_timeout_ms,
                                req.protocol_type, list(req.protocols), is_new=True)
        if group.is_(PR) and group.generation_id == 0:
            group.new_member_added = True
        group_facts.member_joined(self, group, member_id, req)
        group.add(member, respond)
        # new members cannot heartbeat yet: they get the longer join timeout
        self.extend_session(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self.maybe_prepare_rebalance(group, f"adding new member {member_id}")

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                     req: JoinRequest, respond: JoinCallback) -> None:
        group_facts.member_rejoined(self, group, member, req, group.can_rebalance)
        group.update_member(member, list(req.protocols), req.rebalance_timeout_ms,
                            req.session_timeout_ms, respond)
        self.maybe_prepare_rebalance(group, f"member {member.member_id} rejoining")

    def _update_static_member(self, group: GroupMetadata, old_id: str, new_id: str,
                              req: JoinRequest, respond: JoinCallback) -> None:
        """KIP-345: a known group.instance.id joins with no member id: it takes over
        the old member id's place without a rebalance when nothing else changes."""
        assert req.group_instance_id is not None
        instance = req.group_instance_id
        current_leader = group.leader_id
        member = group.replace_static_member(instance, old_id, new_id)
        self.extend_session(group, member)
        old = (list(member.protocols), member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(member, list(req.protocols), req.rebalance_timeout_ms,
                            req.session_timeout_ms, respond)
        group_facts.static_replaced(self, group, instance, old_id, member, not group.is_(S)
                                    or group.protocol_name != group.select_protocol())
        if group.is_(S):
            if group.protocol_name != group.select_protocol():
                self.maybe_prepare_rebalance(group, f"static member {instance} changed protocols")
                return
            assignment = {m.member_id: m.assignment for m in group.members.values()}

            def stored(error: int) -> None:
                if error != ErrorCode.NONE:
                    # undo: the old member id stays the group's
                    group.update_member(member, old[0], old[1], old[2], None)
                    back = group.replace_static_member(instance, new_id, old_id)
                    self.extend_session(group, back)
                    respond(JoinResult(error, generation_id=group.generation_id,
                                       protocol_type=group.protocol_type,
                                       protocol_name=group.protocol_name,
                                       leader_id=current_leader or ""))
                elif req.support_skip_assignment:
                    is_leader = group.is_leader(new_id)
                    group.maybe_invoke_join(member, self._join_result(
                        group, member, with_members=is_leader, skip_assignment=is_leader))
                else:
                    # the old leader id keeps a rejoined static leader from assigning
                    group.maybe_invoke_join(member, self._join_result(
                        group, member, with_members=False, leader=current_leader))
            self.sync.store_group(group, assignment, stored)
        elif group.is_(CR):
            self._prepare_rebalance(group, f"static member {instance} rejoined during sync")

    # -- rebalance -----------------------------------------------------------------------

    def maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_(CR):
            self.sync.reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self.remove_sync_expiration(group)
        if group.is_(E):
            delay = self.config.group_initial_rebalance_delay_ms
            op: DelayedJoin = InitialDelayedJoin(self, self.rebalances, group, delay, delay,
                                                 max(group.rebalance_timeout_ms - delay, 0))
        else:
            op = DelayedJoin(self, group, group.rebalance_timeout_ms)
        group.transition_to(PR, self.runtime.clock())
        log.info("preparing to rebalance group %s with old generation %d (%s)", group.group_id,
                 group.generation_id, reason)
        self.rebalances.try_complete_else_watch(op, [join_key(group.group_id)])

    def try_complete_join(self, group: GroupMetadata, force: Callable[[], bool]) -> bool:
        return force() if group.has_all_members_joined() else False

    def on_complete_join(self, group: GroupMetadata) -> None:
        for failed in [m for m in group.not_yet_rejoined() if not m.is_static]:
            group_facts.rejoin_timed_out(self, group, failed)
            group.remove(failed.member_id)
            self.heartbeats.check_and_complete(member_key(group.group_id, failed.member_id))
        if group.is_(D):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            log.error("group %s could not complete rebalance: no member rejoined", group.group_id)
            self.rebalances.try_complete_else_watch(
                DelayedJoin(self, group, group.rebalance_timeout_ms), [join_key(group.group_id)])
            return
        group.init_next_generation(self.runtime.clock())
        group_facts.generation_started(self, group)
        if group.is_(E):
            log.info("group %s with generation %d is now empty", group.group_id,
                     group.generation_id)
            self.sync.store_group(group, {}, lambda error: None)
            return
        log.info("stabilized group %s generation %d with %d members", group.group_id,
                 group.generation_id, len(group.members))
        for member in list(group.members.values()):
            group.maybe_invoke_join(member, self._join_result(
                group, member, with_members=group.is_leader(member.member_id)))
            self.extend_session(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self.rebalances.try_complete_else_watch(
            DelayedSync(self, group, group.generation_id, group.rebalance_timeout_ms),
            [sync_key(group.group_id)])

    def try_complete_pending_sync(self, group: GroupMetadata, generation: int,
                                  force: Callable[[], bool]) -> bool:
        if generation != group.generation_id or group.state in (D, E, PR):
            return force()
        return force() if not group.pending_sync_members else False

    def on_expire_pending_sync(self, group: GroupMetadata, generation: int) -> None:
        if generation != group.generation_id or group.state not in (CR, S):
            return
        if group.pending_sync_members:
            missing = sorted(group.pending_sync_members)
            for member_id in missing:
                if member_id in group.members:
                    group_facts.sync_timed_out(self, group, group.members[member_id])
                group.remove(member_id)
                self.heartbeats.check_and_complete(member_key(group.group_id, member_id))
            self._prepare_rebalance(group, f"removing {missing} on pending sync expiration")

    def remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.pending_sync_members.clear()
        self.rebalances.check_and_complete(sync_key(group.group_id))

    def remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        self.rebalances.check_and_complete(sync_key(group.group_id))

    # -- heartbeats and sessions ---------------------------------------------------------

    def extend_session(self, group: GroupMetadata, member: MemberMetadata,
                   timeout_ms: int | None = None) -> None:
        """Complete the member's current session deadline and schedule the next."""
        key = member_key(group.group_id, member.member_id)
        member.heartbeat_satisfied = True
        self.heartbeats.check_and_complete(key)
        member.heartbeat_satisfied = False
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self.heartbeats.try_complete_else_watch(
            DelayedHeartbeat(self, group, member.member_id, False, timeout), [key])

    def try_complete_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool,
                               force: Callable[[], bool]) -> bool:
        if group.is_(D):
            return force()
        if is_pending:
            return force() if member_id in group.members else False
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return force()
        return False

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None:
        if group.is_(D):
            return
        if is_pending:
            if member_id in group.pending_members:
                log.info("pending member %s of group %s expired", member_id, group.group_id)
                self._remove_pending_member(group, member_id)
            return
        member = group.members.get(member_id)
        if member is not None and not member.has_satisfied_heartbeat():
            log.info("member %s in group %s has failed (session timeout), removing it",
                     member_id, group.group_id)
            group_facts.member_timed_out(self, group, member)
            self._remove_member_and_update_group(group, member, "heartbeat expiration")

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata,
                                        reason: str) -> None:
        group.maybe_invoke_join(member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.state in (S, CR):
            self.maybe_prepare_rebalance(group, reason)
        elif group.is_(PR):
            self.rebalances.check_and_complete(join_key(group.group_id))

    def _remove_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        group.remove(member_id)
        if group.is_(PR):
            self.rebalances.check_and_complete(join_key(group.group_id))

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                  generation_id: int) -> int:
        error = self.status(group_id)
        if error is not None:
            # a loading coordinator answers blindly (the group is not known yet)
            return ErrorCode.NONE if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else error
        answer = self.consumer.classic_heartbeat(group_id, member_id, instance_id,
                                                 generation_id)
        if answer is not None:                   # a classic member of a consumer group
            return answer
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(D):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self.validate_member(group, member_id, instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_(E):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self.extend_session(group, group.members[member_id])
        return ErrorCode.REBALANCE_IN_PROGRESS if group.is_(PR) else ErrorCode.NONE

    # -- DescribeGroups / ListGroups -----------------------------------------------------

    def describe_group(self, group_id: str) -> tuple[int, GroupMetadata | None]:
        """-> (error, the group or None = Dead/unknown)."""
        error = self.status(group_id, allow_empty_id=True)
        if error is not None:
            return error, None
        return ErrorCode.NONE, self.groups.get(group_id)

    def list_groups(self, states: set[str], types: set[str]
                    ) -> tuple[int, list[tuple[str, str, str, str]]]:
        """-> (error, [(group id, protocol type, state, group type)]) of loaded groups."""
        loading = bool(self.runtime.partitions.loading)
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if loading else ErrorCode.NONE
        if types and GROUP_TYPE_CLASSIC not in {t.lower() for t in types}:
            return error, []
        out = [(g.group_id, g.protocol_type or "", str(g.state), GROUP_TYPE_CLASSIC)
               for g in self.groups.values()
               if not g.is_(D) and self.partition_for(g.group_id) in self.runtime.partitions.owned
               and matches_filter(g.state, states)]
        return error, out

    # -- LeaveGroup ----------------------------------------------------------------------

    def leave_group(self, group_id: str, members: list[LeaveMember]) -> tuple[int, list[LeaveMember]]:
        """-> (top-level error, the members with their errors)."""
        error = self.status(group_id)
        if error is not None:
            return error, []
        answer = self.consumer.classic_leave(group_id, members)
        if answer is not None:                   # classic members of a consumer group
            return answer
        group = self.groups.get(group_id)
        if group is None:
            for m in members:
                m.error = ErrorCode.UNKNOWN_MEMBER_ID
            return ErrorCode.NONE, members
        if group.is_(D):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        for m in members:
            m.error = self._leave_one(group, m)
        return ErrorCode.NONE, members

    def _leave_one(self, group: GroupMetadata, m: LeaveMember) -> int:
        if m.member_id == "":
            current = (group.static_members.get(m.group_instance_id)
                       if m.group_instance_id is not None else None)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._remove_leaving_member(group, current, m.reason)
            return ErrorCode.NONE
        if m.member_id in group.pending_members:
            self._remove_pending_member(group, m.member_id)
            self.heartbeats.check_and_complete(member_key(group.group_id, m.member_id))
            return ErrorCode.NONE
        error = self.validate_member(group, m.member_id, m.group_instance_id)
        if error is not None:
            return error
        self._remove_leaving_member(group, m.member_id, m.reason)
        return ErrorCode.NONE

    def _remove_leaving_member(self, group: GroupMetadata, member_id: str,
                               reason: str | None) -> None:
        member = group.members[member_id]
        group_facts.member_left(self, group, member, reason)
        self._remove_member_and_update_group(group, member,
                                             f"member {member_id} left ({reason or 'no reason'})")
        self.heartbeats.check_and_complete(member_key(group.group_id, member_id))
        log.info("member %s has left group %s", member_id, group.group_id)
