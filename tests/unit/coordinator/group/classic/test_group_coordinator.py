"""The coordinator on a fake clock/timer and an in-memory offsets log."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from coordinator.group.classic import offsets_topic as ot
from coordinator.group.classic.group_coordinator import CoordinatorConfig, GroupCoordinator, \
    JoinRequest, LeaveMember, java_string_hash, partition_for_group
from coordinator.group.classic.group_metadata import JoinResult, SyncResult
from coordinator.group.classic.group_state import GroupState
from protocol.errors import ErrorCode
from tests.unit.broker.replication.fakes import FakeClock

PROTOCOLS = [("range", b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff")]


class MemoryLog:
    """OffsetsLog in memory: every partition led at epoch 0 unless told otherwise."""

    def __init__(self) -> None:
        self.records: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.error = ErrorCode.NONE
        self.leader: dict[int, int | None] = {}

    async def append(self, partition: int, records: list[tuple[bytes, bytes | None]], *,
                     acks: int, timeout_ms: int, timestamp: int,
                     producer: tuple[int, int] | None = None) -> int:
        if self.error:
            return self.error
        self.records.setdefault(partition, []).extend(records)
        return ErrorCode.NONE

    def read_chunks(self, partition: int) -> Iterator[list[tuple[bytes, bytes | None]]]:
        return iter([list(self.records.get(partition, []))])

    def leader_epoch(self, partition: int) -> int | None:
        return self.leader.get(partition, 0)


def make(clock: FakeClock, log: MemoryLog | None = None, **config: Any) -> GroupCoordinator:
    settings = {"offsets_topic_num_partitions": 1, "group_initial_rebalance_delay_ms": 0}
    settings.update(config)
    return GroupCoordinator(0, CoordinatorConfig(**settings), log or MemoryLog(),
                            timer=clock, clock=clock)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def loaded(c: GroupCoordinator, group: str = "g") -> None:
    c.status(group)         # starts the load through the leadership check
    await settle()
    assert c.status(group) is None


def join(c: GroupCoordinator, member_id: str = "", instance: str | None = None,
         session: int = 10_000, rebalance: int = 30_000, protocols: Any = PROTOCOLS,
         require_known: bool = False) -> asyncio.Future[JoinResult]:
    fut: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
    c.handle_join(JoinRequest("g", member_id, session, rebalance, "consumer", protocols,
                              group_instance_id=instance, require_known_member_id=require_known,
                              client_id="c"), lambda r: fut.done() or fut.set_result(r))
    return fut


def sync(c: GroupCoordinator, r: JoinResult, assignment: dict[str, bytes] | None = None,
         instance: str | None = None) -> asyncio.Future[SyncResult]:
    fut: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
    c.sync.handle("g", r.generation_id, r.member_id, instance, None, None, assignment or {},
                  lambda s: fut.done() or fut.set_result(s))
    return fut


async def stable_group(c: GroupCoordinator, clock: FakeClock, n: int) -> list[JoinResult]:
    futs = [join(c) for _ in range(n)]
    clock.advance(0)
    results = [await f for f in futs]
    leader = next(r for r in results if r.member_id == r.leader_id)
    syncs = [sync(c, r, {m: m.encode() for m, _, _ in leader.members} if r is leader else None)
             for r in results]
    await settle()
    for s in syncs:
        assert (await s).error == ErrorCode.NONE
    assert c.groups["g"].state is GroupState.STABLE
    return results


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_java_hash_and_partition() -> None:
    # Java's String.hashCode values
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("polygenelubricants") == -2147483648   # Integer.MIN_VALUE
    assert partition_for_group("polygenelubricants", 50) == 0        # Utils.abs(MIN_VALUE) = 0
    assert java_string_hash("h\u00e9llo") == 103094734
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00     # UTF-16 surrogates
    assert 0 <= partition_for_group("my-group", 50) < 50


def test_not_coordinator_and_loading() -> None:
    async def body() -> None:
        clock, log = FakeClock(), MemoryLog()
        log.leader[0] = None
        c = make(clock, log)
        assert c.status("g") == ErrorCode.NOT_COORDINATOR
        assert c.status("") == ErrorCode.INVALID_GROUP_ID
        log.leader[0] = 3
        assert c.status("g") == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert c.heartbeat("g", "m", None, 1) == ErrorCode.NONE    # blind during load
        await settle()
        assert c.status("g") is None and c.runtime.partitions.owned == {0: 3}
        c.ownership.on_resign(0, 3)
        log.leader[0] = None
        assert c.status("g") == ErrorCode.NOT_COORDINATOR
    run(body())


def test_member_id_required_then_three_members_rebalance() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock)
        await loaded(c)
        first = await join(c, require_known=True)
        assert first.error == ErrorCode.MEMBER_ID_REQUIRED and first.member_id.startswith("c-")
        results = await stable_group(c, clock, 2)
        assert {r.generation_id for r in results} == {1}
        # the pending member id expires after its session timeout
        clock.advance(10_000)
        assert first.member_id not in c.groups["g"].pending_members
    run(body())


def test_heartbeat_errors_and_fencing() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock)
        await loaded(c)
        a, b = await stable_group(c, clock, 2)
        assert c.heartbeat("g", a.member_id, None, a.generation_id) == ErrorCode.NONE
        assert c.heartbeat("g", a.member_id, None, 99) == ErrorCode.ILLEGAL_GENERATION
        assert c.heartbeat("g", "nobody", None, 1) == ErrorCode.UNKNOWN_MEMBER_ID
        # a new member joins: the others learn of the rebalance from heartbeats
        newcomer = join(c)
        assert c.groups["g"].state is GroupState.PREPARING_REBALANCE
        assert c.heartbeat("g", a.member_id, None, 1) == ErrorCode.REBALANCE_IN_PROGRESS
        errors = await c.offsets.commit("g", a.member_id, None, 1, {("t", 0): ot.OffsetAndMetadata(5)})
        assert errors == {("t", 0): ErrorCode.NONE}        # commits allowed while preparing
        ra, rb = join(c, a.member_id), join(c, b.member_id)
        await settle()
        results = [await f for f in (newcomer, ra, rb)]
        assert {r.generation_id for r in results} == {2}
        assert (await c.offsets.commit("g", a.member_id, None, 2, {("t", 0): ot.OffsetAndMetadata(6)})
                == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS})   # CompletingRebalance
        assert (await c.offsets.commit("g", a.member_id, None, 1, {("t", 0): ot.OffsetAndMetadata(6)})
                == {("t", 0): ErrorCode.ILLEGAL_GENERATION})
    run(body())


def test_session_timeout_removes_member_and_rebalances() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock)
        await loaded(c)
        a, b = await stable_group(c, clock, 2)
        for _ in range(2):
            clock.advance(4_000)
            assert c.heartbeat("g", a.member_id, None, 1) == ErrorCode.NONE
        clock.advance(2_000)
        # b never heartbeat: its 10 s session is over
        assert b.member_id not in c.groups["g"].members
        assert c.groups["g"].state is GroupState.PREPARING_REBALANCE
        ra = join(c, a.member_id)
        await settle()
        r = await ra
        assert r.generation_id == 2 and r.leader_id == a.member_id and len(r.members) == 1
    run(body())


def test_rebalance_timeout_drops_members_that_do_not_rejoin() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock)
        await loaded(c)
        a, b = await stable_group(c, clock, 2)
        ra = join(c, a.member_id, rebalance=20_000)     # leader rejoins, b stays silent
        clock.advance(5_000)
        assert c.heartbeat("g", b.member_id, None, 1) == ErrorCode.REBALANCE_IN_PROGRESS
        clock.advance(15_000)                           # rebalance timeout: max of members'
        r = await ra
        assert r.error == ErrorCode.NONE and [m for m, _, _ in r.members] == [a.member_id]
    run(body())


def test_leave_group_and_empty_group_written() -> None:
    async def body() -> None:
        clock, log = FakeClock(), MemoryLog()
        c = make(clock, log)
        await loaded(c)
        a, b = await stable_group(c, clock, 2)
        error, members = c.leave_group("g", [LeaveMember(a.member_id), LeaveMember("ghost")])
        assert error == ErrorCode.NONE
        assert [m.error for m in members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
        c.leave_group("g", [LeaveMember(b.member_id)])
        await settle()
        group = c.groups["g"]
        assert group.state is GroupState.EMPTY and group.generation_id == 2
        stored = ot.read_group_value(log.records[0][-1][1])  # type: ignore[arg-type]
        assert stored.generation == 2 and stored.members == () and stored.protocol is None
    run(body())


def test_static_member_rejoin_keeps_assignment_and_fences_old_id() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock)
        await loaded(c)
        f = join(c, instance="i1")
        clock.advance(0)
        r = await f
        await sync(c, r, {r.member_id: b"A"})
        await settle()
        again = await join(c, instance="i1")     # restart: same instance, no member id
        assert again.error == ErrorCode.NONE and again.member_id != r.member_id
        assert again.generation_id == 1 and c.groups["g"].state is GroupState.STABLE
        assert c.heartbeat("g", r.member_id, "i1", 1) == ErrorCode.FENCED_INSTANCE_ID
        s = await sync(c, again, instance="i1")
        assert s.error == ErrorCode.NONE and s.assignment == b"A"
    run(body())


def test_initial_rebalance_delay_waits_for_more_members() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock, group_initial_rebalance_delay_ms=3000)
        await loaded(c)
        f1 = join(c)
        clock.advance(2000)
        f2 = join(c)
        clock.advance(1000)          # first delay over, a member arrived: wait again
        assert not f1.done()
        clock.advance(3000)
        assert (await f1).generation_id == (await f2).generation_id == 1
    run(body())


def test_standalone_commit_fetch_reload_and_expiry() -> None:
    async def body() -> None:
        clock, log = FakeClock(), MemoryLog()
        c = make(clock, log, offsets_retention_minutes=1)
        await loaded(c)
        tp = ("t", 3)
        assert (await c.offsets.commit("g", "", None, -1, {tp: ot.OffsetAndMetadata(
            7, "m", clock(), leader_epoch=2)})) == {tp: ErrorCode.NONE}
        assert (await c.offsets.commit("g", "", None, -1, {tp: ot.OffsetAndMetadata(
            8, "x" * 5000, clock())})) == {tp: ErrorCode.OFFSET_METADATA_TOO_LARGE}
        assert c.offsets.fetch("g", [tp, ("t", 4)]) == (
            ErrorCode.NONE, {tp: (7, 2, "m", 0), ("t", 4): (-1, -1, "", 0)})
        # another coordinator loads the same log
        c2 = make(clock, log, offsets_retention_minutes=1)
        await loaded(c2)
        assert c2.offsets.fetch("g", None) == (ErrorCode.NONE, {tp: (7, 2, "m", 0)})
        clock.advance(60_000)
        assert await c2.offsets.expire() == 1
        assert "g" not in c2.groups
        assert log.records[0][-1] == (ot.offset_commit_key("g", "t", 3), None)
    run(body())


def test_commit_write_failure_is_not_visible() -> None:
    async def body() -> None:
        clock, log = FakeClock(), MemoryLog()
        c = make(clock, log)
        await loaded(c)
        log.error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        tp = ("t", 0)
        assert await c.offsets.commit("g", "", None, -1, {tp: ot.OffsetAndMetadata(1)}) == {
            tp: ErrorCode.NOT_COORDINATOR}
        assert c.offsets.fetch("g", [tp])[1][tp][0] == -1
    run(body())


def test_delete_groups_and_offsets() -> None:
    async def body() -> None:
        clock, log = FakeClock(), MemoryLog()
        c = make(clock, log)
        await loaded(c)
        a, = await stable_group(c, clock, 1)
        await c.offsets.commit("g", a.member_id, None, 1, {("t", 0): ot.OffsetAndMetadata(1),
                                                          ("other", 0): ot.OffsetAndMetadata(2)})
        assert await c.offsets.delete_groups(["g", "nope"]) == {
            "g": ErrorCode.NON_EMPTY_GROUP, "nope": ErrorCode.GROUP_ID_NOT_FOUND}
        error, errors = await c.offsets.delete("g", [("t", 0), ("other", 0)])
        # the member subscribes to "t" (see PROTOCOLS): only "other" may go
        assert errors == {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("other", 0): ErrorCode.NONE}
        c.leave_group("g", [LeaveMember(a.member_id)])
        await settle()
        assert await c.offsets.delete_groups(["g"]) == {"g": ErrorCode.NONE}
        assert c.describe_group("g") == (ErrorCode.NONE, None)
        assert (ot.group_metadata_key("g"), None) in log.records[0]
    run(body())


def test_resign_answers_waiting_joins_not_coordinator() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock, group_initial_rebalance_delay_ms=3000)
        await loaded(c)
        f = join(c)
        c.ownership.on_resign(0, 1)
        assert (await f).error == ErrorCode.NOT_COORDINATOR
        assert "g" not in c.groups
    run(body())
