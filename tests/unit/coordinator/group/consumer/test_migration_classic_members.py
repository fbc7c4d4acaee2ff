"""Classic members inside a consumer group (coordinator/group/consumer/classic_members.py):
JoinGroup / SyncGroup / Heartbeat / LeaveGroup answered from the consumer group's
state machine, after an upgrade, with every record replayed as the coordinator does.
The invariant checked throughout: no partition has two owners."""

from __future__ import annotations

import uuid

from coordinator.group.consumer import classic_members as cm
from coordinator.group.consumer import group_logic as gl
from coordinator.group.consumer import migration as mg
from coordinator.group.consumer import records as r
from coordinator.group.consumer.model import ConsumerGroup, MemberState, TopicMeta
from coordinator.group.consumer.replay import replay
from coordinator.group.consumer.topic_view import StaticTopics
from coordinator.group.classic.coordinator_types import JoinRequest, LeaveMember
from coordinator.group.classic.group_metadata import GroupMetadata, MemberMetadata
from coordinator.group.classic.group_state import GroupState
from client.consumer_protocol import decode_assignment, encode_assignment, encode_subscription
from protocol.errors import ErrorCode

T1 = uuid.UUID(int=1)
TOPICS = StaticTopics([TopicMeta(T1, "t1", 6)])
CONFIG = gl.GroupConfig()
SUB = encode_subscription(["t1"])
RANGE = [("range", SUB)]


class Groups:
    """The consumer groups as the coordinator keeps them: changed only by replay."""

    def __init__(self, records: list[r.Record]) -> None:
        self.groups: dict[str, ConsumerGroup] = {}
        self.apply(records)

    def apply(self, records: list[r.Record]) -> None:
        for record in records:
            replay(self.groups, record)
        owners = self.group.owners
        seen: dict[tuple[uuid.UUID, int], str] = {}
        for mid, m in self.group.members.items():
            for part in (m.assigned, m.pending_revocation):
                for tid, ps in part.items():
                    for p in ps:
                        assert (tid, p) not in seen, f"{(tid, p)} owned by {seen[(tid, p)]} and {mid}"
                        seen[(tid, p)] = mid
        assert seen == owners

    @property
    def group(self) -> ConsumerGroup:
        return self.groups["g"]

    def join(self, member_id: str, protocols: list[tuple[str, bytes]] = RANGE,
             instance: str | None = None, require_known: bool = False,
             protocol_type: str = "consumer") -> cm.JoinOutcome:
        out = cm.join(self.group, JoinRequest("g", member_id, 10_000, 30_000, protocol_type,
                                              protocols, group_instance_id=instance,
                                              require_known_member_id=require_known,
                                              client_id="cl", client_host="/h"),
                      TOPICS, CONFIG, 0, replay)
        self.apply(out.records)
        return out

    def consumer_heartbeat(self, member_id: str, epoch: int,
                           owned: dict[uuid.UUID, frozenset[int]] | None) -> gl.HeartbeatResult:
        res, records = gl.heartbeat(self.group, gl.Heartbeat(
            "g", member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=30_000,
            subscribed_topic_names=["t1"] if epoch == 0 else None, owned=owned, api_version=1),
            TOPICS, CONFIG, 0)
        assert res.error == 0, res
        self.apply(records)
        return res

    def sync(self, member_id: str, generation: int) -> tuple[int, list[tuple[str, int]]]:
        res, _ = cm.sync(self.group, member_id, None, generation, "consumer", "range", TOPICS)
        return res.error, sorted(decode_assignment(res.assignment)) if res.assignment else []


def upgraded() -> Groups:
    """A classic group of a (t1-0..2) and b (t1-3..5), generation 3, upgraded."""
    classic = GroupMetadata("g", GroupState.STABLE, 0)
    classic.generation_id = 3
    for mid, parts in (("a", [0, 1, 2]), ("b", [3, 4, 5])):
        classic.add(MemberMetadata(mid, None, "cl", "/h", 30_000, 10_000, "consumer", RANGE))
        classic.members[mid].assignment = encode_assignment([("t1", p) for p in parts])
    classic.protocol_type, classic.protocol_name = "consumer", "range"
    return Groups(mg.upgrade(classic, TOPICS).records)


def test_classic_members_reconcile_with_a_consumer_member() -> None:
    g = upgraded()
    assert g.group.group_epoch == 3 and gl.state_of(g.group).value == "Stable"
    assert cm.heartbeat(g.group, "a", None, 3)[0] == ErrorCode.NONE
    assert g.sync("a", 3) == (ErrorCode.NONE, [("t1", 0), ("t1", 1), ("t1", 2)])
    # a consumer-protocol member joins: the group epoch moves on, nothing is free yet
    joined = g.consumer_heartbeat("c", 0, {})
    assert g.group.group_epoch == 4 and joined.assignment == {}
    # the classic members learn it from their heartbeats and syncs
    assert cm.heartbeat(g.group, "a", None, 3)[0] == ErrorCode.REBALANCE_IN_PROGRESS
    assert cm.heartbeat(g.group, "b", None, 3)[0] == ErrorCode.REBALANCE_IN_PROGRESS
    assert g.sync("a", 3)[0] == ErrorCode.REBALANCE_IN_PROGRESS
    assert cm.heartbeat(g.group, "a", None, 2)[0] == ErrorCode.ILLEGAL_GENERATION
    # a rejoins (eager: it owns nothing now) and gets its share at the new epoch
    out = g.join("a")
    assert out.result.error == ErrorCode.NONE and out.result.generation_id == 4
    assert out.result.protocol_name == "range" and out.result.leader_id == "" \
        and out.result.members == []
    error, a_parts = g.sync("a", 4)
    assert error == ErrorCode.NONE and len(a_parts) == 2 and set(a_parts) <= {("t1", p) for p in range(3)}
    assert cm.heartbeat(g.group, "a", None, 4)[0] == ErrorCode.NONE
    # the consumer member gets what a released, b still holds its old three
    got = g.consumer_heartbeat("c", g.group.members["c"].member_epoch, {})
    assert got.assignment is not None and len(got.assignment.get(T1, frozenset())) == 1
    out = g.join("b")
    assert out.result.generation_id == 4
    error, b_parts = g.sync("b", 4)
    assert error == ErrorCode.NONE and len(b_parts) == 2
    c = g.group.members["c"]
    g.consumer_heartbeat("c", c.member_epoch, c.assigned)
    assert len(g.group.members["c"].assigned[T1]) == 2
    assert gl.state_of(g.group).value == "Stable"
    # every member's classic metadata survived its heartbeats
    assert g.group.members["a"].classic is not None and g.group.members["c"].classic is None


def test_a_classic_member_waiting_on_partitions_is_told_to_rejoin_when_they_are_free() -> None:
    g = upgraded()
    g.consumer_heartbeat("c", 0, {})
    # a classic member whose target includes partitions c... construct: c leaves, a and b
    # rejoin; then a new classic member d joins and waits for partitions a and b hold
    out = g.join("", require_known=True)
    assert out.result.error == ErrorCode.MEMBER_ID_REQUIRED and out.result.member_id
    assert out.records == []
    d = out.result.member_id
    out = g.join(d)
    assert out.result.error == ErrorCode.NONE
    member = g.group.members[d]
    assert member.classic is not None and member.classic.session_timeout_ms == 10_000
    assert member.state == MemberState.UNRELEASED_PARTITIONS
    assert cm.heartbeat(g.group, d, None, member.member_epoch)[0] == ErrorCode.NONE   # waits
    for mid in ("a", "b"):
        g.join(mid)                       # they give up what the new target moved
    assert cm.heartbeat(g.group, d, None, member.member_epoch)[0] == \
        ErrorCode.REBALANCE_IN_PROGRESS   # its partitions are free now: rejoin to get them
    out = g.join(d)
    assert g.sync(d, out.result.generation_id)[1] != []


def test_join_errors() -> None:
    g = upgraded()
    assert g.join("", protocol_type="connect").result.error == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert g.join("", [("roundrobin", SUB)]).result.error == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL               # a and b support only range
    assert g.join("", [("roundrobin", SUB), ("range", SUB)]).result.error == ErrorCode.NONE
    assert g.join("x", instance="nobody").result.error == ErrorCode.UNKNOWN_MEMBER_ID
    full = cm.join(g.group, JoinRequest("g", "", 10_000, 30_000, "consumer", RANGE),
                   TOPICS, gl.GroupConfig(max_size=3), 0, replay)
    assert full.result.error == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_sync_and_heartbeat_errors() -> None:
    g = upgraded()
    g.consumer_heartbeat("c", 0, {})
    c_epoch = g.group.members["c"].member_epoch
    assert cm.heartbeat(g.group, "c", None, c_epoch)[0] == ErrorCode.UNKNOWN_MEMBER_ID
    assert cm.heartbeat(g.group, "zz", None, 3)[0] == ErrorCode.UNKNOWN_MEMBER_ID
    res, _ = cm.sync(g.group, "a", None, 3, "connect", None, TOPICS)
    assert res.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    res, _ = cm.sync(g.group, "a", None, 3, "consumer", "roundrobin", TOPICS)
    assert res.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    res, _ = cm.sync(g.group, "a", None, 7, None, None, TOPICS)
    assert res.error == ErrorCode.ILLEGAL_GENERATION


def test_leave() -> None:
    g = upgraded()
    g.consumer_heartbeat("c", 0, {})
    epoch = g.group.group_epoch
    members = [LeaveMember("a"), LeaveMember("c"), LeaveMember("zz"),
               LeaveMember("", group_instance_id="nobody")]
    records, removed = cm.leave(g.group, members, TOPICS, CONFIG, 0, replay)
    assert removed == ["a"]
    assert [m.error for m in members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID,
                                          ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID]
    g.apply(records)
    assert "a" not in g.group.members and g.group.group_epoch == epoch + 1


def test_a_static_classic_member_rejoining_with_a_new_id_replaces_the_old_one() -> None:
    classic = GroupMetadata("g", GroupState.STABLE, 0)
    classic.generation_id = 2
    classic.add(MemberMetadata("s-old", "inst", "cl", "/h", 30_000, 10_000, "consumer", RANGE))
    classic.members["s-old"].assignment = encode_assignment([("t1", p) for p in range(6)])
    classic.add(MemberMetadata("a", None, "cl", "/h", 30_000, 10_000, "consumer", RANGE))
    classic.protocol_type, classic.protocol_name = "consumer", "range"
    g = Groups(mg.upgrade(classic, TOPICS).records)
    assert g.join("other", instance="inst").result.error == ErrorCode.FENCED_INSTANCE_ID
    out = g.join("", instance="inst")
    assert out.result.error == ErrorCode.NONE
    new_id = out.result.member_id
    assert new_id != "s-old" and "s-old" not in g.group.members
    assert g.group.static_members == {"inst": new_id}
    assert g.group.members[new_id].assigned == {T1: frozenset(range(6))}   # inherited
    assert g.group.members[new_id].classic is not None


def test_an_empty_rack_in_the_subscription_is_no_rack() -> None:
    """librdkafka writes ConsumerProtocolSubscription v3 with rack "" when client.rack is
    unset; a ConsumerGroupHeartbeat would be INVALID_REQUEST with it."""
    from protocol.codec import encode_prefixed
    from protocol.internal_topics import CONSUMER_SUBSCRIPTION
    g = upgraded()
    sub = encode_prefixed(CONSUMER_SUBSCRIPTION, 3, topics=["t1"], user_data=None,
                          owned_partitions=[], generation_id=3, rack_id="")
    out = g.join("a", [("range", sub)])
    assert out.result.error == ErrorCode.NONE
    assert g.group.members["a"].rack_id is None


def test_a_consumer_member_takes_over_a_classic_static_members_instance_id() -> None:
    """Kafka checks that an instance id was released only between consumer-protocol
    members: a classic static member is replaced at once (a rolling upgrade of static
    members), keeping its assignment."""
    classic = GroupMetadata("g", GroupState.STABLE, 0)
    classic.generation_id = 2
    classic.add(MemberMetadata("s-old", "inst", "cl", "/h", 30_000, 10_000, "consumer", RANGE))
    classic.members["s-old"].assignment = encode_assignment([("t1", p) for p in range(3)])
    classic.add(MemberMetadata("a", None, "cl", "/h", 30_000, 10_000, "consumer", RANGE))
    classic.members["a"].assignment = encode_assignment([("t1", p) for p in range(3, 6)])
    classic.protocol_type, classic.protocol_name = "consumer", "range"
    g = Groups(mg.upgrade(classic, TOPICS).records)
    res, records = gl.heartbeat(g.group, gl.Heartbeat(
        "g", member_id="s-new", member_epoch=0, instance_id="inst", rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t1"], owned={}, api_version=1), TOPICS, CONFIG, 0)
    assert res.error == ErrorCode.NONE, res
    g.apply(records)
    assert "s-old" not in g.group.members and g.group.static_members == {"inst": "s-new"}
    assert g.group.members["s-new"].classic is None
    # ... but a consumer-protocol static member still holding it is not
    res, _ = gl.heartbeat(g.group, gl.Heartbeat(
        "g", member_id="s-other", member_epoch=0, instance_id="inst", rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t1"], owned={}, api_version=1), TOPICS, CONFIG, 0)
    assert res.error == ErrorCode.UNRELEASED_INSTANCE_ID
