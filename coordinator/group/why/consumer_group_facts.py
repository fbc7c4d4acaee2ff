"""Why a consumer group's (KIP-848) group epoch moved: the hook the consumer
group coordinator calls for each batch of records it is about to apply, and the
GroupWhy of a consumer group.

A consumer group has no rebalances; its group epoch is bumped when the
assignment must be computed again (Kafka's GroupMetadataManager
``bumpGroupEpoch``): a member joined, left or was fenced, a member's
subscription changed (topics, regex, server assignor, rack), or the subscribed
topics' metadata changed (a topic created, deleted, grown; a regex resolving to
other topics). Each bump is one event in the group's history
(``GroupHistories``, shared with the classic groups: a group id is one group
whatever its protocol), closed at once with the new epoch as its
"generation", and one count of ``GroupHistories.epoch_bumps`` (the metrics'
consumer-group-rebalance-count/-rate).

The cause is read from the records themselves, compared with the group as it
was before them (so one call site serves every path):

    a GroupEpoch record above the group's epoch  -> a bump (else: nothing)
    a MemberSubscription tombstone of a member   -> "member-fenced" when the
        caller says it fences (``fenced``), else "member-left"
    a MemberSubscription of a member not in the group -> "member-joined"
    a MemberSubscription that differs            -> "subscription-changed"
    none of these (SubscriptionMetadata / regex) -> "metadata-changed"

The call (consumer_group/coordinator.py, before ``replay`` applies the records,
for every batch that group_logic or migration returned):

    consumer_group_facts.epoch_bumped(why, group_before, records, now_ms,
                                      fenced=None | "session timeout" | "rebalance timeout",
                                      timeout_ms=<the broker's session timeout>)

(a fenced member's own timeout wins where it has one: a classic member's
session timeout, a member's rebalance timeout).

``why`` is the classic coordinator's ``GroupHistories`` (``GroupCoordinator.why``);
``group_before`` the ConsumerGroup as it was (None for a new group).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coordinator.group.consumer.group_logic import state_of
from coordinator.group.consumer.model import ConsumerGroup, Member, TopicMeta
from coordinator.group.consumer.records import GroupEpoch, MemberSubscription, Record, \
    SubscriptionMetadata
from coordinator.group.why import reasons
from coordinator.group.why.group_history import GroupHistories, Trigger
from protocol.why_model import GroupWhy

MEMBER_JOINED, MEMBER_LEFT, MEMBER_FENCED = "member-joined", "member-left", "member-fenced"
SUBSCRIPTION_CHANGED, METADATA_CHANGED = "subscription-changed", "metadata-changed"


def new_epoch_of(group: ConsumerGroup | None, records: Sequence[Record]) -> int | None:
    """The group epoch ``records`` bump ``group`` to, or None when they do not."""
    epochs = [r.epoch for r in records if isinstance(r, GroupEpoch) and not r.tombstone]
    if not epochs:
        return None
    new = max(epochs)
    return new if new > (group.group_epoch if group is not None else 0) else None


def _subscription_changes(old: Member, new: MemberSubscription) -> list[str]:
    changes = []
    if sorted(old.subscribed_topic_names) != sorted(new.subscribed_topic_names):
        changes.append(f"topics {reasons.names_text(old.subscribed_topic_names)} -> "
                       f"{reasons.names_text(new.subscribed_topic_names)}")
    if old.subscribed_topic_regex != new.subscribed_topic_regex:
        changes.append(f"regex {old.subscribed_topic_regex!r} -> {new.subscribed_topic_regex!r}")
    if old.server_assignor != new.server_assignor:
        changes.append(f"assignor {old.server_assignor or 'default'} -> "
                       f"{new.server_assignor or 'default'}")
    if old.rack_id != new.rack_id:
        changes.append(f"rack {old.rack_id} -> {new.rack_id}")
    return changes


def _metadata_changes(old: dict[str, TopicMeta], new: Sequence[TopicMeta]) -> list[str]:
    by_name = {t.name: t for t in new}
    changes = [f"topic {n} is no longer subscribed or was deleted"
               for n in sorted(set(old) - set(by_name))]
    for name in sorted(by_name):
        t, before = by_name[name], old.get(name)
        if before is None:
            changes.append(f"topic {name} ({t.partitions} partitions) appeared")
        elif before.topic_id != t.topic_id:
            changes.append(f"topic {name} was re-created")
        elif before.partitions != t.partitions:
            changes.append(f"topic {name} grew from {before.partitions} to {t.partitions} "
                           "partitions")
        elif before.racks != t.racks:
            changes.append(f"topic {name}'s replica racks changed")
    return changes


def _timeout_of(member: Member, fenced: str, given: int | None) -> int | None:
    """The timeout that fenced ``member``: its own where it has one (a classic
    member's session timeout, its rebalance timeout), else ``given``."""
    if fenced.replace(" ", "-") == "rebalance-timeout" and member.rebalance_timeout_ms > 0:
        return member.rebalance_timeout_ms
    if fenced.replace(" ", "-") == "session-timeout" and member.classic is not None:
        return member.classic.session_timeout_ms
    return given


def classify(group: ConsumerGroup | None, records: Sequence[Record], *,
             fenced: str | None = None, timeout_ms: int | None = None) -> Trigger:
    """What caused the bump ``records`` make (see the module docstring)."""
    before = group.members if group is not None else {}
    subs = [r for r in records if isinstance(r, MemberSubscription)]
    for r in subs:
        old = before.get(r.member_id)
        if r.tombstone and old is not None:
            if fenced is not None:
                return Trigger(MEMBER_FENCED, old.member_id, old.client_id, old.client_host,
                               reasons.member_fenced_reason(
                                   fenced, _timeout_of(old, fenced, timeout_ms)))
            return Trigger(MEMBER_LEFT, old.member_id, old.client_id, old.client_host,
                           reasons.member_left_reason())
    for r in subs:
        if not r.tombstone and r.member_id not in before:
            return Trigger(MEMBER_JOINED, r.member_id, r.client_id, r.client_host,
                           reasons.member_joined_reason(r.subscribed_topic_names,
                                                        r.subscribed_topic_regex,
                                                        r.instance_id))
    for r in subs:
        old = before.get(r.member_id)
        if not r.tombstone and old is not None:
            changes = _subscription_changes(old, r)
            if changes:
                return Trigger(SUBSCRIPTION_CHANGED, r.member_id, r.client_id, r.client_host,
                               reasons.subscription_changed_reason(changes))
    metadata = next((r for r in records if isinstance(r, SubscriptionMetadata)), None)
    old_meta = group.subscription_metadata if group is not None else {}
    changes = _metadata_changes(old_meta, metadata.topics) if metadata is not None \
        and not metadata.tombstone else []
    return Trigger(METADATA_CHANGED, "", "", "", reasons.metadata_changed_reason(changes))


def epoch_bumped(why: GroupHistories, group: ConsumerGroup | None, records: Sequence[Record],
                 now_ms: int, *, fenced: str | None = None,
                 timeout_ms: int | None = None) -> int | None:
    """Record the bump ``records`` make to ``group`` (as it was before them), if
    any: one closed event at the new epoch, one count. -> the new epoch, or None."""
    new_epoch = new_epoch_of(group, records)
    if new_epoch is None:
        return None
    group_id = next(r.group_id for r in records if isinstance(r, GroupEpoch))
    trigger = classify(group, records, fenced=fenced, timeout_ms=timeout_ms)
    why.of(group_id).record(trigger, now_ms, generation=new_epoch)
    why.epoch_bumps.record(now_ms)
    return new_epoch


def consumer_group_why(groups: Mapping[str, ConsumerGroup], why: GroupHistories,
                       group_id: str) -> GroupWhy | None:
    """The GroupWhy of a consumer group this broker coordinates (``groups``: the
    consumer group coordinator's; state, group epoch as the generation, its epoch bumps
    from ``why``); None when it is not one."""
    group = groups.get(group_id)
    if group is None:
        return None
    return GroupWhy(group_id=group_id, state=state_of(group).value,
                    generation=group.group_epoch, rebalances=why.events(group_id))


__all__ = ["METADATA_CHANGED", "MEMBER_FENCED", "MEMBER_JOINED", "MEMBER_LEFT",
           "SUBSCRIPTION_CHANGED", "classify", "consumer_group_why", "epoch_bumped",
           "new_epoch_of"]
