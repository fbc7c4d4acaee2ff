"""One group id space (Kafka 4's GroupMetadataManager + OffsetMetadataManager): an id
names one group of one kind, and its committed offsets are keyed by the id, so they
outlive a change of kind -- live and after a reload of __consumer_offsets."""

from __future__ import annotations

import asyncio

from coordinator.group.consumer import admin_ops
from coordinator.group.classic import offsets_topic as ot
from coordinator.group.classic.group_state import GroupState
from coordinator.group.consumer.group_logic import Heartbeat
from protocol.errors import ErrorCode
from tests.unit.coordinator.group.consumer.test_coordinator_glue import coordinator, in_loop, \
    ready
from tests.unit.coordinator.group.consumer.test_coordinator_glue import join as consumer_member
from coordinator.group.classic.coordinator_types import LeaveMember
from coordinator.group.consumer.model import TopicMeta
from coordinator.group.consumer.topic_view import StaticTopics
from tests.unit.broker.replication.fakes import FakeClock
from tests.unit.coordinator.group.classic.test_group_coordinator import PROTOCOLS, MemoryLog, \
    join, loaded, make, settle
from tests.unit.coordinator.group.consumer.test_migration_flow import T1, classic_pair, \
    consumer_join

TP = ("t", 0)


def offset(n: int) -> ot.OffsetAndMetadata:
    return ot.OffsetAndMetadata(n, commit_timestamp=1)


@in_loop
async def test_a_consumer_group_takes_a_simple_group_s_id_and_keeps_its_offsets() -> None:
    log = MemoryLog()
    c = coordinator(log)
    await ready(c)
    assert await c.offsets.commit("g", "", None, -1, {TP: offset(5)}) == {TP: 0}
    simple = c.groups["g"]                       # a standalone commit made a simple group
    assert simple.is_(GroupState.EMPTY) and simple.protocol_type is None
    r = await c.consumer.heartbeat(consumer_member("m1"))
    assert r.error == ErrorCode.NONE
    assert "g" not in c.groups and "g" in c.consumer.groups
    assert c.offsets.fetch("g", [TP])[1][TP][0] == 5
    # no classic metadata was ever written: no tombstone of it either (Kafka: a simple
    # group is backed by no record)
    assert ot.group_metadata_key("g") not in [key for key, _ in log.records[0]]
    c2 = coordinator(log)                        # a reload finds one group, of one kind
    await ready(c2)
    assert "g" in c2.consumer.groups and "g" not in c2.groups
    assert c2.offsets.fetch("g", [TP])[1][TP][0] == 5
    c.consumer.shutdown()
    c2.consumer.shutdown()


@in_loop
async def test_the_classic_commit_path_does_not_make_a_second_group() -> None:
    c = coordinator()
    await ready(c)
    assert (await c.consumer.heartbeat(consumer_member("m1"))).error == ErrorCode.NONE
    refused = await c.offsets.commit("g", "", None, -1, {TP: offset(1)})
    assert refused == {TP: ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert "g" not in c.groups and "g" not in c.committed
    c.consumer.shutdown()


@in_loop
async def test_deleting_a_consumer_group_deletes_its_offsets() -> None:
    log = MemoryLog()
    c = coordinator(log)
    await ready(c)
    r = await c.consumer.heartbeat(consumer_member("m1"))
    assert await admin_ops.commit_offsets(c, "g", "m1", r.member_epoch, {TP: offset(7)}, 9) \
        == {TP: 0}
    await c.consumer.heartbeat(Heartbeat(group_id="g", member_id="m1", member_epoch=-1,
                                         api_version=1))
    assert not c.consumer.groups["g"].members
    assert await admin_ops.delete_groups(c, ["g"]) == {"g": ErrorCode.NONE}
    assert "g" not in c.group_map and "g" not in c.committed
    assert c.offsets.fetch("g", [TP])[1][TP][0] == -1
    c2 = coordinator(log)                        # tombstones: a reload brings nothing back
    await ready(c2)
    assert "g" not in c2.group_map and "g" not in c2.committed
    c.consumer.shutdown()
    c2.consumer.shutdown()


@in_loop
async def test_an_emptied_classic_group_is_replaced_with_its_tombstone() -> None:
    """A classic group whose members all left (it has a generation, so its metadata is
    in the log) is replaced by the consumer group joining its id: the metadata's
    tombstone goes in the same batch; the offsets stay, also after a reload."""
    log = MemoryLog()
    clock = FakeClock()
    c = make(clock, log)
    c.consumer.topics = StaticTopics([TopicMeta(T1, "t1", 6)])
    await loaded(c)
    a, b = await classic_pair(c, clock)
    assert await c.offsets.commit("g", a.member_id, None, a.generation_id,
                                  {("t1", 0): offset(3)}) == {("t1", 0): 0}
    c.leave_group("g", [LeaveMember(a.member_id), LeaveMember(b.member_id)])
    await settle()
    assert c.groups["g"].is_(GroupState.EMPTY) and c.groups["g"].generation_id > 0
    joined = await consumer_join(c, "cons-1")
    assert joined.error == ErrorCode.NONE
    assert "g" not in c.groups and "g" in c.consumer.groups
    assert (ot.group_metadata_key("g"), None) in log.records[0]
    assert c.offsets.fetch("g", [("t1", 0)])[1][("t1", 0)][0] == 3
    c2 = make(clock, log)
    await loaded(c2)
    assert "g" not in c2.groups and "g" in c2.consumer.groups
    assert c2.offsets.fetch("g", [("t1", 0)])[1][("t1", 0)][0] == 3
    c.consumer.shutdown()
    c2.consumer.shutdown()


class GatedLog(MemoryLog):
    """A MemoryLog whose appends wait for ``gate`` while it is cleared."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()

    async def append(self, partition: int, records: list[tuple[bytes, bytes | None]], *,
                     acks: int, timeout_ms: int, timestamp: int,
                     producer: tuple[int, int] | None = None) -> int:
        await self.gate.wait()
        return await super().append(partition, records, acks=acks, timeout_ms=timeout_ms,
                                    timestamp=timestamp, producer=producer)


@in_loop
async def test_a_classic_join_during_the_consumer_group_s_first_write_rejoins_it() -> None:
    """A classic JoinGroup for a new id while the first consumer member's records are
    being written makes a classic group; once the records are written that group leaves
    (its member told REBALANCE_IN_PROGRESS) and the id is the consumer group's alone."""
    log = GatedLog()
    c = make(FakeClock(), log, group_initial_rebalance_delay_ms=3_000)
    c.consumer.topics = StaticTopics([TopicMeta(T1, "t1", 6)])
    await loaded(c)
    log.gate.clear()
    heartbeat = asyncio.ensure_future(consumer_join(c, "cons-1"))
    await settle()
    classic_join = join(c, protocols=PROTOCOLS)        # waits out the initial delay
    await settle()
    assert "g" in c.groups and not classic_join.done()
    log.gate.set()
    assert (await heartbeat).error == ErrorCode.NONE
    assert (await classic_join).error == ErrorCode.REBALANCE_IN_PROGRESS
    assert "g" not in c.groups and "g" in c.consumer.groups
    c.consumer.shutdown()
