"""Classic-protocol members inside a consumer group (KIP-848 migration; Kafka
4.0's GroupMetadataManager.classicGroupJoinToConsumerGroup, ...Sync...,
...Heartbeat..., ...Leave...ToConsumerGroup).

A member that still speaks JoinGroup / SyncGroup / Heartbeat / LeaveGroup may
sit in a consumer group (after an upgrade, or joining one). Its requests are
answered from the consumer group's state machine (group_logic.py): a JoinGroup
is a ConsumerGroupHeartbeat of that member, its ``classic`` metadata set (the
session timeout and every JoinGroup protocol), so the broker-side assignor
decides and reconciliation (revoke before reassign) holds for it as for the
others. Pure functions here; ``classic_glue`` puts them on the coordinators.

JoinGroup (answered once its records are written; generation = member epoch):
  1. a new member gets a fresh member id; a dynamic v4+ member without one is
     answered MEMBER_ID_REQUIRED with it (KIP-394), as in a classic group;
  2. GROUP_MAX_SIZE_REACHED for a new member of a full group;
     INCONSISTENT_GROUP_PROTOCOL unless the protocol type is "consumer" and
     one of its protocols is supported by every classic member;
  3. the subscription (topics, rack, owned partitions of v1+ metadata; v0
     metadata owns nothing: an eager member revoked everything before joining)
     becomes a heartbeat at the member's epoch (0 for a new member): the
     group epoch, the target and the member's next step come from group_logic;
  4. a static member rejoining with no member id replaces the old member id
     (as Kafka: first a static leave, -2, then the join inherits its assignment);
  5. the answer: member id, generation = the member's (new) epoch, protocol
     type "consumer", protocol name = the member's first protocol, no leader
     (every classic member is a follower: the broker assigned already).
SyncGroup: the member's *assigned* partitions (partitions still pending
  revocation from it, or still owned by others, are not in it), encoded as a
  ConsumerProtocolAssignment of its subscription's version. UNKNOWN_MEMBER_ID
  for a member that does not speak classic; ILLEGAL_GENERATION unless the
  generation is the member's epoch; INCONSISTENT_GROUP_PROTOCOL for another
  protocol type/name; REBALANCE_IN_PROGRESS while the group epoch is ahead of
  the member's epoch (unless it is revoking: it must finish that first).
Heartbeat: the same checks, then REBALANCE_IN_PROGRESS when the member must
  rejoin to move on: its epoch is behind the group's, it has partitions to
  revoke, or it waits on partitions that are now all free; else NONE.
LeaveGroup: each named member (by id, or by instance id for the admin path)
  must exist and speak classic (UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID); it is
  removed as a ConsumerGroupHeartbeat with epoch -1 would (epoch bump).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from coordinator.group.consumer import group_logic as gl
from coordinator.group.consumer import migration as mg
from coordinator.group.consumer import records as r
from coordinator.group.consumer.model import Assignment, ClassicMemberMetadata, ConsumerGroup, \
    Member, MemberState
from coordinator.group.classic.coordinator_types import JoinRequest, LeaveMember
from coordinator.group.classic.group_metadata import CONSUMER_PROTOCOL_TYPE, JoinResult, SyncResult
from protocol.errors import ErrorCode

Replay = Callable[[dict[str, ConsumerGroup], r.Record], None]


@dataclass
class JoinOutcome:
    """A classic JoinGroup answered from a consumer group: the response (sent
    once ``records`` are written), and what the glue's timers need."""
    result: JoinResult
    records: list[r.Record]
    rebalance_timeout_ms: int = 0


def uses_classic(member: Member | None) -> bool:
    return member is not None and member.classic is not None


def supports_protocols(group: ConsumerGroup, protocol_type: str, names: set[str]) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: the "consumer" type, and
    a protocol every classic member supports (any, when there are none)."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not names:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    if not group.members or not classic:
        return True
    return any(all(any(n == p for p, _ in c.protocols) for c in classic) for n in names)


def owned_from(sub: mg.Subscription, topics: mg.Topics) -> Assignment:
    """A v1+ subscription's owned partitions by topic id (v0: nothing)."""
    return mg.to_assignment(sub.owned, topics)


def with_classic(records: list[r.Record], member_id: str,
                 classic: ClassicMemberMetadata) -> list[r.Record]:
    """group_logic writes a member's subscription with no classic metadata (a
    ConsumerGroupHeartbeat makes a member a consumer-protocol one): put ours in."""
    return [dataclasses.replace(x, classic=classic)
            if isinstance(x, r.MemberSubscription) and x.member_id == member_id
            and not x.tombstone else x for x in records]


def join(group: ConsumerGroup, req: JoinRequest, topics: gl.TopicView, config: gl.GroupConfig,
         now_ms: int, replay: Replay, *,
         new_member_id: Callable[[], str] = gl.random_member_id) -> JoinOutcome:
    """A classic JoinGroup to the (non-empty) consumer group ``group``."""
    gid = group.group_id
    unknown = req.member_id == ""
    member_id = new_member_id() if unknown else req.member_id
    names = {n for n, _ in req.protocols}

    def fail(error: int) -> JoinOutcome:
        """An error answer; MEMBER_ID_REQUIRED carries the id to come back with."""
        given = member_id if error == ErrorCode.MEMBER_ID_REQUIRED else req.member_id
        return JoinOutcome(JoinResult(error, member_id=given), [])

    if member_id not in group.members and len(group.members) >= config.max_size:
        return fail(ErrorCode.GROUP_MAX_SIZE_REACHED)
    if not supports_protocols(group, req.protocol_type, names):
        return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if unknown and req.require_known_member_id:
        return fail(ErrorCode.MEMBER_ID_REQUIRED)
    try:
        sub = mg.parse_subscription(req.protocols[0][1])
    except mg.MigrationError:
        return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    classic = ClassicMemberMetadata(req.session_timeout_ms,
                                    [(n, bytes(meta)) for n, meta in req.protocols])

    records: list[r.Record] = []
    work = group
    if req.group_instance_id is not None:
        static_id = group.static_members.get(req.group_instance_id)
        if not unknown:
            if static_id is None:
                return fail(ErrorCode.UNKNOWN_MEMBER_ID)
            if static_id != member_id:
                return fail(ErrorCode.FENCED_INSTANCE_ID)
        elif static_id is not None:
            # Kafka replaces a classic static member whatever its state: a static
            # leave first, so that the join below inherits its assignment
            old = group.members[static_id]
            if old.member_epoch != gl.LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                left, leave_records = gl.heartbeat(group, gl.Heartbeat(
                    gid, member_id=static_id, member_epoch=gl.LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                    instance_id=req.group_instance_id, api_version=1), topics, config, now_ms)
                if left.error:
                    return fail(left.error)
                work = replayed(group, leave_records, replay)
                records += leave_records

    member = work.members.get(member_id)
    epoch = member.member_epoch if member is not None and member.member_epoch > 0 else 0
    owned: Assignment = owned_from(sub, topics) if epoch else {}   # a (re)join owns nothing
    hb = gl.Heartbeat(
        gid, member_id=member_id, member_epoch=epoch,
        instance_id=req.group_instance_id, rack_id=sub.rack_id or None,   # librdkafka: ""
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=list(sub.topics), subscribed_topic_regex=None,
        server_assignor=None, owned=owned, client_id=req.client_id,
        client_host=req.client_host, api_version=1)
    if any(f.name == "classic" for f in dataclasses.fields(gl.Heartbeat)):
        hb = dataclasses.replace(hb, classic=classic)
    result, hb_records = gl.heartbeat(work, hb, topics, config, now_ms,
                                      new_member_id=lambda: member_id)
    if result.error:
        return JoinOutcome(JoinResult(result.error, member_id=req.member_id), [])
    hb_records = with_classic(hb_records, member_id, classic)
    if member is not None and member.classic != classic and not any(
            isinstance(x, r.MemberSubscription) and x.member_id == member_id for x in hb_records):
        hb_records.insert(0, gl.member_records(gid, dataclasses.replace(member, classic=classic)))
    records += hb_records
    return JoinOutcome(
        JoinResult(ErrorCode.NONE, member_id=member_id, generation_id=result.member_epoch,
                   protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=req.protocols[0][0],
                   leader_id="", members=[]),
        records, req.rebalance_timeout_ms)


def replayed(group: ConsumerGroup, records: Iterable[r.Record], replay: Replay) -> ConsumerGroup:
    """A copy of ``group`` with ``records`` applied (the live group is changed
    only by the coordinator, after the write)."""
    scratch = {group.group_id: copy.deepcopy(group)}
    for record in records:
        replay(scratch, record)
    return scratch.get(group.group_id) or ConsumerGroup(group.group_id)


def validate_member(group: ConsumerGroup, member_id: str,
                    instance_id: str | None) -> tuple[int, Member | None]:
    """Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, None
    else:
        static_id = group.static_members.get(instance_id)
        member = group.members.get(static_id) if static_id is not None else None
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, None
        if member.member_id != member_id:
            return ErrorCode.FENCED_INSTANCE_ID, None
    if member.classic is None:
        return ErrorCode.UNKNOWN_MEMBER_ID, None
    return ErrorCode.NONE, member


def must_rejoin(group: ConsumerGroup, member: Member) -> bool:
    """Heartbeat's REBALANCE_IN_PROGRESS condition (Kafka's
    classicGroupHeartbeatToConsumerGroup)."""
    if member.member_epoch < group.group_epoch:
        return True
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        return True
    if member.state == MemberState.UNRELEASED_PARTITIONS:
        return not waiting_on_unreleased(group, member)
    return False


def waiting_on_unreleased(group: ConsumerGroup, member: Member) -> bool:
    """Whether a partition of its target that it lacks is still owned by another member."""
    target = group.target.get(member.member_id, {})
    for topic_id, partitions in target.items():
        have = member.assigned.get(topic_id, frozenset())
        for p in partitions - have:
            owner = group.owners.get((topic_id, p))
            if owner is not None and owner != member.member_id:
                return True
    return False


def heartbeat(group: ConsumerGroup, member_id: str, instance_id: str | None,
              generation_id: int) -> tuple[int, Member | None]:
    """-> (error, the member when known: its session goes on)."""
    error, member = validate_member(group, member_id, instance_id)
    if member is None:
        return error, None
    if generation_id != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION, None
    return (ErrorCode.REBALANCE_IN_PROGRESS if must_rejoin(group, member)
            else ErrorCode.NONE), member


def sync(group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int,
         protocol_type: str | None, protocol_name: str | None,
         topics: mg.Topics) -> tuple[SyncResult, Member | None]:
    """-> (the answer, the member when it was answered NONE or must rejoin)."""
    error, member = validate_member(group, member_id, instance_id)
    if member is None:
        return SyncResult(error), None
    assert member.classic is not None
    if generation_id != member.member_epoch:
        return SyncResult(ErrorCode.ILLEGAL_GENERATION), None
    first_name, first_meta = member.classic.protocols[0]
    if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE:
        return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL), None
    if protocol_name is not None and protocol_name != first_name:
        return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL), None
    if group.group_epoch > member.member_epoch and \
            member.state != MemberState.UNREVOKED_PARTITIONS:
        return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS), member
    try:
        version = mg.parse_subscription(first_meta).version
    except mg.MigrationError:
        version = 0
    names = mg.topic_names_by_id(group, topics)
    assignment = mg.encode_assignment(mg.to_names(member.assigned, names), version)
    return SyncResult(ErrorCode.NONE, CONSUMER_PROTOCOL_TYPE, first_name, assignment), member


def leave(group: ConsumerGroup, members: list[LeaveMember], topics: gl.TopicView,
          config: gl.GroupConfig, now_ms: int, replay: Replay) -> tuple[list[r.Record], list[str]]:
    """LeaveGroup: sets each ``LeaveMember.error`` (and fills in the member id of an
    admin removal by instance id); -> (the records, the member ids removed)."""
    records: list[r.Record] = []
    removed: list[str] = []
    work = group
    for m in members:
        if m.group_instance_id is None:
            member = work.members.get(m.member_id)
            if member is None or member.classic is None:
                m.error = ErrorCode.UNKNOWN_MEMBER_ID
                continue
        else:
            static_id = work.static_members.get(m.group_instance_id)
            member = work.members.get(static_id) if static_id is not None else None
            if member is None:
                m.error = ErrorCode.UNKNOWN_MEMBER_ID
                continue
            if m.member_id and m.member_id != member.member_id:
                m.error = ErrorCode.FENCED_INSTANCE_ID
                continue
            if member.classic is None:
                m.error = ErrorCode.UNKNOWN_MEMBER_ID
                continue
            m.member_id = member.member_id
        step = gl.fence_member(work, member.member_id, topics)
        work = replayed(work, step, replay)
        records += step
        removed.append(member.member_id)
        m.error = ErrorCode.NONE
    return records, removed
