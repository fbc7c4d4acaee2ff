"""Records that change a consumer group besides a heartbeat's own steps:
the record builders of a member, a member's removal (leave -1, session or
rebalance timeout: ``fence_member``), the metadata refresh (topics created,
deleted or grown; regexes re-resolved: ``refresh_metadata``) and the
deletion of a whole group (``delete_group_records``). Pure, like
group_logic.py: they read the group and return records for replay.

Removal bumps the group epoch but does not recompute the target: the next
heartbeat of any member does (the group is ASSIGNING meanwhile), as Kafka
does. Tombstones come in Kafka's order — a member's current assignment,
then its target, then its subscription; a group's epoch last — so a reader
replaying them never sees a member without its group.
"""

from __future__ import annotations

from coordinator.group.consumer import regex as regex_mod
from coordinator.group.consumer.model import ConsumerGroup, Member
from coordinator.group.consumer.records import CurrentAssignment, GroupEpoch, MemberSubscription, \
    Record, RegexResolution, SubscriptionMetadata, TargetAssignmentEpoch, \
    TargetAssignmentMember
from coordinator.group.consumer.target_assignment import TopicView, subscribed_topic_names, \
    subscription_metadata


def member_records(group_id: str, m: Member) -> MemberSubscription:
    """The MemberSubscription record of a member as it is."""
    return MemberSubscription(
        group_id, m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
        client_id=m.client_id, client_host=m.client_host,
        subscribed_topic_names=tuple(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex, server_assignor=m.server_assignor,
        rebalance_timeout_ms=m.rebalance_timeout_ms, classic=m.classic)


def current_assignment_record(group_id: str, m: Member) -> CurrentAssignment:
    return CurrentAssignment(group_id, m.member_id, member_epoch=m.member_epoch,
                             previous_member_epoch=m.previous_member_epoch, state=m.state,
                             assigned=dict(m.assigned),
                             pending_revocation=dict(m.pending_revocation))


def removal_records(group_id: str, member_id: str) -> list[Record]:
    """A member's tombstones, in Kafka's order: current, target, subscription."""
    return [CurrentAssignment(group_id, member_id, tombstone=True),
            TargetAssignmentMember(group_id, member_id, tombstone=True),
            MemberSubscription(group_id, member_id, tombstone=True)]


def fence_member(group: ConsumerGroup, member_id: str, topics: TopicView | None = None
                 ) -> list[Record]:
    """Remove a member (left, session expired, rebalance timeout, fenced):
    its tombstones, its regex's resolution if it was the last user, the
    subscription metadata without it (when ``topics`` is given — otherwise
    the stored metadata minus topics nobody subscribes to any more), and a
    group epoch bump. [] when the member is unknown."""
    member = group.members.get(member_id)
    if member is None:
        return []
    gid = group.group_id
    records = removal_records(gid, member_id)
    others = [m for mid, m in group.members.items() if mid != member_id]
    resolved = dict(group.resolved_regexes)
    old = member.subscribed_topic_regex
    if old and old in resolved and not any(m.subscribed_topic_regex == old for m in others):
        records.append(RegexResolution(gid, old, tombstone=True))
        del resolved[old]
    names = subscribed_topic_names(others, resolved)
    if topics is not None:
        metadata = subscription_metadata(names, topics)
    else:
        metadata = {n: t for n, t in group.subscription_metadata.items() if n in names}
    if metadata != group.subscription_metadata:
        records.append(SubscriptionMetadata(gid, tuple(metadata[n] for n in sorted(metadata))))
    records.append(GroupEpoch(gid, group.group_epoch + 1))
    return records


def refresh_metadata(group: ConsumerGroup, topics: TopicView, now_ms: int) -> list[Record]:
    """Re-resolve the group's regexes (a record when the topics or the
    metadata version changed; resolutions nobody uses are dropped) and
    recompute the subscription metadata; bump the group epoch when what the
    group subscribes to changed. The target follows at the next heartbeat.
    O(members + topics x regexes): call it when the topics change."""
    gid = group.group_id
    records: list[Record] = []
    resolved = dict(group.resolved_regexes)
    changed = False
    in_use = {m.subscribed_topic_regex for m in group.members.values()
              if m.subscribed_topic_regex}
    for pattern in sorted(resolved):
        if pattern not in in_use:
            records.append(RegexResolution(gid, pattern, tombstone=True))
            del resolved[pattern]
            continue
        old = resolved[pattern]
        # re-resolved even at the same version: versions are the local
        # TopicView's counter, so one loaded from another coordinator's
        # record may equal ours by chance; written when anything differs
        try:
            hit = regex_mod.resolve(pattern, topics.names(), topics.version, now_ms)
        except regex_mod.InvalidRegex:
            continue
        if hit.topics == old.topics and old.version == topics.version:
            continue
        if hit.topics != old.topics:
            changed = True
        resolved[pattern] = hit
        records.append(RegexResolution(gid, pattern, hit))
    for pattern in sorted(in_use - set(resolved)):
        try:
            hit = regex_mod.resolve(pattern, topics.names(), topics.version, now_ms)
        except regex_mod.InvalidRegex:
            continue
        resolved[pattern] = hit
        records.append(RegexResolution(gid, pattern, hit))
        changed = True
    if not group.members:
        return records
    metadata = subscription_metadata(subscribed_topic_names(group.members.values(), resolved),
                                     topics)
    if metadata != group.subscription_metadata:
        records.append(SubscriptionMetadata(gid, tuple(metadata[n] for n in sorted(metadata))))
        changed = True
    if changed:
        records.append(GroupEpoch(gid, group.group_epoch + 1))
    return records


def delete_group_records(group: ConsumerGroup) -> list[Record]:
    """The tombstones that delete a group (DeleteGroups, conversion to a
    classic group), in Kafka's order: members' current assignments, targets,
    the target epoch, subscriptions, regexes, the subscription metadata, and
    the group epoch last (replaying it drops the group)."""
    gid = group.group_id
    mids = sorted(group.members)
    records: list[Record] = [CurrentAssignment(gid, m, tombstone=True) for m in mids]
    records += [TargetAssignmentMember(gid, m, tombstone=True)
                for m in sorted(set(group.target) | set(mids))]
    records.append(TargetAssignmentEpoch(gid, tombstone=True))
    records += [MemberSubscription(gid, m, tombstone=True) for m in mids]
    records += [RegexResolution(gid, r, tombstone=True) for r in sorted(group.resolved_regexes)]
    records.append(SubscriptionMetadata(gid, tombstone=True))
    records.append(GroupEpoch(gid, tombstone=True))
    return records
