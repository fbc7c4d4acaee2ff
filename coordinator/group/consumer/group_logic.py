"""The consumer group state machine of KIP-848, pure: requests in, records out.

Nothing here does I/O or changes a group: every function reads the group as
replay left it and returns the records that say what changed (plus the
response); the coordinator writes them to __consumer_offsets and applies them
with ``replay.replay`` (one writer of state). Kafka 4.0's
GroupMetadataManager.consumerGroupHeartbeat, step by step:

1. validate the request (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR; v1+ needs a
   client-generated member id, KIP-1082; v0 gets one from us on join);
2. find the group (created by a join, epoch 0; GROUP_ID_NOT_FOUND otherwise)
   and the member: a dynamic member by id (UNKNOWN_MEMBER_ID), a static one
   by instance id (a join with the id of a member that left with epoch -2
   replaces it and inherits its assignment; UNRELEASED_INSTANCE_ID while the
   old one has not left; FENCED_INSTANCE_ID for another member id);
   GROUP_MAX_SIZE_REACHED for a new member of a full group;
3. check the member epoch: equal is fine; the previous epoch is fine when
   the member owns a subset of its assignment (a lost response); anything
   else is FENCED_MEMBER_EPOCH;
4. apply the request's changes (subscription, regex, assignor, rack, ...): a
   MemberSubscription record when anything changed; the group epoch is bumped
   when a member joins, or its subscription, regex, assignor or rack changed,
   or the subscription metadata changed;
5. when the group epoch is ahead of the assignment epoch, recompute the
   target assignment (target_assignment.py) at the group epoch;
6. reconcile the member one step towards its target (reconciliation.py);
   a CurrentAssignment record when it moved;
7. answer with the member's epoch, and its assignment when it changed, on a
   join or full request, or when the partitions it reports owning differ.

A heartbeat of a stable member of an unchanged group touches only that
member: no loop over the group, no assignor run. Leaving (-1) and fencing
remove the member and bump the epoch (group_records.py); the target is
recomputed at the next heartbeat of any member (the group is ASSIGNING until
then), as in Kafka. A static member leaving with -2 keeps its assignment
(and its partitions stay owned) until it rejoins with the same instance id or
its session expires.

What the caller (the coordinator) owns, as Kafka's timers: a member's session
timer restarts on every successful heartbeat (fence_member at expiry); a
member that enters UNREVOKED_PARTITIONS at epoch e is fenced if it is still
there at e after its rebalance timeout; refresh_metadata runs when the topic
metadata version changes. Member ids of v0 joins come from
``new_member_id`` (random by default).

Where we differ from Kafka 4.0, on purpose:
- a member may always rejoin with epoch 0 keeping its id (KAFKA-19233,
  Kafka 4.2; 4.0 fenced it again until its session expired), and a static
  member rejoining with its own member id is let back in the same way (4.0
  answers UNRELEASED_INSTANCE_ID, fatal for the Java client);
- a new regex is resolved during the heartbeat that brings it (Kafka
  resolves asynchronously, a rebalance later); Python ``re`` stands in for
  RE2/J (regex.py);
- a rack or assignor change of a member bumps the group epoch (rack-aware
  assignors need it; Kafka bumps for subscription changes only).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from coordinator.group.consumer import regex as regex_mod
from coordinator.group.consumer.group_records import current_assignment_record, \
    delete_group_records, fence_member, member_records, refresh_metadata, removal_records
from coordinator.group.consumer.model import Assignment, ClassicMemberMetadata, ConsumerGroup, \
    GroupState, Member, MemberState, ResolvedRegex, TopicMeta
from coordinator.group.consumer.reconciliation import is_subset, next_member_state
from coordinator.group.consumer.records import GroupEpoch, Record, RegexResolution, \
    SubscriptionMetadata, TargetAssignmentMember
from coordinator.group.consumer.target_assignment import TopicView, build_target, \
    preferred_assignor, subscribed_topic_names, subscription_metadata
from protocol.errors import ErrorCode
from protocol.primitives import uuid_text

# fence_member, refresh_metadata, delete_group_records and the record builders
# live in group_records.py; they are part of this module's API.
__all__ = ["GroupConfig", "Heartbeat", "HeartbeatResult", "TopicView", "heartbeat",
           "fence_member", "refresh_metadata", "state_of", "delete_group_records",
           "member_records", "current_assignment_record", "removal_records", "validate",
           "random_member_id", "LEAVE_GROUP_MEMBER_EPOCH", "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
           "INVALID_REGULAR_EXPRESSION"]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
# ConsumerGroupHeartbeat v1 answers a bad regex with Kafka 4.0's code 128
INVALID_REGULAR_EXPRESSION = int(ErrorCode.INVALID_REGULAR_EXPRESSION)
# ConsumerGroupHeartbeat v1+ (KIP-1082): the client generates the member id.
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


@dataclass
class GroupConfig:
    """The group.consumer.* settings (Kafka's names and defaults)."""
    session_timeout_ms: int = 45000            # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5000          # group.consumer.heartbeat.interval.ms
    max_size: int = 2**31 - 1                  # group.consumer.max.size
    assignors: tuple[str, ...] = ("uniform", "range")   # group.consumer.assignors
    migration_policy: str = "bidirectional"    # group.consumer.migration.policy
    min_session_timeout_ms: int = 45000        # group.consumer.min.session.timeout.ms
    max_session_timeout_ms: int = 60000        # group.consumer.max.session.timeout.ms
    min_heartbeat_interval_ms: int = 5000      # group.consumer.min.heartbeat.interval.ms
    max_heartbeat_interval_ms: int = 15000     # group.consumer.max.heartbeat.interval.ms
    # ours, not Kafka's (off = Kafka): every revocation waits for the member
    # to confirm it, even of partitions it did not report owning
    # (reconciliation.next_member_state); joins are exempt
    strict_revocation: bool = False

    def __post_init__(self) -> None:
        from coordinator.group.consumer.assignors import ASSIGNORS

        def bad(key: str, value: object, why: str) -> ValueError:
            return ValueError(f"invalid {key}={value!r}: {why}")

        self.assignors = tuple(self.assignors)
        if not self.assignors:
            raise bad("group.consumer.assignors", "", "must name at least one assignor")
        for name in self.assignors:
            if name not in ASSIGNORS:
                raise bad("group.consumer.assignors", ",".join(self.assignors),
                          f"unknown assignor {name!r} (known: {', '.join(ASSIGNORS)})")
        if self.migration_policy not in MIGRATION_POLICIES:
            raise bad("group.consumer.migration.policy", self.migration_policy,
                      f"must be one of {', '.join(MIGRATION_POLICIES)}")
        if self.max_size < 1:
            raise bad("group.consumer.max.size", self.max_size, "must be at least 1")
        if self.min_session_timeout_ms <= 0:
            raise bad("group.consumer.min.session.timeout.ms", self.min_session_timeout_ms,
                      "must be positive")
        if self.min_heartbeat_interval_ms <= 0:
            raise bad("group.consumer.min.heartbeat.interval.ms",
                      self.min_heartbeat_interval_ms, "must be positive")
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise bad("group.consumer.min.session.timeout.ms", self.min_session_timeout_ms,
                      f"must not exceed group.consumer.max.session.timeout.ms="
                      f"{self.max_session_timeout_ms}")
        if self.min_heartbeat_interval_ms > self.max_heartbeat_interval_ms:
            raise bad("group.consumer.min.heartbeat.interval.ms", self.min_heartbeat_interval_ms,
                      f"must not exceed group.consumer.max.heartbeat.interval.ms="
                      f"{self.max_heartbeat_interval_ms}")
        if not self.min_session_timeout_ms <= self.session_timeout_ms \
                <= self.max_session_timeout_ms:
            raise bad("group.consumer.session.timeout.ms", self.session_timeout_ms,
                      f"must lie in [group.consumer.min.session.timeout.ms="
                      f"{self.min_session_timeout_ms}, group.consumer.max.session.timeout.ms="
                      f"{self.max_session_timeout_ms}]")
        if not self.min_heartbeat_interval_ms <= self.heartbeat_interval_ms \
                <= self.max_heartbeat_interval_ms:
            raise bad("group.consumer.heartbeat.interval.ms", self.heartbeat_interval_ms,
                      f"must lie in [group.consumer.min.heartbeat.interval.ms="
                      f"{self.min_heartbeat_interval_ms}, group.consumer.max.heartbeat.interval.ms="
                      f"{self.max_heartbeat_interval_ms}]")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise bad("group.consumer.heartbeat.interval.ms", self.heartbeat_interval_ms,
                      f"must be below group.consumer.session.timeout.ms="
                      f"{self.session_timeout_ms}")


@dataclass
class Heartbeat:
    """A ConsumerGroupHeartbeat request, decoded (topic ids as uuid.UUID)."""
    group_id: str
    member_id: str = ""
    member_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None       # None = unchanged
    subscribed_topic_regex: str | None = None             # None = unchanged
    server_assignor: str | None = None
    owned: Assignment | None = None                       # None = unchanged
    client_id: str = ""
    client_host: str = ""
    api_version: int = 0
    # a classic-protocol member's JoinGroup metadata (migration: classic_members.py);
    # None for a ConsumerGroupHeartbeat, which makes the member a consumer one
    classic: ClassicMemberMetadata | None = None


@dataclass
class HeartbeatResult:
    """The response's fields: error (0 = none), the member's id and epoch, the
    heartbeat interval, and its assignment (None = not sent: unchanged)."""
    error: int
    message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None


class HeartbeatError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message


def random_member_id() -> str:
    """A member id as Kafka's coordinator makes one (Uuid.toString: 22 url-safe
    base64 characters)."""
    return uuid_text(uuid.uuid4())


def _invalid(message: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.INVALID_REQUEST, message)


def _blank(value: str | None) -> bool:
    return value is not None and not value.strip()


def validate(hb: Heartbeat, config: GroupConfig) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid, in its order."""
    if hb.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION or hb.member_epoch > 0 \
            or hb.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if not hb.member_id or _blank(hb.member_id):
            raise _invalid("MemberId can't be empty.")
    if _blank(hb.group_id) or not hb.group_id:
        raise _invalid("GroupId can't be empty.")
    if _blank(hb.instance_id):
        raise _invalid("InstanceId can't be empty.")
    if _blank(hb.rack_id):
        raise _invalid("RackId can't be empty.")
    if hb.member_epoch == 0:
        if hb.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if hb.owned is None or any(hb.owned.values()):
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if not hb.subscribed_topic_names and not hb.subscribed_topic_regex:
            raise _invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first "
                           "request.")
    elif hb.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if hb.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif hb.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise _invalid("MemberEpoch is invalid.")
    if hb.server_assignor is not None and hb.server_assignor not in config.assignors:
        raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {hb.server_assignor} is not supported. Supported "
                             f"assignors: {', '.join(config.assignors)}.")


def _error_result(err: HeartbeatError) -> HeartbeatResult:
    return HeartbeatResult(error=err.code, message=err.message, member_id=None, member_epoch=0,
                           heartbeat_interval_ms=0, assignment=None)


def heartbeat(group: ConsumerGroup | None, hb: Heartbeat, topics: TopicView,
              config: GroupConfig, now_ms: int, *,
              new_member_id: Callable[[], str] = random_member_id
              ) -> tuple[HeartbeatResult, list[Record]]:
    """Handle one ConsumerGroupHeartbeat; the records to write and apply, and
    the response. On an error no records are returned (nothing changed)."""
    try:
        validate(hb, config)
        if hb.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return _leave(group, hb)
        return _heartbeat(group, hb, topics, config, now_ms, new_member_id)
    except HeartbeatError as err:
        return _error_result(err), []
    except regex_mod.InvalidRegex as err:
        return _error_result(HeartbeatError(INVALID_REGULAR_EXPRESSION, str(err))), []


# -- steps -------------------------------------------------------------------------------

def _group_or_not_found(group: ConsumerGroup | None, group_id: str) -> ConsumerGroup:
    if group is None:
        raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
    return group


def _check_epoch(member: Member, received: int, owned: Assignment | None) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid, with KAFKA-19233's fix
    (Kafka 4.2): a member may always rejoin with epoch 0 — KIP-848 says a
    fenced member rejoins that way, keeping its (client-generated) id; Kafka
    4.0 fenced it again until its session expired."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise HeartbeatError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            f"all its partitions and rejoin.")
    if received < member.member_epoch:
        if received != member.previous_member_epoch or not is_subset(owned, member.assigned):
            raise HeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({received}) than the one"
                f" known by the group coordinator ({member.member_epoch}). The member must "
                f"abandon all its partitions and rejoin.")


def _normalized(owned: Assignment | None) -> Assignment | None:
    if owned is None:
        return None
    return {t: frozenset(ps) for t, ps in owned.items() if ps}


def _heartbeat(group: ConsumerGroup | None, hb: Heartbeat, topics: TopicView,
               config: GroupConfig, now_ms: int,
               new_member_id: Callable[[], str]) -> tuple[HeartbeatResult, list[Record]]:
    joining = hb.member_epoch == 0
    if group is None:
        if not joining:
            _group_or_not_found(group, hb.group_id)
        group = ConsumerGroup(hb.group_id)
    gid = group.group_id
    if len(group.members) >= config.max_size and (not hb.member_id
                                                  or hb.member_id not in group.members):
        raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of "
                             f"{config.max_size} members.")
    member_id = hb.member_id or new_member_id()
    owned = _normalized(hb.owned)
    records: list[Record] = []
    replaced: str | None = None     # the static member this join replaces
    is_new = False

    # 2./3. the member
    if hb.instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group {gid}.")
            member = Member(member_id)
            is_new = True
        _check_epoch(member, hb.member_epoch, owned)
    else:
        static_id = group.static_members.get(hb.instance_id)
        existing = group.members.get(static_id) if static_id is not None else None
        if joining:
            if existing is None:
                member = group.members.get(member_id)
                if member is None:
                    member = Member(member_id)
                    is_new = True
            elif existing.member_id == member_id:
                # the same client rejoining after being fenced (its id is
                # client-generated, KIP-1082): as a dynamic member may since
                # KAFKA-19233, it rejoins keeping its state. Kafka 4.0 answers
                # UNRELEASED_INSTANCE_ID, fatal for the Java client.
                member = existing
            else:
                # (issue 19, migration) a classic member's instance id is taken over
                # at once (Kafka checks release only between consumer-protocol members)
                if existing.classic is None \
                        and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise HeartbeatError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {member_id} with instance id {hb.instance_id} cannot "
                        f"join the group because the instance id is owned by "
                        f"{existing.member_id} member.")
                member = dataclasses.replace(existing, member_id=member_id, member_epoch=0,
                                             previous_member_epoch=0, pending_revocation={})
                replaced = existing.member_id
                records += _replace_records(group, existing, member)
        else:
            if existing is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Instance id {hb.instance_id} is unknown.")
            if existing.member_id != member_id:
                raise HeartbeatError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {hb.instance_id} was fenced by "
                    f"member {existing.member_id}.")
            _check_epoch(existing, hb.member_epoch, owned)
            member = existing
    if member.state == MemberState.UNKNOWN and (owned is None or owned):
        raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH,
                             "The consumer group member is in a unknown state. The member must "
                             "abandon all its partitions and rejoin.")

    # 4. the request's changes
    updated = _apply_request(member, hb)
    bump = is_new
    if _subscription_of(updated) != _subscription_of(member) or is_new:
        records.append(member_records(gid, updated))
        if (set(updated.subscribed_topic_names) != set(member.subscribed_topic_names)
                or updated.subscribed_topic_regex != member.subscribed_topic_regex
                or updated.server_assignor != member.server_assignor
                or updated.rack_id != member.rack_id):
            bump = True
    resolved: Mapping[str, ResolvedRegex] = group.resolved_regexes
    if updated.subscribed_topic_regex != member.subscribed_topic_regex:
        resolved, regex_records = _regex_change(group, member, updated, topics, now_ms, replaced)
        records += regex_records

    group_epoch = group.group_epoch
    metadata: Mapping[str, TopicMeta] = group.subscription_metadata
    members_view: dict[str, Member] | None = None     # the members after this request
    if bump:
        members_view = _members_after(group, updated, replaced)
        new_metadata = subscription_metadata(
            subscribed_topic_names(members_view.values(), resolved), topics)
        if new_metadata != group.subscription_metadata:
            metadata = new_metadata
            records.append(SubscriptionMetadata(gid, tuple(new_metadata[n]
                                                           for n in sorted(new_metadata))))
        group_epoch += 1
        records.append(GroupEpoch(gid, group_epoch))

    # 5. the target
    if group_epoch > group.assignment_epoch:
        if members_view is None:
            members_view = _members_after(group, updated, replaced)
        current_targets = _current_targets(group, members_view, replaced, member_id)
        targets, target_records = build_target(
            gid, group_epoch, members_view, current_targets, metadata, resolved,
            preferred_assignor(members_view.values(), config.assignors))
        records += target_records
        target_epoch = group_epoch
        target = targets.get(member_id, {})
    else:
        target_epoch = group.assignment_epoch
        target = group.target.get(replaced if replaced is not None else member_id, {})

    # 6. reconcile
    owners = group.owners

    def owner_of(topic_id: uuid.UUID, partition: int) -> str | None:
        owner = owners.get((topic_id, partition))
        return None if owner == replaced else owner

    reconciled = next_member_state(updated, target_epoch, target, owner_of, owned,
                                   trust_owned=joining or not config.strict_revocation)
    if reconciled is not updated or is_new:
        records.append(current_assignment_record(gid, reconciled))

    # 7. the response
    full = joining or (hb.rebalance_timeout_ms != -1 and owned is not None
                       and (hb.subscribed_topic_names is not None
                            or hb.subscribed_topic_regex is not None))
    send = (full or reconciled.assigned != member.assigned
            or (owned is not None and owned != reconciled.assigned))
    result = HeartbeatResult(error=0, message=None, member_id=member_id,
                             member_epoch=reconciled.member_epoch,
                             heartbeat_interval_ms=config.heartbeat_interval_ms,
                             assignment=dict(reconciled.assigned) if send else None)
    return result, records


def _members_after(group: ConsumerGroup, updated: Member, replaced: str | None
                   ) -> dict[str, Member]:
    """The group's members once this request's records are applied (O(members):
    only when the epoch is bumped or the target recomputed)."""
    members = dict(group.members)
    if replaced is not None:
        members.pop(replaced, None)
    members[updated.member_id] = updated
    return members


def _apply_request(member: Member, hb: Heartbeat) -> Member:
    """The member with the request's non-null fields applied."""
    changes: dict[str, Any] = {"client_id": hb.client_id, "client_host": hb.client_host,
                                  "classic": hb.classic}
    if hb.instance_id is not None:
        changes["instance_id"] = hb.instance_id
    if hb.rack_id is not None:
        changes["rack_id"] = hb.rack_id
    if hb.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = hb.rebalance_timeout_ms
    if hb.server_assignor is not None:
        changes["server_assignor"] = hb.server_assignor
    if hb.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = sorted(set(hb.subscribed_topic_names))
    if hb.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = hb.subscribed_topic_regex or None
    if all(getattr(member, k) == v for k, v in changes.items()):
        return member
    return dataclasses.replace(member, **changes)


def _subscription_of(m: Member) -> tuple[object, ...]:
    return (m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
            m.subscribed_topic_regex, m.server_assignor, m.rebalance_timeout_ms, m.classic)


def _regex_change(group: ConsumerGroup, member: Member, updated: Member, topics: TopicView,
                  now_ms: int, replaced: str | None
                  ) -> tuple[Mapping[str, ResolvedRegex], list[Record]]:
    """Records for a member's regex change: the old regex's resolution is
    dropped when the member was its last user; a new regex is validated
    (InvalidRegex) and resolved now. Returns the resolutions as they will be."""
    gid = group.group_id
    records: list[Record] = []
    resolved = dict(group.resolved_regexes)
    old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
    if new:
        regex_mod.validate(new)
    others = [m for mid, m in group.members.items()
              if mid not in (member.member_id, replaced)]
    if old and old in resolved and not any(m.subscribed_topic_regex == old for m in others):
        records.append(RegexResolution(gid, old, tombstone=True))
        del resolved[old]
    if new and new not in resolved:
        hit = regex_mod.resolve(new, topics.names(), topics.version, now_ms)
        resolved[new] = hit
        records.append(RegexResolution(gid, new, hit))
    return resolved, records


def _current_targets(group: ConsumerGroup, members: Mapping[str, Member], replaced: str | None,
                     member_id: str) -> dict[str, Assignment]:
    current = {mid: group.target[mid] for mid in members if mid in group.target}
    if replaced is not None and replaced in group.target:
        current[member_id] = group.target[replaced]
    return current


def _replace_records(group: ConsumerGroup, old: Member, new: Member) -> list[Record]:
    """A static member replaced by a new member id: the old one's tombstones,
    then the new one with the old one's subscription, target and assignment."""
    gid = group.group_id
    records = removal_records(gid, old.member_id)
    records.append(member_records(gid, new))
    records.append(TargetAssignmentMember(gid, new.member_id,
                                          dict(group.target.get(old.member_id, {}))))
    records.append(current_assignment_record(gid, new))
    return records


# -- leaving and fencing -----------------------------------------------------------------

def _leave(group: ConsumerGroup | None, hb: Heartbeat) -> tuple[HeartbeatResult, list[Record]]:
    group = _group_or_not_found(group, hb.group_id)
    if hb.instance_id is None:
        member = group.members.get(hb.member_id)
        if member is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {hb.member_id} is not a member of group "
                                 f"{group.group_id}.")
        records = fence_member(group, member.member_id)
    else:
        static_id = group.static_members.get(hb.instance_id)
        member = group.members.get(static_id) if static_id is not None else None
        if member is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Instance id {hb.instance_id} is unknown.")
        if member.member_id != hb.member_id:
            raise HeartbeatError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {hb.member_id} with instance id {hb.instance_id} was fenced by "
                f"member {member.member_id}.")
        if hb.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # the member keeps its assignment until it rejoins or its session expires
            leaving = dataclasses.replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                          previous_member_epoch=member.member_epoch,
                                          pending_revocation={})
            result = HeartbeatResult(0, None, member.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                     0, None)
            return result, [current_assignment_record(group.group_id, leaving)]
        records = fence_member(group, member.member_id)
    return HeartbeatResult(0, None, hb.member_id, hb.member_epoch, 0, None), records


# -- views ---------------------------------------------------------------------------------

def state_of(group: ConsumerGroup | None) -> GroupState:
    """Kafka's ConsumerGroup state: EMPTY without members, ASSIGNING while the
    target lags the group epoch, RECONCILING while a member is not STABLE at
    the target epoch, else STABLE."""
    if group is None:
        return GroupState.DEAD
    if not group.members:
        return GroupState.EMPTY
    if group.group_epoch > group.assignment_epoch:
        return GroupState.ASSIGNING
    for m in group.members.values():
        if m.state != MemberState.STABLE or m.member_epoch != group.assignment_epoch:
            return GroupState.RECONCILING
    return GroupState.STABLE
