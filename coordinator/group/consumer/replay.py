"""Records -> model: the one writer of consumer groups' state (Kafka's
GroupMetadataManager.replay for the ConsumerGroup* records).

The coordinator applies every record it writes, in order, right after the
write; loading a __consumer_offsets partition after failover applies the same
records in log order, so both reach the same state (no rebalance on
failover). Rules, per record:

    GroupEpoch              creates the group if needed, sets its epoch;
                            the tombstone drops the group
    SubscriptionMetadata    the subscribed topics (tombstone: none)
    MemberSubscription      creates/updates the member's subscription;
                            keeps static_members (instance id -> member id);
                            the tombstone removes the member
    TargetAssignmentEpoch   the assignment epoch (tombstone: -1)
    TargetAssignmentMember  one member's target (tombstone: removes it)
    CurrentAssignment       the member's epoch, state and partitions; keeps
                            ``owners`` (partition -> member owning it,
                            assigned or pending revocation); the tombstone
                            clears them
    RegexResolution         one regex's topics (tombstone: removes it)

A non-tombstone record of an unknown group creates it (a join writes the
member before the epoch, as Kafka does); a tombstone of an unknown group or
member is ignored (it was already deleted: replaying twice is harmless).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, MutableMapping

from coordinator.group.consumer.model import Assignment, ConsumerGroup, Member
from coordinator.group.consumer.records import CurrentAssignment, GroupEpoch, MemberSubscription, \
    Record, RegexResolution, SubscriptionMetadata, TargetAssignmentEpoch, \
    TargetAssignmentMember


def replay(groups: MutableMapping[str, ConsumerGroup], record: Record) -> None:
    """Apply one record to ``groups`` (group id -> group)."""
    gid = record.group_id
    group = groups.get(gid)
    if group is None:
        if record.tombstone:
            return
        group = groups[gid] = ConsumerGroup(gid)

    if isinstance(record, GroupEpoch):
        if record.tombstone:
            del groups[gid]
        else:
            group.group_epoch = record.epoch
    elif isinstance(record, SubscriptionMetadata):
        group.subscription_metadata = {} if record.tombstone else \
            {t.name: t for t in record.topics}
    elif isinstance(record, MemberSubscription):
        _replay_subscription(group, record)
    elif isinstance(record, TargetAssignmentEpoch):
        group.assignment_epoch = -1 if record.tombstone else record.assignment_epoch
    elif isinstance(record, TargetAssignmentMember):
        if record.tombstone:
            group.target.pop(record.member_id, None)
        else:
            group.target[record.member_id] = _clean(record.partitions)
    elif isinstance(record, CurrentAssignment):
        _replay_current(group, record)
    elif isinstance(record, RegexResolution):
        if record.tombstone or record.resolved is None:
            group.resolved_regexes.pop(record.regex, None)
        else:
            group.resolved_regexes[record.regex] = record.resolved
    else:  # pragma: no cover - the Record union is closed
        raise TypeError(f"not a consumer group record: {record!r}")


def _clean(partitions: Assignment | None) -> Assignment:
    if not partitions:
        return {}
    return {t: frozenset(ps) for t, ps in partitions.items() if ps}


def _replay_subscription(group: ConsumerGroup, record: MemberSubscription) -> None:
    mid = record.member_id
    member = group.members.get(mid)
    if record.tombstone:
        if member is None:
            return
        _drop_ownership(group, member)
        if member.instance_id is not None and group.static_members.get(member.instance_id) == mid:
            del group.static_members[member.instance_id]
        del group.members[mid]
        return
    if member is None:
        member = group.members[mid] = Member(mid)
    if member.instance_id is not None and member.instance_id != record.instance_id \
            and group.static_members.get(member.instance_id) == mid:
        del group.static_members[member.instance_id]
    member.instance_id = record.instance_id
    member.rack_id = record.rack_id
    member.client_id = record.client_id
    member.client_host = record.client_host
    member.subscribed_topic_names = list(record.subscribed_topic_names)
    member.subscribed_topic_regex = record.subscribed_topic_regex
    member.server_assignor = record.server_assignor
    member.rebalance_timeout_ms = record.rebalance_timeout_ms
    member.classic = record.classic
    if record.instance_id is not None:
        group.static_members[record.instance_id] = mid


def _replay_current(group: ConsumerGroup, record: CurrentAssignment) -> None:
    mid = record.member_id
    member = group.members.get(mid)
    if record.tombstone:
        if member is None:
            return
        _drop_ownership(group, member)
        member.member_epoch = -1
        member.previous_member_epoch = -1
        member.assigned = {}
        member.pending_revocation = {}
        return
    if member is None:
        member = group.members[mid] = Member(mid)
    _drop_ownership(group, member)
    member.member_epoch = record.member_epoch
    member.previous_member_epoch = record.previous_member_epoch
    member.state = record.state
    member.assigned = _clean(record.assigned)
    member.pending_revocation = _clean(record.pending_revocation)
    for tp in _owned(member):
        group.owners[tp] = mid


def _owned(member: Member) -> Iterator[tuple[uuid.UUID, int]]:
    """The partitions a member holds: assigned or still to revoke."""
    for part in (member.assigned, member.pending_revocation):
        for topic_id, ps in part.items():
            for p in ps:
                yield topic_id, p


def _drop_ownership(group: ConsumerGroup, member: Member) -> None:
    for tp in _owned(member):
        if group.owners.get(tp) == member.member_id:
            del group.owners[tp]
