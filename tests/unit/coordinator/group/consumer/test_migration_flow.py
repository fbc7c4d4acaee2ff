"""The whole migration on the coordinators (classic GroupCoordinator + its
ConsumerGroupCoordinator, an in-memory offsets log): a classic group upgraded by
a consumer-protocol join, its classic members answered from the consumer group
(classic_glue.py), then downgraded when the consumer-protocol member leaves."""

from __future__ import annotations

import asyncio
import uuid

from coordinator.group.consumer import group_logic as gl
from coordinator.group.consumer.model import TopicMeta
from coordinator.group.consumer.topic_view import StaticTopics
from coordinator.group.classic import offsets_topic as ot
from coordinator.group.classic.group_coordinator import GroupCoordinator, LeaveMember
from coordinator.group.classic.group_metadata import JoinResult
from coordinator.group.classic.group_state import GroupState
from client.consumer_protocol import decode_assignment, encode_assignment, encode_subscription
from protocol.errors import ErrorCode
from tests.unit.coordinator.group.classic.test_group_coordinator import MemoryLog, join, loaded, make, \
    run, settle, sync
from tests.unit.broker.replication.fakes import FakeClock

T1 = uuid.UUID(int=1)
PROTOCOLS = [("range", encode_subscription(["t1"]))]


def coordinator(clock: FakeClock, policy: str = "bidirectional") -> GroupCoordinator:
    c = make(clock, MemoryLog())
    c.consumer.topics = StaticTopics([TopicMeta(T1, "t1", 6)])
    c.consumer.config = gl.GroupConfig(migration_policy=policy)
    return c


async def classic_pair(c: GroupCoordinator, clock: FakeClock) -> list[JoinResult]:
    """Two classic members a, b of group g, t1-0..2 and t1-3..5, Stable."""
    futs = [join(c, protocols=PROTOCOLS) for _ in range(2)]
    clock.advance(0)
    joined = [await f for f in futs]
    leader = next(j for j in joined if j.member_id == j.leader_id)
    ids = sorted(j.member_id for j in joined)
    plan = {ids[0]: encode_assignment([("t1", p) for p in range(3)]),
            ids[1]: encode_assignment([("t1", p) for p in range(3, 6)])}
    syncs = [sync(c, j, plan if j is leader else None) for j in joined]
    await settle()
    assert {(await s).error for s in syncs} == {ErrorCode.NONE}
    assert c.groups["g"].is_(GroupState.STABLE)
    return sorted(joined, key=lambda j: j.member_id)


async def consumer_join(c: GroupCoordinator, member_id: str) -> gl.HeartbeatResult:
    return await c.consumer.heartbeat(gl.Heartbeat(
        "g", member_id=member_id, member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t1"], owned={}, api_version=1))


async def rejoin(c: GroupCoordinator, member_id: str) -> tuple[int, list[tuple[str, int]]]:
    """A classic member's JoinGroup + SyncGroup -> (generation, its partitions)."""
    joined = await join(c, member_id, protocols=PROTOCOLS)
    assert joined.error == ErrorCode.NONE, joined
    synced = await sync(c, joined)
    assert synced.error == ErrorCode.NONE, synced
    return joined.generation_id, sorted(decode_assignment(synced.assignment))


def test_upgrade_reconcile_and_downgrade() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = coordinator(clock)
        await loaded(c)
        a, b = await classic_pair(c, clock)
        c.committed.of("g").committed[("t1", 0)] = ot.OffsetAndMetadata(11)
        generation = a.generation_id
        # the first consumer-protocol member upgrades the group
        first = await consumer_join(c, "cons-1")
        assert first.error == ErrorCode.NONE, first
        group = c.consumer.groups["g"]
        assert set(group.members) == {a.member_id, b.member_id, "cons-1"}
        assert group.group_epoch == generation + 1
        assert "g" not in c.groups                           # one group per id: no classic one
        assert c.committed.committed("g") == {("t1", 0): ot.OffsetAndMetadata(11)}  # offsets stay
        # the classic members are told to rejoin, and get their share from the broker
        assert c.heartbeat("g", a.member_id, None, generation) == ErrorCode.REBALANCE_IN_PROGRESS
        gen_a, parts_a = await rejoin(c, a.member_id)
        assert gen_a == generation + 1 and len(parts_a) == 2
        gen_b, parts_b = await rejoin(c, b.member_id)
        assert len(parts_b) == 2 and not set(parts_a) & set(parts_b)
        assert c.heartbeat("g", a.member_id, None, gen_a) == ErrorCode.NONE
        cons = group.members["cons-1"]
        res = await c.consumer.heartbeat(gl.Heartbeat("g", member_id="cons-1",
                                                      member_epoch=cons.member_epoch,
                                                      owned={}, api_version=1))
        assert res.error == ErrorCode.NONE and len(res.assignment[T1]) == 2   # type: ignore[index]
        assert gl.state_of(c.consumer.groups["g"]).value == "Stable"
        # the last consumer-protocol member leaves: the group is classic again
        left = await c.consumer.heartbeat(gl.Heartbeat("g", member_id="cons-1",
                                                       member_epoch=-1, api_version=1))
        assert left.error == ErrorCode.NONE
        assert "g" not in c.consumer.groups
        classic = c.groups["g"]
        assert classic.is_(GroupState.PREPARING_REBALANCE)
        assert set(classic.members) == {a.member_id, b.member_id}
        assert c.committed.committed("g") == {("t1", 0): ot.OffsetAndMetadata(11)}
        assert c.heartbeat("g", a.member_id, None, classic.generation_id) == \
            ErrorCode.REBALANCE_IN_PROGRESS
        futs = [join(c, m, protocols=PROTOCOLS) for m in (a.member_id, b.member_id)]
        clock.advance(0)
        joined = [await f for f in futs]
        assert {j.error for j in joined} == {ErrorCode.NONE}
        assert joined[0].generation_id == classic.generation_id
    run(body())


def test_classic_leave_and_sync_timeout_inside_a_consumer_group() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = coordinator(clock)
        await loaded(c)
        a, b = await classic_pair(c, clock)
        assert (await consumer_join(c, "cons-1")).error == ErrorCode.NONE
        error, answered = c.leave_group("g", [LeaveMember(a.member_id), LeaveMember("nobody")])
        assert error == ErrorCode.NONE
        assert [m.error for m in answered] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
        await settle()
        assert a.member_id not in c.consumer.groups["g"].members
        # b stays a classic member of the consumer group
        assert c.heartbeat("g", b.member_id, None, b.generation_id) == \
            ErrorCode.REBALANCE_IN_PROGRESS
    run(body())


def test_policy_disabled_keeps_groups_as_they_are() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = coordinator(clock, policy="disabled")
        await loaded(c)
        a, b = await classic_pair(c, clock)
        refused = await consumer_join(c, "cons-1")
        assert refused.error == ErrorCode.GROUP_ID_NOT_FOUND
        assert c.groups["g"].is_(GroupState.STABLE) and "g" not in c.consumer.groups
        # a consumer group takes classic members whatever the policy ...
        c2 = coordinator(clock, policy="disabled")
        await loaded(c2)
        assert (await consumer_join(c2, "cons-1")).error == ErrorCode.NONE
        bad = await join(c2, protocols=[("range", encode_subscription(["t1"]))],
                         require_known=False)
        assert bad.error == ErrorCode.NONE and bad.generation_id > 0
        wrong_type = asyncio.get_running_loop().create_future()
        from coordinator.group.classic.coordinator_types import JoinRequest
        c2.handle_join(JoinRequest("g", "", 10_000, 30_000, "connect", PROTOCOLS),
                       lambda r: wrong_type.done() or wrong_type.set_result(r))
        assert (await wrong_type).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        # ... and does not become classic when its last consumer member leaves
        left = await c2.consumer.heartbeat(gl.Heartbeat("g", member_id="cons-1",
                                                        member_epoch=-1, api_version=1))
        assert left.error == ErrorCode.NONE
        assert set(c2.consumer.groups["g"].members) == {bad.member_id}
    run(body())


def test_a_static_classic_member_replacing_the_last_consumer_member_downgrades() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = coordinator(clock)
        await loaded(c)
        a, b = await classic_pair(c, clock)
        joined = await c.consumer.heartbeat(gl.Heartbeat(
            "g", member_id="static-1", member_epoch=0, instance_id="inst",
            rebalance_timeout_ms=30_000, subscribed_topic_names=["t1"], owned={},
            api_version=1))
        assert joined.error == ErrorCode.NONE
        c.heartbeat("g", a.member_id, None, a.generation_id)
        await rejoin(c, a.member_id)
        await rejoin(c, b.member_id)
        static = c.consumer.groups["g"].members["static-1"]
        res = await c.consumer.heartbeat(gl.Heartbeat("g", member_id="static-1",
                                                      member_epoch=static.member_epoch,
                                                      instance_id="inst", owned={},
                                                      api_version=1))
        owned = c.consumer.groups["g"].members["static-1"].assigned
        assert res.error == ErrorCode.NONE and owned
        # the same instance restarts with the classic protocol: the group is classic again
        back = await join(c, instance="inst", protocols=PROTOCOLS)
        assert back.error == ErrorCode.NONE, back
        assert "g" not in c.consumer.groups
        classic = c.groups["g"]
        assert classic.is_(GroupState.STABLE)          # no rebalance
        assert set(classic.members) == {a.member_id, b.member_id, back.member_id}
        assert classic.static_members == {"inst": back.member_id}
        assert back.generation_id == classic.generation_id
        synced = await sync(c, back, instance="inst")
        assert synced.error == ErrorCode.NONE
        assert sorted(decode_assignment(synced.assignment)) == \
            sorted(("t1", p) for p in owned[T1])             # what the old instance owned
    run(body())
