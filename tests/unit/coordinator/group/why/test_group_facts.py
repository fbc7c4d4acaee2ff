"""What the group coordinator records about rebalances (coordinator/group/why/group_facts.py),
driven through the real coordinator on a fake clock (the fixtures of
tests/unit/coordinator/group/classic/test_group_coordinator.py)."""

from __future__ import annotations

from coordinator.group.classic.group_coordinator import LeaveMember
from coordinator.group.why.group_facts import group_why
from protocol.errors import ErrorCode

from tests.unit.coordinator.group.classic.test_group_coordinator import (join, loaded, make, run,
                                                                   settle, stable_group, sync)
from tests.unit.broker.replication.fakes import FakeClock


def kinds(c, group: str = "g") -> list[tuple[str, int]]:  # noqa: ANN001
    return [(e.kind, e.generation) for e in group_why(c, group).rebalances]


def test_new_group_join_leave_with_reason_and_timeout() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock)
        await loaded(c)
        a, b, d = await stable_group(c, clock, 3)
        assert kinds(c) == [("new-group", 1), ("join", 1), ("join", 1)]
        first = group_why(c, "g").rebalances[0]
        assert first.client_id == "c" and first.member_id in (a.member_id, b.member_id,
                                                               d.member_id)
        error, _ = c.leave_group("g", [LeaveMember(a.member_id, reason="the consumer is closing")])
        assert error == ErrorCode.NONE
        leave = group_why(c, "g").rebalances[-1]
        assert (leave.kind, leave.member_id, leave.generation) == ("leave", a.member_id, -1)
        assert leave.reason == "left the group: the consumer is closing"
        rb, rd = join(c, b.member_id), join(c, d.member_id)
        await settle()
        rb, rd = await rb, await rd
        assert rb.generation_id == 2
        assert kinds(c)[-1] == ("leave", 2)            # closed by the generation it produced
        leader = rb if rb.member_id == rb.leader_id else rd
        await sync(c, rb, {m: b"" for m, _, _ in leader.members} if rb is leader else None)
        await sync(c, rd, {m: b"" for m, _, _ in leader.members} if rd is leader else None)
        await settle()
        # d stops heartbeating; b keeps going until d's 10 s session is over
        for _ in range(3):
            clock.advance(4_000)
            c.heartbeat("g", b.member_id, None, 2)
        timeout = group_why(c, "g").rebalances[-1]
        assert (timeout.kind, timeout.member_id) == ("timeout", d.member_id)
        assert timeout.reason == "no heartbeat within session.timeout.ms=10,000"
        w = group_why(c, "g")
        assert (w.group_id, w.state, w.generation) == ("g", "PreparingRebalance", 2)
    run(body())


def test_rebalance_timeout_static_replace_and_delete() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock)
        await loaded(c)
        a, b = await stable_group(c, clock, 2)
        leader = a if a.member_id == a.leader_id else b
        other = b if leader is a else a
        ra = join(c, leader.member_id)       # the leader rejoins: a rebalance (30 s timeout)
        for _ in range(8):                                  # the other never rejoins but
            clock.advance(4_000)                            # heartbeats: its session lives
            c.heartbeat("g", other.member_id, None, 1)
        await ra
        assert [k for k, _ in kinds(c)][-2:] == ["rejoin", "rejoin-timeout"]
        assert group_why(c, "g").rebalances[-1].member_id == other.member_id
        assert kinds(c)[-1][1] == 2
        c.leave_group("g", [LeaveMember(leader.member_id)])
        await settle()
        assert await c.offsets.delete_groups(["g"]) == {"g": ErrorCode.NONE}
        w = group_why(c, "g")
        assert (w.state, w.generation) == ("Dead", -1)
        assert w.rebalances[-1].kind == "deleted"

        f = join(c, instance="i1")
        clock.advance(0)
        r = await f
        await sync(c, r, {r.member_id: b"A"})
        await settle()
        again = await join(c, instance="i1")
        assert again.error == ErrorCode.NONE
        last = group_why(c, "g").rebalances[-1]
        assert (last.kind, last.member_id, last.generation) == ("static-replace",
                                                                 again.member_id, 1)
        assert "group.instance.id=i1" in last.reason and r.member_id in last.reason
    run(body())
