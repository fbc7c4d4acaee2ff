"""Controller behaviour over an in-memory ZooKeeper (FakeZk) and a recording transport."""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any, Awaitable, Callable

import pytest

from controller import ClusterStore, Controller, TopicAlreadyExists
from controller import zkdata as zd
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api
from tests.unit.controller.fake_zk import FakeZk, FakeZkServer
from tests.unit.polling import until


def aio(fn: Callable[[], Awaitable[None]]) -> Callable[[], None]:
    """Run an async test on a fresh event loop (no pytest plugin needed)."""
    @functools.wraps(fn)
    def run() -> None:
        asyncio.run(asyncio.wait_for(fn(), 20))
    return run


class RecordingTransport:
    def __init__(self) -> None:
        self.sent: list[tuple[int, int, Struct, int]] = []   # broker, api key, body, version

    async def send(self, broker_id: int, host: str, port: int, header: RequestHeader,
                   body: Struct) -> Struct:
        self.sent.append((broker_id, header.api_key, body, header.api_version))
        return api(header.api_key).response.new()

    def of(self, api_key: int, broker: int | None = None) -> list[Struct]:
        return [b for (bid, k, b, _v) in self.sent if k == api_key and broker in (None, bid)]


def partition_states(req: Struct) -> list[Any]:
    """The partition states a LeaderAndIsr or UpdateMetadata request carries."""
    return [p for t in req.topic_states for p in t.partition_states]


class Node:
    """One broker's ZooKeeper session, cluster store and controller; ``transport``
    records (and answers) what the controller sends."""

    def __init__(self, server: FakeZkServer, broker_id: int,
                 transport: RecordingTransport | None = None) -> None:
        self.server = server
        self.id = broker_id
        self.transport = transport or RecordingTransport()
        self._new()

    def _new(self) -> None:
        self.zk = FakeZk(self.server)
        self.store = ClusterStore("fake:2181", client=self.zk)
        self.controller = Controller(self.id, self.store, self.transport)

    async def start(self) -> None:
        await self.store.connect()
        await self.store.register_broker(self.id, [f"PLAINTEXT://127.0.0.1:{9092 + self.id}"])
        await self.controller.start()

    async def restart(self) -> None:
        """Stop, then start on a new session (the transport, and what it holds, kept)."""
        await self.controller.stop()
        await self.store.close()
        self._new()
        await self.start()


async def settle(*nodes: Node, rounds: int = 3) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0.02)
        for n in nodes:
            await n.controller.idle()


async def cluster(n: int, make: Callable[[FakeZkServer, int], Node] = Node,
                  rounds: int = 3) -> tuple[FakeZkServer, list[Node]]:
    server = FakeZkServer()
    nodes = [make(server, i) for i in range(n)]
    for node in nodes:
        await node.start()
        await settle(*nodes, rounds=rounds)
    return server, nodes


def active(nodes: list[Node]) -> Node:
    (a,) = [n for n in nodes if n.controller.is_active]
    return a


def registered_anew(server: FakeZkServer, node: Node) -> bool:
    """Whether ``node``'s store, its session expired, has registered on the new one."""
    st = server.nodes.get(zd.broker_path(node.id))
    return st is not None and st.czxid == node.store.broker_epoch


def state_json(server: FakeZkServer, topic: str, p: int) -> dict[str, Any]:
    return json.loads(server.nodes[zd.partition_state_path(topic, p)].data)  # type: ignore[no-any-return]


@aio
async def test_first_broker_wins_election_with_epoch_1() -> None:
    server, nodes = await cluster(3)
    assert active(nodes) is nodes[0]
    assert server.nodes["/controller_epoch"].data == b"1"
    ctl = json.loads(server.nodes["/controller"].data)
    assert ctl["brokerid"] == 0 and ctl["version"] == 2
    assert all(n.controller.active_controller_id == 0 for n in nodes)
    # everyone got UpdateMetadata with all three brokers, over the transport (0 too)
    last = nodes[0].transport.of(6, broker=2)[-1]
    assert sorted(b.id for b in last.live_brokers) == [0, 1, 2]
    assert nodes[0].transport.of(6, broker=0)


@aio
async def test_topic_creation_initialises_state_and_sends_requests() -> None:
    server, nodes = await cluster(3)
    a = active(nodes)
    with pytest.raises(TopicAlreadyExists):
        await nodes[1].store.create_topic("t", {0: [1, 2]}, {})
        await nodes[1].store.create_topic("t", {0: [1, 2]}, {})
    topic_id = (await nodes[1].store.read_topics(["t"]))["t"].topic_id
    await settle(*nodes)
    st = state_json(server, "t", 0)
    assert st == {"controller_epoch": 1, "leader": 1, "version": 1, "leader_epoch": 0,
                  "isr": [1, 2]}
    lai = a.transport.of(4, broker=2)
    assert lai and lai[-1].topic_states[0].topic_id == topic_id
    ps = lai[-1].topic_states[0].partition_states[0]
    assert (ps.leader, ps.isr, ps.replicas, ps.is_new) == (1, [1, 2], [1, 2], True)
    assert not a.transport.of(4, broker=0)            # broker 0 holds no replica
    um = a.transport.of(6, broker=0)[-1]
    assert um.topic_states[0].topic_name == "t"
    assert um.controller_epoch == 1 and um.controller_id == 0


@aio
async def test_broker_death_moves_leadership_within_isr() -> None:
    server, nodes = await cluster(3)
    a = active(nodes)
    await nodes[1].store.create_topic("t", {0: [1, 2], 1: [2, 1]}, {})
    await settle(*nodes)
    await nodes[1].store.close()
    await settle(*nodes)
    st0, st1 = state_json(server, "t", 0), state_json(server, "t", 1)
    assert (st0["leader"], st0["isr"], st0["leader_epoch"]) == (2, [2], 1)
    assert (st1["leader"], st1["isr"], st1["leader_epoch"]) == (2, [2], 1)
    ps = a.transport.of(4, broker=2)[-1].topic_states[0].partition_states
    assert {p.partition_index: p.leader for p in ps} == {0: 2, 1: 2}
    um = a.transport.of(6, broker=0)[-1]
    assert sorted(b.id for b in um.live_brokers) == [0, 2]


@aio
async def test_last_isr_member_kept_and_reelected_on_return() -> None:
    server, nodes = await cluster(2)
    await nodes[1].store.create_topic("t", {0: [1]}, {})
    await settle(*nodes)
    await nodes[1].store.close()             # broker 1 goes away
    await settle(*nodes)
    st = state_json(server, "t", 0)
    assert (st["leader"], st["isr"]) == (-1, [1])
    back = Node(server, 1)
    await back.start()                       # it registers again: leader again
    await settle(*nodes, back)
    st = state_json(server, "t", 0)
    assert (st["leader"], st["isr"], st["leader_epoch"]) == (1, [1], 2)


@aio
async def test_bounced_broker_gets_a_new_leader_epoch() -> None:
    server, nodes = await cluster(2)
    await nodes[1].store.create_topic("t", {0: [1]}, {})
    await settle(*nodes)
    nodes[1].zk.expire()           # expires and re-registers at once: a new broker epoch
    await settle(*nodes)
    st = state_json(server, "t", 0)
    assert (st["leader"], st["isr"], st["leader_epoch"]) == (1, [1], 2)


@aio
async def test_a_leader_restarted_between_controllers_is_handled_as_restarted() -> None:
    """Broker 1 leads t-0 and registers anew (a restart) while no controller runs: the
    next controller finds the state older than broker 1's registration and handles a
    restart, so the partition gets a new leader and a new leader epoch. Without
    that, broker 1 would lead again at the old epoch (controller.restarts.restarted_leaders)."""
    server, nodes = await cluster(3)
    await nodes[0].store.create_topic("t", {0: [1, 2, 0]}, {})
    await settle(*nodes)
    before = state_json(server, "t", 0)
    assert (before["leader"], sorted(before["isr"])) == (1, [0, 1, 2])
    for n in nodes:
        await n.controller.stop()                 # no controller from here
    nodes[1].zk.expire()                          # broker 1 registers anew, unseen
    await until(lambda: registered_anew(server, nodes[1]), "broker 1 registered anew")
    assert server.nodes[zd.broker_path(1)].czxid > server.nodes[
        zd.partition_state_path("t", 0)].mzxid
    nodes[2].transport.sent.clear()               # what the next controller sends, only
    nodes[2].controller = Controller(2, nodes[2].store, nodes[2].transport)
    await nodes[2].controller.start()
    await settle(nodes[2])
    assert nodes[2].controller.is_active
    after = state_json(server, "t", 0)
    assert after["leader"] != 1 and after["leader_epoch"] > before["leader_epoch"]
    # it stays in the ISR (its log is the one it had): see the test after this one
    assert sorted(after["isr"]) == [0, 1, 2]
    # handled as Kafka handles a bounce, dead first: nothing the new controller sent
    # (not even its first full batch) names broker 1 leader at the old epoch
    named = [(p.leader, p.leader_epoch) for key in (4, 6) for req in nodes[2].transport.of(key)
             for p in partition_states(req)]
    assert named and (1, before["leader_epoch"]) not in named, named
    await nodes[2].controller.stop()


@aio
async def test_a_restarted_leader_stays_in_the_isr_when_its_successor_is_dead_but_registered(
        ) -> None:
    """Every broker killed at once: broker 1 (leader of t-0) comes back and becomes the
    controller while broker 0 is dead with its registration not yet expired, and broker
    2's has gone. The failover moves t-0 to broker 0 at a new epoch and keeps broker 1
    in the ISR; when broker 0's session ends, broker 1 is elected. (With broker 1 out
    of the ISR, the ISR was [0] and the partition stayed without a leader until broker
    0 came back: test_kip101_all_replicas_crash_restart_in_different_orders.)"""
    server, nodes = await cluster(3)
    await nodes[0].store.create_topic("t", {0: [1, 0, 2]}, {})
    await settle(*nodes)
    before = state_json(server, "t", 0)
    assert (before["leader"], sorted(before["isr"])) == (1, [0, 1, 2])
    for n in nodes:
        await n.controller.stop()                 # no controller from here
    nodes[2].zk.stop()                            # broker 2: dead, its session gone
    nodes[1].zk.expire()                          # broker 1 registers anew, unseen
    await until(lambda: registered_anew(server, nodes[1]), "broker 1 registered anew")
    nodes[1].controller = Controller(1, nodes[1].store, nodes[1].transport)
    await nodes[1].controller.start()
    await settle(nodes[1])
    assert nodes[1].controller.is_active
    moved = state_json(server, "t", 0)
    assert moved["leader"] == 0 and moved["leader_epoch"] > before["leader_epoch"]
    assert sorted(moved["isr"]) == [0, 1]         # 2 out (gone), 1 kept
    nodes[0].zk.stop()                            # broker 0's session ends only now
    await settle(nodes[1])
    after = state_json(server, "t", 0)
    assert after["leader"] == 1 and after["leader_epoch"] > moved["leader_epoch"]
    await nodes[1].controller.stop()


@aio
async def test_a_lone_replica_restarted_between_controllers_keeps_its_leadership() -> None:
    """No other live ISR member: nothing to gain from an election (one broker
    restarting with all its partitions), the state is left as it is."""
    server, nodes = await cluster(2)
    await nodes[0].store.create_topic("t", {0: [1]}, {})
    await settle(*nodes)
    before = state_json(server, "t", 0)
    for n in nodes:
        await n.controller.stop()
    nodes[1].zk.expire()
    await until(lambda: registered_anew(server, nodes[1]), "broker 1 registered anew")
    nodes[0].controller = Controller(0, nodes[0].store, nodes[0].transport)
    await nodes[0].controller.start()
    await settle(nodes[0])
    assert nodes[0].controller.is_active
    assert state_json(server, "t", 0) == before
    await nodes[0].controller.stop()


@aio
async def test_session_expiry_moves_controller_and_bumps_epoch() -> None:
    server, nodes = await cluster(2)
    nodes[0].zk.expire()
    await settle(*nodes)
    assert nodes[1].controller.is_active and not nodes[0].controller.is_active
    assert server.nodes["/controller_epoch"].data == b"2"
    assert nodes[0].controller.active_controller_id == 1
    assert "/brokers/ids/0" in server.nodes   # re-registered on the new session


@aio
async def test_fenced_controller_resigns_on_epoch_moved() -> None:
    server, nodes = await cluster(2)
    a = active(nodes)
    # another "controller" bumps the epoch behind our back
    admin = FakeZk(server)
    admin.start(1)
    admin.set("/controller_epoch", b"7")
    await nodes[1].store.create_topic("t", {0: [0, 1]}, {})
    await settle(*nodes)
    assert not a.controller.is_active
    assert zd.partition_state_path("t", 0) not in server.nodes  # the fenced write did not land


@aio
async def test_controlled_shutdown_moves_leaders_off_the_broker() -> None:
    server, nodes = await cluster(3)
    await nodes[1].store.create_topic("t", {0: [1, 2], 1: [2, 1], 2: [1]}, {})
    await settle(*nodes)
    remaining = await active(nodes).controller.controlled_shutdown(1, -1)
    assert remaining == []                      # rf=1 partition 2 is not reported
    st0, st1 = state_json(server, "t", 0), state_json(server, "t", 1)
    assert (st0["leader"], st0["isr"]) == (2, [2])
    assert (st1["leader"], st1["isr"]) == (2, [2])
    await settle(*nodes)
    stops = active(nodes).transport.of(5, broker=1)
    assert stops and not stops[-1].delete_partitions
    assert state_json(server, "t", 2)["leader"] == 1
    with pytest.raises(Exception):
        await nodes[2].controller.controlled_shutdown(1, -1)


@aio
async def test_topic_deletion_sends_stop_replica_then_removes_znodes() -> None:
    server, nodes = await cluster(2)
    a = active(nodes)
    await nodes[1].store.create_topic("gone", {0: [0, 1]}, {"retention.ms": "1"})
    await settle(*nodes)
    await nodes[1].store.delete_topic("gone")
    await settle(*nodes)
    for b in (0, 1):
        stop = a.transport.of(5, broker=b)[-1]
        assert stop.delete_partitions and stop.topic_states[0].topic_name == "gone"
    marked = a.transport.of(6, broker=1)[-1].topic_states[0].partition_states[0]
    assert marked.leader == -2
    assert not [p for p in server.nodes if "gone" in p]
    assert "gone" not in a.controller.ctx.assignments


@aio
async def test_added_partitions_get_state() -> None:
    server, nodes = await cluster(2)
    await nodes[0].store.create_topic("t", {0: [0]}, {})
    await settle(*nodes)
    await nodes[0].store.add_partitions("t", {1: [1]})
    await settle(*nodes)
    assert state_json(server, "t", 1)["leader"] == 1
    assert (await nodes[0].store.topic_assignments())["t"] == {0: [0], 1: [1]}


@aio
async def test_store_ids_configs_and_producer_blocks() -> None:
    server = FakeZkServer()
    store = ClusterStore("fake", client=FakeZk(server))
    await store.connect()
    cid = await store.cluster_id()
    assert len(cid) == 22 and await store.cluster_id() == cid
    assert json.loads(server.nodes["/cluster/id"].data) == {"version": "1", "id": cid}
    assert [await store.allocate_broker_id() for _ in range(2)] == [1001, 1002]
    assert await store.allocate_producer_ids(3) == (0, 999)
    assert await store.allocate_producer_ids(4) == (1000, 1999)
    blk = json.loads(server.nodes["/latest_producer_id_block"].data)
    assert blk == {"version": 1, "broker": 4, "block_start": "1000", "block_end": "1999"}
    await store.create_topic("c", {0: [0]}, {"cleanup.policy": "compact"})
    seen: list[str] = []
    store.watch_config_changes(seen.append)
    await store.set_topic_configs("c", {"retention.ms": "5"})
    await until(lambda: bool(seen), "the config change notified")
    assert await store.topic_configs("c") == {"retention.ms": "5"}
    assert seen == ["c"]
    change = [p for p in server.nodes if p.startswith("/config/changes/config_change_")]
    assert change == ["/config/changes/config_change_0000000000"]
