"""The group's subscription metadata and target assignment (Kafka's
ConsumerGroup.computeSubscriptionMetadata and TargetAssignmentBuilder).

Subscription metadata: the topics the group subscribes to — the union of the
members' topic names and of the topics their regexes resolved to — that
exist, with their ids, partition counts and replica racks. When it differs
from the stored one the group epoch is bumped (a topic appeared, vanished,
grew, or its racks changed).

Target assignment: computed with the group's assignor (the one most members
ask for, ties broken by the order of ``group.consumer.assignors``; the first
configured one when nobody asks) from every member's subscription, rack and
current *target* (stickiness is relative to the target, not to what a member
owns now). Records are written only for members whose target changed (and
for new members), then the TargetAssignmentEpoch record: the epoch record
last, so a reader that sees the epoch sees the targets.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Protocol

from coordinator.group.consumer.assignors import GroupSpec, MemberSpec, assignor_named
from coordinator.group.consumer.model import Assignment, Member, ResolvedRegex, TopicMeta
from coordinator.group.consumer.records import Record, TargetAssignmentEpoch, TargetAssignmentMember


class TopicView(Protocol):
    """The cluster's topics as the coordinator sees them."""

    @property
    def version(self) -> int: ...

    def by_name(self, name: str) -> TopicMeta | None: ...

    def names(self) -> Iterable[str]: ...


def member_topic_names(member: Member, resolved: Mapping[str, ResolvedRegex]) -> set[str]:
    """The names a member subscribes to: its list plus its regex's topics."""
    names = set(member.subscribed_topic_names)
    if member.subscribed_topic_regex:
        hit = resolved.get(member.subscribed_topic_regex)
        if hit is not None:
            names |= hit.topics
    return names


def subscribed_topic_names(members: Iterable[Member],
                           resolved: Mapping[str, ResolvedRegex]) -> set[str]:
    names: set[str] = set()
    for m in members:
        names |= member_topic_names(m, resolved)
    return names


def subscription_metadata(names: Iterable[str], topics: TopicView) -> dict[str, TopicMeta]:
    """The subscribed topics that exist, by name."""
    out: dict[str, TopicMeta] = {}
    for name in names:
        meta = topics.by_name(name)
        if meta is not None:
            out[name] = meta
    return out


def preferred_assignor(members: Iterable[Member], configured: tuple[str, ...]) -> str:
    """The assignor most members ask for; ties go to the one configured first;
    the first configured one when nobody asks."""
    counts = Counter(m.server_assignor for m in members if m.server_assignor in configured)
    if not counts:
        return configured[0]
    best = max(counts.values())
    return next(name for name in configured if counts.get(name) == best)


def build_target(group_id: str, epoch: int, members: Mapping[str, Member],
                 current_targets: Mapping[str, Assignment],
                 metadata: Mapping[str, TopicMeta], resolved: Mapping[str, ResolvedRegex],
                 assignor_name: str) -> tuple[dict[str, Assignment], list[Record]]:
    """The new target of every member and the records that store it.

    ``current_targets`` holds each member's target so far (absent = new)."""
    by_id: dict[uuid.UUID, TopicMeta] = {t.topic_id: t for t in metadata.values()}
    specs: dict[str, MemberSpec] = {}
    for mid, m in members.items():
        ids = frozenset(metadata[name].topic_id for name in member_topic_names(m, resolved)
                        if name in metadata)
        specs[mid] = MemberSpec(topics=ids, rack=m.rack_id, instance_id=m.instance_id,
                                current=current_targets.get(mid, {}))
    result = assignor_named(assignor_name).assign(GroupSpec(members=specs, topics=by_id))
    records: list[Record] = []
    new_targets: dict[str, Assignment] = {}
    for mid in sorted(members):
        target = result.get(mid, {})
        new_targets[mid] = target
        if mid not in current_targets or current_targets[mid] != target:
            records.append(TargetAssignmentMember(group_id, mid, dict(target)))
    records.append(TargetAssignmentEpoch(group_id, epoch))
    return new_targets, records
