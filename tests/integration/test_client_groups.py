"""client.groups (the consumer-group verbs) and client.group_admin against one real
broker (real ZooKeeper): two members join (MEMBER_ID_REQUIRED first), the leader
assigns, both sync and heartbeat; a generation commit is read back in both
OffsetFetch layouts (v7 and v8+); one member leaves and the other is told to
rebalance; after both leave the group is Empty, its offsets can be deleted per
partition and the group deleted."""

from __future__ import annotations

import asyncio
import struct
import uuid

import pytest

from client import KafkaConnection
from client.group_admin import GroupAdmin
from client.groups import (JoinResult, describe_groups, find_coordinator, heartbeat, join_group,
                           leave_group, list_groups, offset_commit, offset_delete, offset_fetch,
                           sync_group)
from protocol.errors import ErrorCode
from tests.integration.cluster import HOST, Cluster, MakeCluster
from tests.integration.multi import create_topic

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    # both members join within the initial rebalance delay, so one generation holds both
    return make_cluster("client-groups", overrides={"group.initial.rebalance.delay.ms": "1000"})


async def coordinator(port: int, group: str) -> KafkaConnection:
    """FindCoordinator until __consumer_offsets is loaded, then a connection to it."""
    async with await KafkaConnection.open(HOST, port, timeout=10) as conn:
        for _ in range(200):
            c = await find_coordinator(conn, group)
            if c.error == 0:
                return await KafkaConnection.open(c.host, c.port, timeout=10)
            assert c.error in (ErrorCode.COORDINATOR_NOT_AVAILABLE,
                               ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), c
            await asyncio.sleep(0.05)
    raise AssertionError("no coordinator")


def subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: int16 version, [topic], null user data."""
    t = topic.encode()
    return struct.pack(">hih", 0, 1, len(t)) + t + struct.pack(">i", -1)


async def join(conn: KafkaConnection, group: str, topic: str) -> tuple[str, JoinResult]:
    """Join as Kafka's consumers do: learn the member id, then join with it."""
    member_id = ""
    while True:
        r = await join_group(conn, group, member_id=member_id, protocol_type="consumer",
                             protocols=[("range", subscription(topic))],
                             session_timeout_ms=10000, rebalance_timeout_ms=10000)
        if r.error == ErrorCode.MEMBER_ID_REQUIRED:
            assert r.member_id and not member_id
            member_id = r.member_id
            continue
        assert r.error == 0, ErrorCode.from_code(r.error).name
        return member_id, r


def test_a_group_lives_and_dies_through_the_verbs(cluster: Cluster) -> None:
    topic, group = f"cg-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    assert create_topic(cluster.brokers[0].port, topic, 2, 1) == 0

    async def body() -> None:
        a = await coordinator(cluster.brokers[0].port, group)
        b = await coordinator(cluster.brokers[0].port, group)
        try:
            (id_a, ja), (id_b, jb) = await asyncio.gather(join(a, group, topic),
                                                        join(b, group, topic))
            assert ja.generation_id == jb.generation_id >= 1
            leader, follower = (ja, jb) if ja.is_leader else (jb, ja)
            assert leader.is_leader and not follower.is_leader
            assert {m.member_id for m in leader.members} == {id_a, id_b}
            assert follower.members == ()
            gen = ja.generation_id
            plan = {id_a: b"for-a", id_b: b"for-b"}
            got = await asyncio.gather(
                sync_group(a, group, generation_id=gen, member_id=id_a,
                           assignments=plan if ja.is_leader else None,
                           protocol_type="consumer", protocol_name="range"),
                sync_group(b, group, generation_id=gen, member_id=id_b,
                           assignments=plan if jb.is_leader else None,
                           protocol_type="consumer", protocol_name="range"))
            assert got == [(0, b"for-a"), (0, b"for-b")]
            assert await heartbeat(a, group, generation_id=gen, member_id=id_a) == 0
            assert await heartbeat(a, group, generation_id=gen + 5, member_id=id_a) \
                == ErrorCode.ILLEGAL_GENERATION

            errors = await offset_commit(a, group, {(topic, 0): 7, (topic, 1): 9},
                                         generation_id=gen, member_id=id_a, metadata="m")
            assert errors == {(topic, 0): 0, (topic, 1): 0}
            for cap in (7, None):           # the group-level layout, then Groups (v8+)
                fetched = await offset_fetch(a, group, max_version=cap)
                assert fetched.error == 0
                assert {tp: (o.offset, o.metadata) for tp, o in fetched.partitions.items()} \
                    == {(topic, 0): (7, "m"), (topic, 1): (9, "m")}
            one = await offset_fetch(a, group, [(topic, 1)])
            assert list(one.partitions) == [(topic, 1)] and one.partitions[(topic, 1)].offset == 9

            [d] = await describe_groups(a, [group])
            assert (d.error, d.state, d.protocol_type, d.protocol) == (0, "Stable", "consumer",
                                                                        "range")
            assert {m.member_id: m.member_assignment for m in d.members} == plan
            error, listed = await list_groups(a)
            assert error == 0 and group in {g.group_id for g in listed}
            error, stable = await list_groups(a, ["Empty"])
            assert error == 0 and group not in {g.group_id for g in stable}

            # b leaves: a is told to rejoin; a subscribed group keeps its offsets
            assert await leave_group(b, group, id_b) == 0
            assert await heartbeat(a, group, generation_id=gen, member_id=id_a) \
                == ErrorCode.REBALANCE_IN_PROGRESS
            top, per = await offset_delete(a, group, [(topic, 0)])
            assert (top, per) == (0, {(topic, 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC})
            assert await leave_group(a, group, id_a) == 0
        finally:
            await a.close()
            await b.close()

        ga = GroupAdmin(cluster.bootstrap, 15000)
        try:
            desc, (_, host, port) = await ga.describe(group)
            assert desc.state == "Empty" and port == cluster.brokers[0].port
            assert (group, "Empty") in await ga.list_groups({"Empty"})
            assert await ga.committed(group) == {(topic, 0): 7, (topic, 1): 9}
            assert await ga.delete_offsets(group, [(topic, 0)]) == (0, {(topic, 0): 0})
            assert await ga.commit(group, {(topic, 1): 3}) == {(topic, 1): 0}
            assert await ga.committed(group) == {(topic, 1): 3}
            assert await ga.list_offsets([(topic, 0), (topic, 1)], -1) == {(topic, 0): 0,
                                                                          (topic, 1): 0}
            assert await ga.delete_group(group) == 0
            assert await ga.delete_group(group) == ErrorCode.GROUP_ID_NOT_FOUND
        finally:
            await ga.close()

    asyncio.run(body())
