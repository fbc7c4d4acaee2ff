"""replay(): every record type and its tombstone, derived maps kept
consistent, and the live state equal to a replay from scratch."""

from __future__ import annotations

import uuid

from coordinator.group.consumer import group_logic as gl
from coordinator.group.consumer.model import ConsumerGroup, MemberState, ResolvedRegex, TopicMeta
from coordinator.group.consumer.records import CurrentAssignment, GroupEpoch, MemberSubscription, \
    Record, RegexResolution, SubscriptionMetadata, TargetAssignmentEpoch, \
    TargetAssignmentMember
from coordinator.group.consumer.replay import replay
from tests.unit.coordinator.group.consumer.fake_topics import FakeTopics
from tests.unit.coordinator.group.consumer.group_sim import Sim

T = uuid.UUID(int=7)


def apply(groups: dict[str, ConsumerGroup], *records: Record) -> None:
    for r in records:
        replay(groups, r)


def test_each_record_type_and_tombstone() -> None:
    groups: dict[str, ConsumerGroup] = {}
    meta = TopicMeta(T, "a", 3, {0: frozenset({"r1"})})
    apply(groups,
          MemberSubscription("g", "m1", instance_id="i1", rack_id="r1", client_id="c",
                             subscribed_topic_names=("a",), server_assignor="range",
                             rebalance_timeout_ms=9),
          SubscriptionMetadata("g", (meta,)),
          GroupEpoch("g", 4),
          TargetAssignmentMember("g", "m1", {T: frozenset({0, 1}), uuid.uuid4(): frozenset()}),
          TargetAssignmentEpoch("g", 4),
          CurrentAssignment("g", "m1", member_epoch=4, previous_member_epoch=3,
                            state=MemberState.UNREVOKED_PARTITIONS, assigned={T: frozenset({0})},
                            pending_revocation={T: frozenset({2})}),
          RegexResolution("g", "a.*", ResolvedRegex(frozenset({"a"}), 5, 100)))
    g = groups["g"]
    m = g.members["m1"]
    assert (g.group_epoch, g.assignment_epoch) == (4, 4)
    assert g.subscription_metadata == {"a": meta}
    assert g.target == {"m1": {T: frozenset({0, 1})}}         # empty topics dropped
    assert (m.instance_id, m.rack_id, m.server_assignor, m.rebalance_timeout_ms) == \
        ("i1", "r1", "range", 9)
    assert m.subscribed_topic_names == ["a"]
    assert (m.member_epoch, m.previous_member_epoch, m.state) == \
        (4, 3, MemberState.UNREVOKED_PARTITIONS)
    assert g.owners == {(T, 0): "m1", (T, 2): "m1"}
    assert g.static_members == {"i1": "m1"}
    assert g.resolved_regexes["a.*"].topics == {"a"}

    # the next assignment releases partition 2
    apply(groups, CurrentAssignment("g", "m1", member_epoch=5, previous_member_epoch=4,
                                    assigned={T: frozenset({0, 1})}))
    assert g.owners == {(T, 0): "m1", (T, 1): "m1"}

    apply(groups, RegexResolution("g", "a.*", tombstone=True),
          CurrentAssignment("g", "m1", tombstone=True))
    assert g.owners == {} and g.resolved_regexes == {}
    apply(groups, TargetAssignmentMember("g", "m1", tombstone=True),
          MemberSubscription("g", "m1", tombstone=True))
    assert g.members == {} and g.target == {} and g.static_members == {}
    apply(groups, TargetAssignmentEpoch("g", tombstone=True),
          SubscriptionMetadata("g", tombstone=True))
    assert g.assignment_epoch == -1 and g.subscription_metadata == {}
    apply(groups, GroupEpoch("g", tombstone=True))
    assert groups == {}


def test_tombstones_of_unknown_things_are_ignored() -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, GroupEpoch("x", tombstone=True), MemberSubscription("x", "m", tombstone=True))
    assert groups == {}
    apply(groups, GroupEpoch("g", 1), CurrentAssignment("g", "nope", tombstone=True),
          MemberSubscription("g", "nope", tombstone=True))
    assert groups["g"].members == {}


def test_instance_id_change_updates_static_members() -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, MemberSubscription("g", "m1", instance_id="i1"),
          MemberSubscription("g", "m1", instance_id="i2"))
    assert groups["g"].static_members == {"i2": "m1"}


def test_replay_from_scratch_equals_live_for_a_busy_group() -> None:
    sim = Sim(3)
    sim.topics.create("a", 5)
    sim.topics.create("b", 3)
    c1 = sim.join(["a", "b"], instance_id="i1")
    c2 = sim.join(["a"])
    sim.converge()
    sim.leave(c1, static=True)
    sim.join(["a", "b"], instance_id="i1")
    sim.crash(c2)
    sim.join(None, regex="a|b")
    sim.topics.grow("a", 9)
    sim.refresh()
    sim.converge()
    assert sim.replayed_from_scratch() == sim.groups
    # replaying the whole log twice gives the same state again
    twice: dict[str, ConsumerGroup] = {}
    for r in sim.log + sim.log:
        replay(twice, r)
    assert twice == sim.groups


def test_a_loaded_group_continues_without_a_rebalance() -> None:
    """Failover: a new coordinator replays the log; the members' next
    heartbeats change nothing."""
    sim = Sim(5)
    sim.topics.create("a", 6)
    for _ in range(3):
        sim.join(["a"])
    sim.converge()
    loaded = sim.replayed_from_scratch()
    topics: FakeTopics = sim.topics
    for c in sim.clients.values():
        hb = gl.Heartbeat("g", c.member_id, c.epoch, owned=c.owned_assignment(), api_version=1)
        res, records = gl.heartbeat(loaded["g"], hb, topics, sim.config, 0)
        assert res.error == 0 and records == [] and res.assignment is None
