"""controller/log_dir_events.py over FakeZk: a broker's log dir event notification
makes the controller ask it about all its partitions; its KAFKA_STORAGE_ERROR
answers move leadership (within the ISR, or unclean where the topic allows it),
shrink ISRs, and show in UpdateMetadata's offline_replicas until it restarts."""

from __future__ import annotations

import json
from typing import Any

from controller import zkdata as zd
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api
from tests.unit.controller.fake_zk import FakeZkServer
from tests.unit.controller.test_controller import Node, RecordingTransport, aio, state_json
from tests.unit.controller.test_controller import cluster as controller_cluster
from tests.unit.controller.test_controller import settle as settle_nodes

STORAGE_ERROR = 56


class OfflineDirTransport(RecordingTransport):
    """Answers LeaderAndIsr as a broker with offline log dirs would: 56 for the
    partitions listed in ``offline[broker]``."""

    def __init__(self) -> None:
        super().__init__()
        self.offline: dict[int, set[tuple[str, int]]] = {}

    async def send(self, broker_id: int, host: str, port: int, header: RequestHeader,
                   body: Struct) -> Struct:
        resp = await super().send(broker_id, host, port, header, body)
        if header.api_key != 4:
            return resp
        spec = api(4).response
        bad = self.offline.get(broker_id, set())
        resp.topics = [spec.structs["LeaderAndIsrTopicError"].new(
            topic_id=ts.topic_id, partition_errors=[
                spec.structs["LeaderAndIsrPartitionError"].new(
                    partition_index=ps.partition_index,
                    error_code=STORAGE_ERROR if (ts.topic_name, ps.partition_index) in bad else 0)
                for ps in ts.partition_states]) for ts in body.topic_states]
        return resp


def _node(server: FakeZkServer, broker_id: int) -> Node:
    return Node(server, broker_id, OfflineDirTransport())


async def settle(nodes: list[Node]) -> None:
    await settle_nodes(*nodes, rounds=6)


async def cluster(n: int) -> tuple[FakeZkServer, list[Node]]:
    server, nodes = await controller_cluster(n, _node, rounds=6)
    assert nodes[0].controller.is_active
    return server, nodes


def leader_isr(server: FakeZkServer, topic: str, p: int) -> tuple[int, list[int], int]:
    st = state_json(server, topic, p)
    return st["leader"], st["isr"], st["leader_epoch"]


def offline_replicas(um: Any) -> dict[tuple[str, int], list[int]]:
    return {(t.topic_name, p.partition_index): list(p.offline_replicas)
            for t in um.topic_states for p in t.partition_states}


@aio
async def test_storage_errors_move_leadership_and_shrink_isrs() -> None:
    server, nodes = await cluster(3)
    ctl = nodes[0]
    await ctl.store.create_topic("t", {0: [1, 0, 2], 1: [1, 2, 0], 2: [0, 1, 2]}, {})
    await settle(nodes)
    assert [leader_isr(server, "t", p)[:2] for p in range(3)] == \
        [(1, [1, 0, 2]), (1, [1, 2, 0]), (0, [0, 1, 2])]
    # broker 1's dir holding t-0 and t-2 failed; t-1 is on its other dir
    ctl.transport.offline[1] = {("t", 0), ("t", 2)}
    sent_before = len(ctl.transport.of(4, broker=1))
    path = await nodes[1].store.propagate_log_dir_event(1)
    assert json.loads(server.nodes[path].data) == {"version": 1, "broker": 1, "event": 1}
    await settle(nodes)
    assert not server.children_of(zd.LOG_DIR_EVENT)               # handled and deleted
    asked = ctl.transport.of(4, broker=1)[sent_before]
    assert sorted(p.partition_index for t in asked.topic_states for p in t.partition_states) \
        == [0, 1, 2]                                               # all its partitions
    assert leader_isr(server, "t", 0) == (0, [0, 2], 1)            # moved within the ISR
    assert leader_isr(server, "t", 1) == (1, [1, 2, 0], 0)         # untouched
    assert leader_isr(server, "t", 2) == (0, [0, 2], 1)            # out of the ISR
    um = ctl.transport.of(6, broker=2)[-1]
    assert offline_replicas(um) == {("t", 0): [1], ("t", 2): [1]}
    # the new leader got the word; broker 1 was not asked to follow an offline replica
    lai0 = ctl.transport.of(4, broker=0)[-1]
    assert {p.partition_index: p.leader for t in lai0.topic_states for p in t.partition_states} \
        == {0: 0, 2: 0}
    # another broker bouncing elects nothing on broker 1's offline replicas
    await nodes[2].restart()
    await settle(nodes)
    assert leader_isr(server, "t", 0)[0] == 0
    um = ctl.transport.of(6, broker=0)[-1]
    assert offline_replicas(um)[("t", 0)] == [1]
    # broker 1 restarts with its disk fixed: its replicas are online again
    ctl.transport.offline.pop(1)
    await nodes[1].restart()
    await settle(nodes)
    assert 1 not in ctl.controller.ctx.replicas_on_offline_dirs
    um = ctl.transport.of(6, broker=0)[-1]
    assert offline_replicas(um).get(("t", 0), []) == []


@aio
async def test_no_other_isr_member_leaderless_unless_unclean_allowed() -> None:
    server, nodes = await cluster(3)
    ctl = nodes[0]
    await nodes[2].controller.stop()
    await nodes[2].store.close()                     # broker 2 away: ISRs without it
    await settle(nodes[:2])
    await ctl.store.create_topic("clean", {0: [1, 2]}, {})
    await ctl.store.create_topic("dirty", {0: [1, 2]},
                                 {"unclean.leader.election.enable": "true"})
    await settle(nodes[:2])
    nodes[2]._new()
    await nodes[2].start()                           # back, but out of the ISRs
    await settle(nodes)
    assert leader_isr(server, "clean", 0)[:2] == (1, [1])
    ctl.transport.offline[1] = {("clean", 0), ("dirty", 0)}
    await nodes[1].store.propagate_log_dir_event(1)
    await settle(nodes)
    assert leader_isr(server, "clean", 0)[:2] == (-1, [1])      # no clean choice: offline
    assert leader_isr(server, "dirty", 0)[:2] == (2, [2])       # unclean allowed: broker 2
    # a later broker change does not elect broker 1's offline replica
    await nodes[2].restart()
    await settle(nodes)
    assert leader_isr(server, "clean", 0)[0] == -1


@aio
async def test_a_new_controller_drops_pending_notifications() -> None:
    server, nodes = await cluster(2)
    await nodes[1].controller.stop()                 # only broker 0 could be controller
    await nodes[0].controller.stop()
    await nodes[0].store.close()                     # /controller and its registration go
    await nodes[1].store.propagate_log_dir_event(1)
    assert server.children_of(zd.LOG_DIR_EVENT)
    nodes[0]._new()
    await nodes[0].start()                           # registers, campaigns, fails over
    await settle(nodes[:1])
    assert nodes[0].controller.is_active
    assert not server.children_of(zd.LOG_DIR_EVENT)
