"""Classic <-> consumer group conversions (coordinator/group/consumer/migration.py):
the records each direction writes, the policy checks, and the classic
coordinator letting a group go / taking it over."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable

import pytest

from coordinator.group.consumer import migration as mg
from coordinator.group.consumer import records as r
from coordinator.group.consumer.model import ClassicMemberMetadata, ConsumerGroup, Member, \
    MemberState, TopicMeta
from coordinator.group.classic import offsets_topic as ot
from coordinator.group.classic.group_metadata import GroupMetadata, MemberMetadata
from coordinator.group.classic.group_state import GroupState
from client.consumer_protocol import decode_assignment, encode_assignment, encode_subscription
from protocol.codec import encode_prefixed
from protocol.errors import ErrorCode
from protocol.internal_topics import CONSUMER_SUBSCRIPTION
from tests.unit.coordinator.group.classic.test_group_coordinator import join, loaded, make, run, \
    settle, stable_group, sync
from tests.unit.broker.replication.fakes import FakeClock

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
OWNED = CONSUMER_SUBSCRIPTION.structs["TopicPartition"]


class Topics:
    def __init__(self, **partitions: int) -> None:
        ids = {"t1": T1, "t2": T2}
        self.metas = {name: TopicMeta(ids.get(name, uuid.uuid5(uuid.NAMESPACE_DNS, name)), name, n)
                      for name, n in partitions.items()}
        self.version = 1

    def by_name(self, name: str) -> TopicMeta | None:
        return self.metas.get(name)

    def names(self) -> Iterable[str]:
        return list(self.metas)


def subscription_v3(topics: list[str], rack: str | None, owned: dict[str, list[int]]) -> bytes:
    return encode_prefixed(CONSUMER_SUBSCRIPTION, 3, topics=topics, user_data=None,
                           owned_partitions=[OWNED.new(topic=t, partitions=ps)
                                             for t, ps in owned.items()],
                           generation_id=4, rack_id=rack)


def classic_group(generation: int = 5) -> GroupMetadata:
    g = GroupMetadata("g", GroupState.STABLE, 1000)
    g.generation_id = generation
    sub_a = subscription_v3(["t1", "t2"], "rack-a", {"t1": [0]})
    sub_b = encode_subscription(["t1", "t2"])
    g.add(MemberMetadata("a", None, "client-a", "/10.0.0.1", 30_000, 10_000, "consumer",
                         [("cooperative-sticky", sub_a), ("range", sub_a)]))
    g.add(MemberMetadata("b", "static-b", "client-b", "/10.0.0.2", 40_000, 12_000, "consumer",
                         [("range", sub_b)]))
    g.protocol_type = "consumer"
    g.protocol_name = "range"
    g.members["a"].assignment = encode_assignment([("t1", 0), ("t2", 1), ("gone", 0)])
    g.members["b"].assignment = encode_assignment([("t1", 1), ("t2", 0)])
    return g


# -- policy --------------------------------------------------------------------------------

def test_policy_parse() -> None:
    assert mg.MigrationPolicy.parse("BIDIRECTIONAL") is mg.MigrationPolicy.BIDIRECTIONAL
    assert mg.MigrationPolicy.parse(" upgrade ").upgrade_enabled
    assert not mg.MigrationPolicy.parse("upgrade").downgrade_enabled
    assert mg.MigrationPolicy.parse("downgrade").downgrade_enabled
    assert not mg.MigrationPolicy.parse("disabled").upgrade_enabled
    with pytest.raises(ValueError, match=r"group.consumer.migration.policy='sideways'"):
        mg.MigrationPolicy.parse("sideways")


def test_can_upgrade() -> None:
    g = classic_group()
    assert mg.can_upgrade(g, "bidirectional", 10)
    assert mg.can_upgrade(g, "upgrade", 2)
    assert not mg.can_upgrade(g, "downgrade", 10)
    assert not mg.can_upgrade(g, "disabled", 10)
    assert not mg.can_upgrade(g, "bidirectional", 1)          # more than max size
    g.protocol_type = "connect"
    assert not mg.can_upgrade(g, "bidirectional", 10)         # not the consumer protocol
    assert mg.is_empty_classic(GroupMetadata("e", GroupState.EMPTY, 0))
    assert not mg.is_empty_classic(classic_group()) and not mg.is_empty_classic(None)


# -- upgrade -------------------------------------------------------------------------------

def test_upgrade_records() -> None:
    conv = mg.upgrade(classic_group(generation=5), Topics(t1=2, t2=2))
    assert conv.classic_first and conv.classic_records == [(ot.group_metadata_key("g"), None)]
    kinds = [type(x).__name__ for x in conv.records]
    assert kinds == ["GroupEpoch", "MemberSubscription", "MemberSubscription",
                     "TargetAssignmentMember", "TargetAssignmentMember",
                     "TargetAssignmentEpoch", "CurrentAssignment", "CurrentAssignment"]
    epoch, sub_a, sub_b, tgt_a, tgt_b, tepoch, cur_a, cur_b = conv.records
    assert epoch == r.GroupEpoch("g", 5) and tepoch == r.TargetAssignmentEpoch("g", 5)
    assert isinstance(sub_a, r.MemberSubscription) and isinstance(sub_b, r.MemberSubscription)
    assert sub_a.subscribed_topic_names == ("t1", "t2") and sub_a.rack_id == "rack-a"
    assert (sub_a.client_id, sub_a.client_host, sub_a.rebalance_timeout_ms) == \
        ("client-a", "/10.0.0.1", 30_000)
    assert sub_a.classic is not None and sub_a.classic.session_timeout_ms == 10_000
    assert [n for n, _ in sub_a.classic.protocols] == ["cooperative-sticky", "range"]
    assert sub_b.instance_id == "static-b" and sub_b.rack_id is None
    assert sub_b.classic == ClassicMemberMetadata(12_000, [("range", encode_subscription(["t1", "t2"]))])
    # the classic assignment, by topic id; "gone" no longer exists and is dropped
    a_parts = {T1: frozenset({0}), T2: frozenset({1})}
    assert tgt_a == r.TargetAssignmentMember("g", "a", a_parts)
    assert tgt_b == r.TargetAssignmentMember("g", "b", {T1: frozenset({1}), T2: frozenset({0})})
    assert cur_a == r.CurrentAssignment("g", "a", member_epoch=5, previous_member_epoch=5,
                                        state=MemberState.STABLE, assigned=a_parts,
                                        pending_revocation={})
    encoded = conv.key_values(lambda rec: (type(rec).__name__.encode(), b"v"))
    assert encoded[0] == (ot.group_metadata_key("g"), None) and encoded[1] == (b"GroupEpoch", b"v")


def test_upgrade_of_a_member_that_has_not_synced_and_of_a_group_without_a_protocol() -> None:
    g = classic_group()
    g.members["b"].assignment = b""
    g.protocol_name = None                                   # first rebalance: none chosen yet
    conv = mg.upgrade(g, Topics(t1=2, t2=2))
    assert r.TargetAssignmentMember("g", "b", {}) in conv.records
    assert {x.rack_id for x in conv.records if isinstance(x, r.MemberSubscription)} == \
        {"rack-a", None}


@pytest.mark.parametrize("where", ["subscription", "assignment"])
def test_upgrade_of_malformed_metadata_fails_and_names_the_member(where: str) -> None:
    g = classic_group()
    if where == "subscription":
        g.members["b"].protocols = [("range", b"\x00\x00\x00\x00\x00\x09t")]
    else:
        g.members["b"].assignment = b"\x00"
    with pytest.raises(mg.MigrationError, match="member b") as e:
        mg.upgrade(g, Topics(t1=2, t2=2))
    assert e.value.error == ErrorCode.GROUP_ID_NOT_FOUND


def test_newer_embedded_versions_are_read_as_the_highest_known() -> None:
    sub = bytearray(subscription_v3(["t1"], "r", {}))
    sub[0:2] = struct.pack(">h", 7)
    parsed = mg.parse_subscription(bytes(sub) + b"future-fields")
    assert parsed.version == 7 and parsed.topics == ("t1",) and parsed.rack_id == "r"


# -- downgrade -----------------------------------------------------------------------------

def consumer_group() -> ConsumerGroup:
    """3 members: 'new' speaks the consumer protocol, 'a' and 'b' classic."""
    sub_v1 = encode_prefixed(CONSUMER_SUBSCRIPTION, 1, topics=["t1"], user_data=None,
                             owned_partitions=[])
    g = ConsumerGroup("g", group_epoch=9, assignment_epoch=9)
    g.members["new"] = Member("new", subscribed_topic_names=["t1"], member_epoch=9,
                              assigned={T1: frozenset({2})})
    g.members["a"] = Member("a", client_id="ca", client_host="/h", rebalance_timeout_ms=30_000,
                            subscribed_topic_names=["t1"], member_epoch=9,
                            classic=ClassicMemberMetadata(10_000, [("range", sub_v1),
                                                                   ("roundrobin", sub_v1)]),
                            assigned={T1: frozenset({0})})
    g.members["b"] = Member("b", instance_id="sb", subscribed_topic_names=["t1"], member_epoch=8,
                            classic=ClassicMemberMetadata(11_000, [("roundrobin", sub_v1),
                                                                   ("range", sub_v1)]),
                            assigned={T1: frozenset({1})}, state=MemberState.UNREVOKED_PARTITIONS)
    g.target = {"new": {T1: frozenset({2})}, "a": {T1: frozenset({0})}, "b": {T1: frozenset({1})}}
    g.subscription_metadata = {"t1": TopicMeta(T1, "t1", 3)}
    return g


def test_can_downgrade() -> None:
    g = consumer_group()
    assert mg.can_downgrade(g, "new", "bidirectional", 10)
    assert mg.can_downgrade(g, "new", "downgrade", 2)
    assert not mg.can_downgrade(g, "new", "upgrade", 10)      # policy
    assert not mg.can_downgrade(g, "new", "disabled", 10)
    assert not mg.can_downgrade(g, "new", "bidirectional", 1)  # 2 classic members > max 1
    assert not mg.can_downgrade(g, "a", "bidirectional", 10)   # a classic member leaving
    assert not mg.can_downgrade(g, "nobody", "bidirectional", 10)
    g.members["b"].classic = None                              # two consumer members
    assert not mg.can_downgrade(g, "new", "bidirectional", 10)
    alone = ConsumerGroup("g", members={"new": Member("new")})
    assert not mg.can_downgrade(alone, "new", "bidirectional", 10)   # stays an empty consumer group


def test_downgrade_records() -> None:
    g = consumer_group()
    g.resolved_regexes = {}
    conv = mg.downgrade(g, "new", Topics(t1=3), now_ms=5000)
    assert not conv.classic_first
    kinds = [type(x).__name__ for x in conv.records]
    assert kinds == ["CurrentAssignment"] * 3 + ["TargetAssignmentMember"] * 3 + \
        ["TargetAssignmentEpoch"] + ["MemberSubscription"] * 3 + \
        ["SubscriptionMetadata", "GroupEpoch"]
    assert all(x.tombstone for x in conv.records)
    ((key, value),) = conv.classic_records
    assert key == ot.group_metadata_key("g") and value is not None
    stored = ot.read_group_value(value)
    assert stored.protocol_type == "consumer" and stored.generation == 9
    assert stored.protocol == "range"          # a votes range, b roundrobin: the first maximum
    assert stored.leader == "a" and [m.member_id for m in stored.members] == ["a", "b"]
    by_id = {m.member_id: m for m in stored.members}
    # the *current* assignments, encoded as the version the member's subscription uses (1)
    assert decode_assignment(by_id["a"].assignment) == [("t1", 0)]
    assert decode_assignment(by_id["b"].assignment) == [("t1", 1)]
    assert struct.unpack(">h", by_id["a"].assignment[:2]) == (1,)
    assert (by_id["b"].group_instance_id, by_id["b"].session_timeout) == ("sb", 11_000)
    assert (by_id["a"].client_id, by_id["a"].rebalance_timeout) == ("ca", 30_000)
    classic = conv.classic
    assert classic is not None and classic.is_(GroupState.STABLE)
    assert [n for n, _ in classic.members["b"].protocols] == ["roundrobin", "range"]
    assert classic.subscribed_topics == {"t1"} and classic.static_members == {"sb": "b"}


def test_downgrade_tombstones_regexes_and_names_deleted_topics_from_the_group() -> None:
    from coordinator.group.consumer.model import ResolvedRegex
    g = consumer_group()
    g.resolved_regexes = {"t.*": ResolvedRegex(frozenset({"t1"}), 1, 0)}
    conv = mg.downgrade(g, "new", Topics(), now_ms=0)    # t1 deleted since
    assert r.RegexResolution("g", "t.*", tombstone=True) in conv.records
    assert conv.records[-1] == r.GroupEpoch("g", tombstone=True)
    assert conv.classic is not None
    assert decode_assignment(conv.classic.members["a"].assignment) == [("t1", 0)]


def test_upgrade_then_downgrade_round_trips_the_assignment() -> None:
    classic = classic_group()
    conv = mg.upgrade(classic, Topics(t1=2, t2=2))
    group = ConsumerGroup("g")
    for rec in conv.records:                       # what replay would build, minimal
        if isinstance(rec, r.GroupEpoch):
            group.group_epoch = rec.epoch
        elif isinstance(rec, r.MemberSubscription):
            group.members[rec.member_id] = Member(
                rec.member_id, instance_id=rec.instance_id, client_id=rec.client_id,
                client_host=rec.client_host, subscribed_topic_names=list(rec.subscribed_topic_names),
                rebalance_timeout_ms=rec.rebalance_timeout_ms, classic=rec.classic)
        elif isinstance(rec, r.CurrentAssignment):
            group.members[rec.member_id].assigned = dict(rec.assigned or {})
            group.members[rec.member_id].member_epoch = rec.member_epoch
    group.members["c"] = Member("c")               # a consumer member that leaves
    back = mg.downgrade(group, "c", Topics(t1=2, t2=2), now_ms=0).classic
    assert back is not None and back.generation_id == 5 and back.protocol_name == "range"
    assert sorted(decode_assignment(back.members["a"].assignment)) == [("t1", 0), ("t2", 1)]
    assert sorted(decode_assignment(back.members["b"].assignment)) == [("t1", 1), ("t2", 0)]
    assert back.members["a"].protocols == classic.members["a"].protocols


def test_downgrade_without_a_common_protocol_fails() -> None:
    g = consumer_group()
    sub = encode_subscription(["t1"])
    g.members["b"].classic = ClassicMemberMetadata(10_000, [("other", sub)])
    with pytest.raises(mg.MigrationError) as e:
        mg.downgrade(g, "new", Topics(t1=3), now_ms=0)
    assert e.value.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


# -- the classic coordinator's side --------------------------------------------------------

def test_complete_upgrade_answers_waiting_members_and_lets_the_group_go() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock)
        await loaded(c)
        results = await stable_group(c, clock, 2)
        c.committed.of("g").committed[("t1", 0)] = ot.OffsetAndMetadata(42)
        waiting = join(c, results[0].member_id)       # the group starts rebalancing
        await settle()
        assert c.groups["g"].is_(GroupState.PREPARING_REBALANCE) and not waiting.done()
        removed = mg.complete_upgrade(c, "g")
        assert (await waiting).error == ErrorCode.REBALANCE_IN_PROGRESS
        assert removed is not None and removed.is_(GroupState.DEAD)
        # the offsets are keyed by the group id: the new kind of group finds them
        assert c.committed.committed("g") == {("t1", 0): ot.OffsetAndMetadata(42)}
        assert "g" not in c.groups and mg.complete_upgrade(c, "g") is None
        clock.advance(60_000)                            # old session timers do nothing
        await settle()
        assert "g" not in c.groups
    run(body())


def test_install_downgraded_keeps_offsets_and_rebalances() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock)
        await loaded(c)
        c.committed.of("g").committed[("t1", 0)] = ot.OffsetAndMetadata(7)
        conv = mg.downgrade(consumer_group(), "new", Topics(t1=3), now_ms=clock())
        classic = mg.install_downgraded(c, conv)
        assert c.groups["g"] is classic
        assert c.committed.committed("g") == {("t1", 0): ot.OffsetAndMetadata(7)}
        assert classic.is_(GroupState.PREPARING_REBALANCE)
        # members learn of the rebalance with the generation = the old group epoch
        assert c.heartbeat("g", "a", None, 9) == ErrorCode.REBALANCE_IN_PROGRESS
        assert c.heartbeat("g", "b", "sb", 8) == ErrorCode.ILLEGAL_GENERATION
        futs = [join(c, "a", protocols=classic.members["a"].protocols),
                join(c, "b", instance="sb", protocols=classic.members["b"].protocols)]
        clock.advance(0)
        joined = [await f for f in futs]
        assert {j.error for j in joined} == {ErrorCode.NONE}
        assert {j.generation_id for j in joined} == {10}
        leader = next(j for j in joined if j.member_id == j.leader_id)
        syncs = [sync(c, j, {"a": b"A", "b": b"B"} if j is leader else None,
                      instance="sb" if j.member_id == "b" else None) for j in joined]
        await settle()
        assert sorted([(await s).assignment for s in syncs]) == [b"A", b"B"]
        assert c.groups["g"].is_(GroupState.STABLE)
    run(body())


def test_install_downgraded_without_a_rebalance_keeps_the_group_stable() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock)
        await loaded(c)
        conv = mg.downgrade(consumer_group(), "new", Topics(t1=3), now_ms=clock())
        classic = mg.install_downgraded(c, conv, rebalance=False)
        assert classic.is_(GroupState.STABLE)
        assert c.heartbeat("g", "a", None, 9) == ErrorCode.NONE
        clock.advance(12_000)                            # sessions of 10 s and 11 s expire
        await settle()
        assert "a" not in c.groups["g"].members and "b" not in c.groups["g"].members
    run(body())



def test_conversions_encode_with_the_record_codec() -> None:
    from coordinator.group.consumer import record_codec
    up = mg.upgrade(classic_group(), Topics(t1=2, t2=2))
    batch = up.key_values(record_codec.encode)
    assert batch[0] == (ot.group_metadata_key("g"), None)
    assert [record_codec.decode(k, v) for k, v in batch[1:]] == up.records
    down = mg.downgrade(consumer_group(), "new", Topics(t1=3), now_ms=0)
    batch = down.key_values(record_codec.encode)
    assert all(v is None for _, v in batch[:-1]) and batch[-1] == down.classic_records[0]
    assert ot.read_key(batch[-1][0]) == ot.GroupKey("g")
