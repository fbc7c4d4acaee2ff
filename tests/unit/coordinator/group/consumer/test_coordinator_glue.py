"""coordinator.group.consumer.coordinator: writes before state, loading without a rebalance,
session / rebalance timers, ownership, offsets validation (admin_ops), on an
in-memory __consumer_offsets (the classic coordinator's MemoryLog)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from coordinator.group.consumer import admin_ops
from coordinator.group.consumer.group_logic import GroupConfig, Heartbeat
from coordinator.group.consumer.model import MemberState, TopicMeta
from coordinator.group.consumer.topic_view import StaticTopics
from coordinator.group.classic import offsets_topic as ot
from coordinator.group.classic.group_coordinator import GroupCoordinator
from protocol.errors import ErrorCode
from tests.unit.coordinator.group.classic.test_group_coordinator import MemoryLog, make
from tests.unit.broker.replication.fakes import FakeClock
from tests.unit.polling import until

T = uuid.UUID("6c9d3a1e-0000-4000-8000-000000000001")
TOPICS = [TopicMeta(T, "t", 4)]
FAST = GroupConfig(session_timeout_ms=300, min_session_timeout_ms=100, heartbeat_interval_ms=50,
                   min_heartbeat_interval_ms=10)


def in_loop(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test on a fresh event loop (as the classic coordinator's tests do)."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))
    return run


def coordinator(log: MemoryLog | None = None, config: GroupConfig = FAST) -> GroupCoordinator:
    c = make(FakeClock(), log or MemoryLog())
    c.consumer.config = config
    c.consumer.topics = StaticTopics(TOPICS)
    return c


async def ready(c: GroupCoordinator) -> None:
    c.status("g")
    for _ in range(10):
        await asyncio.sleep(0)
    assert c.status("g") is None


def join(member: str, **kw: Any) -> Heartbeat:
    return Heartbeat(group_id="g", member_id=member, member_epoch=0, rebalance_timeout_ms=kw.pop(
        "rebalance", 60_000), subscribed_topic_names=["t"], owned={}, api_version=1, **kw)


def beat(member: str, epoch: int, owned: dict[uuid.UUID, frozenset[int]]) -> Heartbeat:
    return Heartbeat(group_id="g", member_id=member, member_epoch=epoch, owned=owned,
                     api_version=1)


@in_loop
async def test_join_writes_then_applies_and_answers() -> None:
    log = MemoryLog()
    c = coordinator(log)
    await ready(c)
    r = await c.consumer.heartbeat(join("m1"))
    assert r.error == 0 and r.member_id == "m1" and r.member_epoch == 1
    assert r.assignment == {T: frozenset({0, 1, 2, 3})}
    assert c.consumer.groups["g"].group_epoch == 1
    assert log.records[0], "records written to __consumer_offsets"
    c.consumer.shutdown()


@in_loop
async def test_failed_write_changes_nothing() -> None:
    log = MemoryLog()
    c = coordinator(log)
    await ready(c)
    log.error = ErrorCode.NOT_LEADER_OR_FOLLOWER
    r = await c.consumer.heartbeat(join("m1"))
    assert r.error == ErrorCode.NOT_COORDINATOR
    assert "g" not in c.consumer.groups
    log.error = ErrorCode.REQUEST_TIMED_OUT
    assert (await c.consumer.heartbeat(join("m1"))).error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    c.consumer.shutdown()


@in_loop
async def test_not_coordinator_and_unload() -> None:
    log = MemoryLog()
    c = coordinator(log)
    await ready(c)
    assert (await c.consumer.heartbeat(join("m1"))).error == 0
    log.leader[0] = None                      # we no longer lead the partition
    r = await c.consumer.heartbeat(beat("m1", 1, {T: frozenset({0, 1, 2, 3})}))
    assert r.error == ErrorCode.NOT_COORDINATOR
    assert not c.consumer.groups and not c.consumer._sessions
    c.consumer.shutdown()


@in_loop
async def test_load_restores_groups_without_a_rebalance() -> None:
    log = MemoryLog()
    c = coordinator(log)
    await ready(c)
    await c.consumer.heartbeat(join("m1"))
    r2 = await c.consumer.heartbeat(join("m2"))
    before = c.consumer.groups["g"]
    c.consumer.shutdown()
    # a new coordinator (the failover target) loads the same log
    c2 = coordinator(log)
    await ready(c2)
    after = c2.consumer.groups["g"]
    assert after.group_epoch == before.group_epoch == 2
    assert after.members.keys() == before.members.keys()
    assert after.members["m2"].member_epoch == r2.member_epoch
    assert after.members["m1"].assigned == before.members["m1"].assigned
    assert after.target == before.target
    assert set(c2.consumer._sessions) == {("g", "m1"), ("g", "m2")}
    c2.consumer.shutdown()


@in_loop
async def test_session_expiry_fences_the_member() -> None:
    c = coordinator()
    await ready(c)
    # m1's session lasts an hour, m2's 300 ms: only m2's can run out, however long the
    # machine stalls between m1's heartbeats
    hour = dataclasses.replace(FAST, session_timeout_ms=3_600_000,
                               max_session_timeout_ms=3_600_000)
    c.consumer.config = hour
    await c.consumer.heartbeat(join("m1"))
    c.consumer.config = FAST
    await c.consumer.heartbeat(join("m2"))
    c.consumer.config = hour
    epoch = c.consumer.groups["g"].group_epoch
    session = c.consumer._sessions[("g", "m1")]
    m1 = c.consumer.groups["g"].members["m1"]
    await c.consumer.heartbeat(beat("m1", m1.member_epoch, m1.assigned))  # m2 goes silent
    assert session.cancelled() and c.consumer._sessions[("g", "m1")] is not session  # re-armed
    await until(lambda: "m2" not in c.consumer.groups["g"].members, "m2's session expires")
    m1 = c.consumer.groups["g"].members["m1"]
    await c.consumer.heartbeat(beat("m1", m1.member_epoch, m1.assigned))
    group = c.consumer.groups["g"]
    assert "m2" not in group.members and "m1" in group.members
    assert group.group_epoch == epoch + 1
    c.consumer.shutdown()


@in_loop
async def test_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    # sessions of an hour: within the wait below only the rebalance timeout can fence m1
    c = coordinator(config=GroupConfig(session_timeout_ms=3_600_000, min_session_timeout_ms=100,
                                       max_session_timeout_ms=3_600_000,
                                       heartbeat_interval_ms=50, min_heartbeat_interval_ms=10))
    await ready(c)
    r1 = await c.consumer.heartbeat(join("m1", rebalance=200))
    await c.consumer.heartbeat(join("m2"))
    # m1 heartbeats still owning everything: it must revoke part of it
    r = await c.consumer.heartbeat(beat("m1", r1.member_epoch, r1.assignment or {}))
    assert r.error == 0
    assert c.consumer.groups["g"].members["m1"].state == MemberState.UNREVOKED_PARTITIONS
    assert ("g", "m1") in c.consumer._rebalance
    await until(lambda: "m1" not in c.consumer.groups["g"].members,
                "m1's rebalance timeout (200 ms) fences it")
    c.consumer.shutdown()


@in_loop
async def test_offset_commit_validation() -> None:
    c = coordinator()
    await ready(c)
    r = await c.consumer.heartbeat(join("m1"))
    offsets = {("t", 0): ot.OffsetAndMetadata(5, commit_timestamp=1)}
    ok = await admin_ops.commit_offsets(c, "g", "m1", r.member_epoch, offsets, 9)
    assert ok == {("t", 0): 0}
    assert c.committed.committed("g")[("t", 0)].offset == 5   # keyed by the group id
    assert "g" not in c.groups and "g" in c.group_map         # one group, of one kind
    stale = await admin_ops.commit_offsets(c, "g", "m1", r.member_epoch + 1, offsets, 9)
    assert stale == {("t", 0): ErrorCode.STALE_MEMBER_EPOCH}
    unknown = await admin_ops.commit_offsets(c, "g", "zz", 1, offsets, 9)
    assert unknown == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    old = await admin_ops.commit_offsets(c, "g", "m1", r.member_epoch, offsets, 8)
    assert old == {("t", 0): ErrorCode.UNSUPPORTED_VERSION}
    admin = await admin_ops.commit_offsets(c, "g", "", -1, offsets, 9)
    assert admin == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}    # the group is not empty
    assert admin_ops.fetch_error(c, "g", None, -1) is None
    assert admin_ops.fetch_error(c, "g", "m1", 0) == ErrorCode.STALE_MEMBER_EPOCH
    c.consumer.shutdown()


@in_loop
async def test_delete_and_list_groups() -> None:
    c = coordinator()
    await ready(c)
    r = await c.consumer.heartbeat(join("m1"))
    assert admin_ops.list_groups(c, set(), {"consumer"}) == [
        ("g", "consumer", "Stable", "consumer")]
    assert admin_ops.list_groups(c, set(), {"classic"}) == []
    assert await admin_ops.delete_groups(c, ["g"]) == {"g": ErrorCode.NON_EMPTY_GROUP}
    left = await c.consumer.heartbeat(Heartbeat(group_id="g", member_id="m1", member_epoch=-1,
                                                api_version=1))
    assert left.error == 0 and left.member_epoch == -1 and r.member_epoch > 0
    assert await admin_ops.delete_groups(c, ["g"]) == {"g": ErrorCode.NONE}
    assert "g" not in c.consumer.groups
    c2 = coordinator(c.runtime.log)     # type: ignore[arg-type]
    await ready(c2)
    assert "g" not in c2.consumer.groups                     # the tombstones load too
    c.consumer.shutdown()
    c2.consumer.shutdown()


@in_loop
async def test_classic_join_for_a_consumer_group_id() -> None:
    from tests.unit.coordinator.group.classic.test_group_coordinator import join as classic_join
    c = coordinator()
    await ready(c)
    await c.consumer.heartbeat(join("m1"))
    await c.consumer.heartbeat(Heartbeat(group_id="g", member_id="m1", member_epoch=-1,
                                         api_version=1))
    # an empty consumer group is deleted and the classic join goes on (Kafka 4.0)
    pending = classic_join(c)     # answered once the (fake-clock) rebalance completes
    for _ in range(20):
        await asyncio.sleep(0)
    assert "g" not in c.consumer.groups and c.groups["g"].members
    pending.cancel()
    c.consumer.shutdown()


def handler_ctx(c: GroupCoordinator, version: int) -> Any:
    from types import SimpleNamespace
    broker = SimpleNamespace(group_coordinator=c, authorizer=None)
    return SimpleNamespace(broker=broker, version=version,
                           header=SimpleNamespace(client_id="cli", api_version=version),
                           connection=SimpleNamespace(peer="127.0.0.1:5555"))


@in_loop
async def test_handlers_heartbeat_and_describe() -> None:
    from broker.handlers.consumer_group_describe import handle_consumer_group_describe
    from broker.handlers.consumer_group_heartbeat import handle_consumer_group_heartbeat
    from protocol.spec import api
    c = coordinator()
    await ready(c)
    hb = api(68).request
    join_v0 = hb.new(group_id="g", member_id="", member_epoch=0, rebalance_timeout_ms=5000,
                     subscribed_topic_names=["t"], topic_partitions=[])
    r = await handle_consumer_group_heartbeat(handler_ctx(c, 0), join_v0)
    assert r.error_code == 0 and r.member_id and r.member_epoch == 1   # v0: we make the id
    assert [(tp.topic_id, tp.partitions) for tp in r.assignment.topic_partitions] == \
        [(T, [0, 1, 2, 3])]
    d = await handle_consumer_group_describe(
        handler_ctx(c, 1), api(69).request.new(group_ids=["g", "nope", ""]))
    g, unknown, empty = d.groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignor_name) == \
        (0, "Stable", 1, "uniform")
    m = g.members[0]
    assert (m.member_id, m.member_epoch, m.client_id, m.client_host, m.member_type) == \
        (r.member_id, 1, "cli", "/127.0.0.1", 1)
    assert [(tp.topic_name, tp.partitions) for tp in m.target_assignment.topic_partitions] == \
        [("t", [0, 1, 2, 3])]
    assert unknown.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert empty.error_code == ErrorCode.INVALID_GROUP_ID
    c.consumer.enabled = False          # group.coordinator.rebalance.protocols=classic
    off = await handle_consumer_group_heartbeat(handler_ctx(c, 1), join_v0)
    assert off.error_code == ErrorCode.UNSUPPORTED_VERSION
    c.consumer.shutdown()


@in_loop
async def test_heartbeat_upgrades_a_classic_group_or_refuses() -> None:
    from coordinator.group.consumer.migration import encode_assignment
    from tests.unit.coordinator.group.classic.test_group_coordinator import join as classic_join
    from tests.unit.coordinator.group.classic.test_group_coordinator import settle, sync
    clock = FakeClock()
    c = make(clock, MemoryLog())
    c.consumer.config, c.consumer.topics = FAST, StaticTopics(TOPICS)
    await ready(c)
    pending = classic_join(c)
    clock.advance(0)
    joined = await pending
    done = sync(c, joined, {joined.member_id: encode_assignment({"t": [0, 1, 2, 3]}, 0)})
    await settle()
    assert (await done).error == 0
    c.consumer.config = GroupConfig(session_timeout_ms=300, min_session_timeout_ms=100,
                                    heartbeat_interval_ms=50, min_heartbeat_interval_ms=10,
                                    migration_policy="disabled")
    refused = await c.consumer.heartbeat(join("new"))
    assert refused.error == ErrorCode.GROUP_ID_NOT_FOUND and "g" not in c.consumer.groups
    c.consumer.config = FAST                                     # bidirectional
    r = await c.consumer.heartbeat(join("new"))
    assert r.error == 0
    group = c.consumer.groups["g"]
    assert set(group.members) == {joined.member_id, "new"}
    assert group.members[joined.member_id].classic is not None
    assert "g" not in c.groups                                   # one group per id
    # the last consumer-protocol member leaves: the group goes back to classic
    left = await c.consumer.heartbeat(Heartbeat(group_id="g", member_id="new", member_epoch=-1,
                                                api_version=1))
    assert left.error == 0 and "g" not in c.consumer.groups
    assert set(c.groups["g"].members) == {joined.member_id}
    c.consumer.shutdown()


@in_loop
async def test_group_locks_are_dropped_when_nobody_holds_or_waits() -> None:
    c = coordinator()
    await ready(c)
    # concurrent heartbeats of two members share g's lock; an unknown group's errors too
    results = await asyncio.gather(c.consumer.heartbeat(join("m1")),
                                   c.consumer.heartbeat(join("m2")),
                                   c.consumer.heartbeat(beat("ghost", 3, {})))
    assert [r.error for r in results[:2]] == [0, 0]
    assert c.consumer.groups["g"].group_epoch == 2      # one after the other
    assert c.consumer._locks == {}
    c.consumer.shutdown()


@in_loop
async def test_expiry_deletes_an_empty_group_only_once_its_offsets_are_gone() -> None:
    log = MemoryLog()
    c = coordinator(log)
    await ready(c)
    r = await c.consumer.heartbeat(join("m1"))
    offsets = {("t", 0): ot.OffsetAndMetadata(5, commit_timestamp=c.runtime.clock())}
    assert await admin_ops.commit_offsets(c, "g", "m1", r.member_epoch, offsets, 9) == \
        {("t", 0): 0}
    await c.offsets.expire()
    assert "g" in c.consumer.groups                       # a member: kept
    assert (await c.consumer.heartbeat(Heartbeat(group_id="g", member_id="m1", member_epoch=-1,
                                                 api_version=1))).error == 0
    await c.offsets.expire()
    assert "g" in c.consumer.groups                       # empty, but offsets are kept
    c.committed.drop("g")                                 # (as if they had expired)
    await c.offsets.expire()
    assert "g" not in c.consumer.groups and "g" not in c.groups
    key, value = log.records[0][-1]
    assert value is None and key[:2] == b"\x00\x03"       # the group epoch's tombstone last
    c2 = coordinator(log)                                 # a reload does not bring it back
    await ready(c2)
    assert "g" not in c2.consumer.groups
    c.consumer.shutdown()
    c2.consumer.shutdown()
