"""Consumer groups' (KIP-848) group epoch bumps and their causes, read from the
records the coordinator applies: one closed event per bump, the count the metrics
read, and the GroupWhy of a consumer group."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from coordinator.group.consumer.model import ConsumerGroup, Member, MemberState, TopicMeta
from coordinator.group.consumer.records import CurrentAssignment, GroupEpoch, MemberSubscription, \
    SubscriptionMetadata, TargetAssignmentEpoch
from coordinator.group.why import consumer_group_facts as cgf
from coordinator.group.why.group_facts import group_why
from coordinator.group.why.group_history import BumpMeter, GroupHistories

T_ID = uuid.uuid4()


def group(epoch: int = 3) -> ConsumerGroup:
    g = ConsumerGroup("cg", group_epoch=epoch, assignment_epoch=epoch)
    g.members["m-a"] = Member("m-a", client_id="rdkafka", client_host="/10.0.0.1",
                              subscribed_topic_names=["t"], member_epoch=epoch)
    g.subscription_metadata["t"] = TopicMeta(T_ID, "t", 3)
    return g


def test_a_new_member_bumps_the_epoch_with_its_subscription() -> None:
    why = GroupHistories()
    records = [MemberSubscription("cg", "m-b", client_id="java", client_host="/10.0.0.2",
                                  subscribed_topic_names=("t", "u")), GroupEpoch("cg", 4)]
    assert cgf.epoch_bumped(why, group(), records, 1000) == 4
    [e] = why.events("cg")
    assert (e.time_ms, e.generation, e.kind, e.member_id, e.client_id, e.host) == (
        1000, 4, "member-joined", "m-b", "java", "/10.0.0.2")
    assert e.reason == "subscribed to topics t, u"
    assert why.epoch_bumps.count == 1


def test_records_without_a_higher_epoch_are_no_bump() -> None:
    why = GroupHistories()
    steady = [CurrentAssignment("cg", "m-a", member_epoch=3, state=MemberState.STABLE)]
    assert cgf.epoch_bumped(why, group(), steady, 1) is None
    assert cgf.epoch_bumped(why, group(), [GroupEpoch("cg", 3)], 1) is None   # replayed already
    assert why.events("cg") == [] and why.epoch_bumps.count == 0


def test_leave_fence_subscription_and_metadata_causes() -> None:
    g = group()
    leave = [CurrentAssignment("cg", "m-a", tombstone=True),
             MemberSubscription("cg", "m-a", tombstone=True), GroupEpoch("cg", 4)]
    t = cgf.classify(g, leave)
    assert (t.kind, t.member_id, t.client_id, t.host) == ("member-left", "m-a", "rdkafka",
                                                           "/10.0.0.1")
    assert t.reason == "sent a heartbeat with member epoch -1 (leave the group)"
    fenced = cgf.classify(g, leave, fenced="session-timeout", timeout_ms=45000)
    assert fenced.kind == "member-fenced"
    assert fenced.reason == ("no heartbeat within the session timeout "
                             "(group.consumer.session.timeout.ms=45,000)")
    assert "rebalance timeout (30,000 ms)" in cgf.classify(
        g, leave, fenced="rebalance timeout", timeout_ms=30000).reason
    g.members["m-a"].rebalance_timeout_ms = 5000           # its own wins
    assert "rebalance timeout (5,000 ms)" in cgf.classify(
        g, leave, fenced="rebalance timeout", timeout_ms=30000).reason
    changed = cgf.classify(g, [MemberSubscription(
        "cg", "m-a", client_id="rdkafka", subscribed_topic_names=("t", "v"),
        server_assignor="range"), GroupEpoch("cg", 4)])
    assert changed.kind == "subscription-changed"
    assert changed.reason == "topics t -> t, v; assignor default -> range"
    grown = cgf.classify(g, [SubscriptionMetadata("cg", (TopicMeta(T_ID, "t", 6),
                                                         TopicMeta(uuid.uuid4(), "u", 1))),
                             GroupEpoch("cg", 4)])
    assert (grown.kind, grown.member_id) == ("metadata-changed", "")
    assert grown.reason == ("the subscribed topics changed: topic t grew from 3 to 6 "
                            "partitions; topic u (1 partitions) appeared")
    recreated = cgf.classify(g, [SubscriptionMetadata("cg", (TopicMeta(uuid.uuid4(), "t", 3),)),
                                 GroupEpoch("cg", 4)])
    assert "topic t was re-created" in recreated.reason


def test_the_first_member_of_a_new_group_and_the_events_order() -> None:
    why = GroupHistories()
    first = [GroupEpoch("cg", 1), MemberSubscription("cg", "m-a", client_id="c",
                                                     subscribed_topic_regex="^orders-.*",
                                                     instance_id="i-1"),
             TargetAssignmentEpoch("cg", 1)]
    assert cgf.epoch_bumped(why, None, first, 10) == 1
    assert why.events("cg")[0].reason == ("subscribed to regex '^orders-.*' "
                                          "(static member group.instance.id=i-1)")
    cgf.epoch_bumped(why, group(1), [MemberSubscription("cg", "m-a", tombstone=True),
                                     GroupEpoch("cg", 2)], 20, fenced="session-timeout")
    assert [(e.generation, e.kind) for e in why.events("cg")] == [(1, "member-joined"),
                                                                   (2, "member-fenced")]


def test_group_why_of_a_consumer_group_uses_its_epoch_and_state() -> None:
    g = group(5)
    g.group_epoch = 6                       # the target is not computed yet
    why = GroupHistories()
    cgf.epoch_bumped(why, group(5), [MemberSubscription("cg", "m-x"), GroupEpoch("cg", 6)], 7)
    coordinator = SimpleNamespace(consumer=SimpleNamespace(groups={"cg": g}), groups={},
                                  why=why)
    w = group_why(coordinator, "cg")
    assert (w.state, w.generation, [e.kind for e in w.rebalances]) == ("Assigning", 6,
                                                                      ["member-joined"])
    assert group_why(coordinator, "other").state == "Dead"      # neither kind: as before


def test_bump_meter_rate_is_over_its_window() -> None:
    m = BumpMeter(window_ms=10_000)
    for t in (0, 1000, 9000):
        m.record(t)
    assert m.count == 3 and m.rate(9500) == 0.3
    assert m.rate(10_500) == 0.2 and m.count == 3      # the first fell out of the window
