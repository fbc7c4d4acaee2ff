"""Issue 4's controller over FakeZk: AlterPartition validation and fencing,
dead-broker elections (unclean off/on, per topic), preferred elections and the
imbalance check, reassignment step by step (API and znode), failover state
loading, and pipelined ZooKeeper batches."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller import Controller, NotControllerError
from controller import zkdata as zd
from controller.alter_partition import Proposal, check
from controller.leader_election import imbalanced
from controller.reassignment import reassign_to
from controller.zkdata import LeaderIsr
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api
from tests.unit.controller.fake_zk import FakeZkServer
from tests.unit.controller.test_controller import Node, active, aio, settle, state_json

E = ErrorCode


async def cluster(n: int, **controller_args: Any) -> tuple[FakeZkServer, list[Node]]:
    server = FakeZkServer()
    nodes = [Node(server, i) for i in range(n)]
    for node in nodes:
        node.controller = Controller(node.id, node.store, node.transport, **controller_args)
        await node.start()
        await settle(*nodes)
    return server, nodes


async def topic(nodes: list[Node], name: str, assignment: dict[int, list[int]],
                configs: dict[str, str] | None = None) -> None:
    await nodes[-1].store.create_topic(name, assignment, configs or {})
    await settle(*nodes)


def alter_request(broker: int, epoch: int, parts: list[tuple[str, int, int, list[int], int]],
                  version: int = 2, topic_ids: dict[str, Any] | None = None) -> Struct:
    """parts: (topic, partition, leader epoch, new isr, partition epoch)."""
    spec = api(56).request
    td, pd, bs = spec.structs["TopicData"], spec.structs["PartitionData"], \
        spec.structs["BrokerState"]
    by_topic: dict[str, list[Struct]] = {}
    for t, p, le, isr, pe in parts:
        by_topic.setdefault(t, []).append(pd.new(
            partition_index=p, leader_epoch=le, new_isr=isr,
            new_isr_with_epochs=[bs.new(broker_id=b, broker_epoch=-1) for b in isr],
            partition_epoch=pe))
    return spec.new(broker_id=broker, broker_epoch=epoch, topics=[
        td.new(topic_name=t, topic_id=(topic_ids or {}).get(t), partitions=ps)
        for t, ps in by_topic.items()])


def results(resp: Struct) -> dict[int, Struct]:
    return {p.partition_index: p for t in resp.topics for p in t.partitions}


# --- pure rules ---------------------------------------------------------------------------

def test_alter_partition_rules_in_kafka_order() -> None:
    cur = LeaderIsr(1, 5, (1, 2, 3), 1, zk_version=7)
    live = {1, 2, 3}

    def v(le: int, isr: tuple[int, ...], pe: int, version: int = 2, rec: int = 0,
          cur_: LeaderIsr | None = cur, live_: set[int] = live) -> Any:
        return check(cur_, Proposal(1, le, isr, rec, pe), live_, version)
    assert v(5, (1, 2), 7) is None                                  # accepted
    assert v(5, (1, 2), 7, cur_=None) == E.UNKNOWN_TOPIC_OR_PARTITION
    assert v(6, (1, 2), 7) == E.NOT_CONTROLLER                      # leader epoch ahead
    assert v(5, (1, 2), 8) == E.NOT_CONTROLLER                      # partition epoch ahead
    assert v(4, (1, 2), 7) == E.FENCED_LEADER_EPOCH                 # zombie leader
    assert v(5, (1, 2, 3), 6) == cur                                # replay: idempotent
    assert v(5, (1, 2), 6) == E.INVALID_UPDATE_VERSION
    assert v(5, (1, 2), 7, rec=1) == E.INVALID_REQUEST              # RECOVERED -> RECOVERING
    assert v(5, (1, 2, 4), 7) == E.INELIGIBLE_REPLICA               # 4 is not live
    assert v(5, (1, 2, 4), 7, version=1) == E.OPERATION_NOT_ATTEMPTED


def test_reassign_to_computes_full_adding_and_removing_sets() -> None:
    assert reassign_to([0, 1], [], [1, 2]) == ([1, 2, 0], [2], [0])
    # a new target while [2] is being added: relative to the origin [0, 1]
    assert reassign_to([1, 2, 0], [2], [3, 1]) == ([3, 1, 0], [3], [0])
    assert reassign_to([0, 1], [], [1, 0]) == ([1, 0], [], [])       # reorder only


# --- AlterPartition through the controller ------------------------------------------------

@aio
async def test_alter_partition_shrinks_isr_without_bumping_leader_epoch() -> None:
    server, nodes = await cluster(3)
    a = active(nodes)
    await topic(nodes, "t", {0: [1, 2, 0]})
    ctl = a.controller
    epoch1 = ctl.ctx.live[1].epoch
    lai_before = len(a.transport.of(4))
    resp = await ctl.alter_partition(alter_request(1, epoch1, [("t", 0, 0, [1, 2], 0)], 0), 0)
    r = results(resp)[0]
    assert (r.error_code, r.leader_id, r.leader_epoch, r.isr, r.partition_epoch) == \
        (0, 1, 0, [1, 2], 1)
    st = state_json(server, "t", 0)
    assert (st["leader"], st["leader_epoch"], st["isr"]) == (1, 0, [1, 2])
    assert server.nodes[zd.partition_state_path("t", 0)].version == 1
    await settle(*nodes)
    assert len(a.transport.of(4)) == lai_before            # no LeaderAndIsr for an ISR change
    um = a.transport.of(6, broker=2)[-1].topic_states[0].partition_states[0]
    assert (um.isr, um.zk_version) == ([1, 2], 1)
    # the same request again: idempotent success; an old partition epoch now: rejected
    again = results(await ctl.alter_partition(
        alter_request(1, epoch1, [("t", 0, 0, [1, 2], 0)], 0), 0))[0]
    assert (again.error_code, again.partition_epoch) == (0, 1)
    stale = results(await ctl.alter_partition(
        alter_request(1, epoch1, [("t", 0, 0, [1], 0)], 0), 0))[0]
    assert stale.error_code == E.INVALID_UPDATE_VERSION


@aio
async def test_alter_partition_fencing_and_errors() -> None:
    server, nodes = await cluster(3)
    a = active(nodes)
    await topic(nodes, "t", {0: [1, 2], 1: [2, 1]})
    ctl = a.controller
    e1 = ctl.ctx.live[1].epoch
    resp = await ctl.alter_partition(alter_request(1, e1 - 1, [("t", 0, 0, [1], 0)]), 2)
    assert resp.error_code == E.STALE_BROKER_EPOCH and resp.topics == []
    tid = ctl.ctx.topic_ids["t"]
    # v2 names topics by id; an unknown id -> UNKNOWN_TOPIC_ID
    resp = await ctl.alter_partition(alter_request(
        1, e1, [("t", 0, 0, [1, 0], 0), ("x", 0, 0, [1], 0)], 2,
        {"t": tid, "x": zd.random_kafka_uuid()}), 2)
    by_id = {t.topic_id: t.partitions[0].error_code for t in resp.topics}
    assert by_id[tid] == 0                                          # 0 is live: accepted
    assert [c for k, c in by_id.items() if k != tid] == [E.UNKNOWN_TOPIC_ID]
    # broker 2 dies: it leads partition 1 no longer; its old leader epoch is fenced
    await nodes[2].store.close()
    await settle(*nodes)
    st1 = ctl.ctx.states[("t", 1)]
    assert st1.leader == 1 and st1.leader_epoch == 1
    resp = await ctl.alter_partition(alter_request(1, e1, [("t", 1, 0, [1], 1)], 2,
                                                   {"t": tid}), 2)
    assert results(resp)[1].error_code == E.FENCED_LEADER_EPOCH
    # growing the ISR with a dead broker is refused (KIP-841)
    s0 = ctl.ctx.states[("t", 0)]
    resp = await ctl.alter_partition(alter_request(
        1, e1, [("t", 0, s0.leader_epoch, [1, 2], s0.zk_version)], 2, {"t": tid}), 2)
    assert results(resp)[0].error_code == E.INELIGIBLE_REPLICA
    with pytest.raises(NotControllerError):
        await nodes[1].controller.alter_partition(alter_request(1, e1, []), 2)


@aio
async def test_fenced_controller_cannot_write_isr() -> None:
    server, nodes = await cluster(2)
    a = active(nodes)
    await topic(nodes, "t", {0: [0, 1]})
    e0 = a.controller.ctx.live[0].epoch
    server.nodes["/controller_epoch"] = server.nodes["/controller_epoch"].__class__(
        b"9", server.nodes["/controller_epoch"].version + 1, 0, 0)   # a successor's bump
    with pytest.raises(NotControllerError):
        await a.controller.alter_partition(alter_request(0, e0, [("t", 0, 0, [0], 0)], 0), 0)
    assert state_json(server, "t", 0)["isr"] == [0, 1]
    assert not a.controller.is_active


# --- broker death: clean and unclean -----------------------------------------------------

@aio
async def test_dead_leader_with_no_live_isr_stays_offline_unless_unclean() -> None:
    server, nodes = await cluster(3)
    a = active(nodes)
    await topic(nodes, "clean", {0: [1, 2]})
    await topic(nodes, "dirty", {0: [1, 2]}, {"unclean.leader.election.enable": "true"})
    e1 = a.controller.ctx.live[1].epoch
    for t in ("clean", "dirty"):      # broker 2 falls out of the ISR
        await a.controller.alter_partition(alter_request(1, e1, [(t, 0, 0, [1], 0)], 0), 0)
    await nodes[1].store.close()
    await settle(*nodes)
    clean, dirty = state_json(server, "clean", 0), state_json(server, "dirty", 0)
    assert (clean["leader"], clean["isr"]) == (-1, [1])        # waits for broker 1
    assert (dirty["leader"], dirty["isr"], dirty["leader_epoch"]) == (2, [2], 1)


@aio
async def test_broker_default_unclean_and_topic_override_false() -> None:
    server, nodes = await cluster(3, unclean_leader_election=True)
    a = active(nodes)
    await topic(nodes, "u", {0: [1, 2]})
    await topic(nodes, "strict", {0: [1, 2]}, {"unclean.leader.election.enable": "false"})
    e1 = a.controller.ctx.live[1].epoch
    for t in ("u", "strict"):
        await a.controller.alter_partition(alter_request(1, e1, [(t, 0, 0, [1], 0)], 0), 0)
    await nodes[1].store.close()
    await settle(*nodes)
    assert state_json(server, "u", 0)["leader"] == 2
    assert state_json(server, "strict", 0)["leader"] == -1


@aio
async def test_broker_death_elects_first_live_isr_member_in_assignment_order() -> None:
    server, nodes = await cluster(4)
    await topic(nodes, "t", {0: [1, 3, 2]})
    await nodes[1].store.close()
    await settle(*nodes)
    st = state_json(server, "t", 0)
    assert (st["leader"], st["isr"], st["leader_epoch"]) == (3, [3, 2], 1)
    lai = active(nodes).transport.of(4, broker=2)[-1].topic_states[0].partition_states[0]
    assert (lai.leader, lai.leader_epoch) == (3, 1)


# --- preferred elections ------------------------------------------------------------------

@aio
async def test_elect_leaders_preferred_and_unclean() -> None:
    server, nodes = await cluster(3, auto_leader_rebalance=False)
    a = active(nodes)
    await topic(nodes, "t", {0: [1, 2], 1: [2, 1]})
    nodes[1].zk.expire()          # broker 1 bounces: partition 0 moves to 2, ISR [2]
    await settle(*nodes)
    ctl = a.controller
    assert ctl.ctx.states[("t", 0)].leader == 2
    # broker 1 is back but only 2 is in the ISR: preferred not available yet
    res = await ctl.elect_leaders([("t", 0), ("t", 1), ("t", 9)], 0)
    assert res[("t", 0)][0] == E.PREFERRED_LEADER_NOT_AVAILABLE
    assert res[("t", 1)][0] == E.ELECTION_NOT_NEEDED
    assert res[("t", 9)][0] == E.UNKNOWN_TOPIC_OR_PARTITION
    s = ctl.ctx.states[("t", 0)]
    e2 = ctl.ctx.live[2].epoch
    await ctl.alter_partition(alter_request(2, e2, [("t", 0, s.leader_epoch, [2, 1],
                                                     s.zk_version)], 0), 0)
    res = await ctl.elect_leaders([("t", 0)], 0)
    assert res[("t", 0)] == (0, None)
    st = state_json(server, "t", 0)
    assert (st["leader"], st["isr"], st["leader_epoch"]) == (1, [2, 1], s.leader_epoch + 1)
    assert (await ctl.elect_leaders([("t", 0)], 1))[("t", 0)][0] == E.ELECTION_NOT_NEEDED


@aio
async def test_imbalance_check_moves_leaders_back_to_preferred() -> None:
    server, nodes = await cluster(3, leader_imbalance_check_interval_s=0.05)
    a = active(nodes)
    await topic(nodes, "t", {0: [1, 2], 1: [1, 2], 2: [2, 1]})
    ctl = a.controller
    ctl.auto_rebalance = False        # take the leaders away first, without the timer
    await ctl.controlled_shutdown(1, -1)
    ctl.ctx.shutting_down.discard(1)  # broker 1 "came back" and caught up
    for p in (0, 1):
        s = ctl.ctx.states[("t", p)]
        await ctl.alter_partition(alter_request(
            2, ctl.ctx.live[2].epoch, [("t", p, s.leader_epoch, [2, 1], s.zk_version)], 0), 0)
    assert imbalanced(ctl, 10) == [("t", 0), ("t", 1)]
    assert imbalanced(ctl, 100) == []
    ctl.auto_rebalance = True
    ctl._schedule_rebalance()
    loop = __import__("asyncio").get_running_loop()
    deadline = loop.time() + 5.0      # the 50 ms timer; a loaded machine may need longer
    while True:
        await settle(*nodes)
        leaders = [state_json(server, "t", p)["leader"] for p in (0, 1, 2)]
        if leaders == [1, 1, 2] or loop.time() > deadline:
            break
        await __import__("asyncio").sleep(0.05)
    assert leaders == [1, 1, 2]


# --- controlled shutdown ------------------------------------------------------------------

@aio
async def test_controlled_shutdown_of_many_partitions_is_batched() -> None:
    server, nodes = await cluster(3)
    a = active(nodes)
    await topic(nodes, "big", {p: [1, 2, 0] for p in range(300)})
    writes = server.ops
    remaining = await a.controller.controlled_shutdown(1, -1)
    assert remaining == []
    assert all(state_json(server, "big", p)["leader"] == 2 for p in (0, 150, 299))
    assert all(state_json(server, "big", p)["isr"] == [2, 0] for p in (0, 299))
    assert server.ops - writes == 2          # 300 partitions: two fenced transactions...
    await settle(*nodes)
    lai = a.transport.of(4, broker=2)
    assert len(lai[-1].topic_states[0].partition_states) == 300   # ...one request per broker
    e1 = a.controller.ctx.live[1].epoch
    with pytest.raises(Exception):
        await a.controller.controlled_shutdown(1, e1 - 1)          # stale broker epoch


# --- reassignment -------------------------------------------------------------------------

def topic_json(server: FakeZkServer, name: str) -> dict[str, Any]:
    return json.loads(server.nodes[zd.topic_path(name)].data)  # type: ignore[no-any-return]


@aio
async def test_reassignment_expands_waits_for_isr_then_shrinks() -> None:
    server, nodes = await cluster(4)
    a = active(nodes)
    await topic(nodes, "r", {0: [1, 2]})
    ctl = a.controller
    res = await ctl.alter_reassignments({("r", 0): [2, 3], ("r", 5): [1], ("nope", 0): [1]})
    assert res[("r", 0)] == (0, None)
    assert res[("r", 5)][0] == res[("nope", 0)][0] == E.UNKNOWN_TOPIC_OR_PARTITION
    tj = topic_json(server, "r")
    assert (tj["partitions"]["0"], tj["adding_replicas"], tj["removing_replicas"]) == \
        ([2, 3, 1], {"0": [3]}, {"0": [1]})
    st = state_json(server, "r", 0)
    assert (st["leader"], st["leader_epoch"], st["isr"]) == (1, 1, [1, 2])
    await settle(*nodes)
    lai3 = a.transport.of(4, broker=3)[-1].topic_states[0].partition_states[0]
    assert (lai3.replicas, lai3.is_new, lai3.leader) == ([2, 3, 1], True, 1)
    assert await ctl.list_reassignments(None) == {("r", 0): ([2, 3, 1], [3], [1])}
    # not done until 3 is in the ISR; the leader adds it with AlterPartition
    s = ctl.ctx.states[("r", 0)]
    await ctl.alter_partition(alter_request(1, ctl.ctx.live[1].epoch, [
        ("r", 0, s.leader_epoch, [1, 2, 3], s.zk_version)], 0), 0)
    st = state_json(server, "r", 0)
    assert (st["leader"], st["isr"], st["leader_epoch"]) == (2, [2, 3], 2)   # 1 was removed
    tj = topic_json(server, "r")
    assert (tj["partitions"]["0"], tj["adding_replicas"], tj["removing_replicas"]) == \
        ([2, 3], {}, {})
    await settle(*nodes)
    stop = a.transport.of(5, broker=1)[-1]
    assert stop.delete_partitions and stop.topic_states[0].topic_name == "r"
    assert await ctl.list_reassignments(None) == {}
    assert (await ctl.alter_reassignments({("r", 0): None}))[("r", 0)][0] == \
        E.NO_REASSIGNMENT_IN_PROGRESS


@aio
async def test_reassignment_validation_and_cancel() -> None:
    server, nodes = await cluster(3)
    a = active(nodes)
    await topic(nodes, "r", {0: [0, 1]})
    ctl = a.controller
    bad = await ctl.alter_reassignments({("r", 0): []})
    assert bad[("r", 0)][0] == E.INVALID_REPLICA_ASSIGNMENT
    assert (await ctl.alter_reassignments({("r", 0): [1, 1]}))[("r", 0)][0] == \
        E.INVALID_REPLICA_ASSIGNMENT
    assert (await ctl.alter_reassignments({("r", 0): [1, 7]}))[("r", 0)][0] == \
        E.INVALID_REPLICA_ASSIGNMENT                                  # 7 is not live
    assert (await ctl.alter_reassignments({("r", 0): [2]}))[("r", 0)] == (0, None)
    assert ctl.ctx.replicas(("r", 0)) == [2, 0, 1]
    assert (await ctl.alter_reassignments({("r", 0): None}))[("r", 0)] == (0, None)
    assert ctl.ctx.replicas(("r", 0)) == [0, 1] and not ctl.ctx.reassigning
    tj = topic_json(server, "r")
    assert (tj["partitions"]["0"], tj["adding_replicas"]) == ([0, 1], {})
    await settle(*nodes)
    assert a.transport.of(5, broker=2)[-1].delete_partitions     # the added replica stops


@aio
async def test_znode_reassignment_and_resume_after_failover() -> None:
    server, nodes = await cluster(3)
    await topic(nodes, "z", {0: [0, 1], 1: [0, 1]})
    admin = nodes[2].zk
    admin.create(zd.REASSIGN_PARTITIONS, zd.encode_reassignment(
        {("z", 0): [1, 0], ("z", 1): [1, 2], ("gone", 0): [1]}))
    await settle(*nodes)
    # z-0 is a reorder (already in ISR): done at once; gone-0 fails; z-1 waits for 2
    left = zd.decode_reassignment(server.nodes[zd.REASSIGN_PARTITIONS].data)
    assert left == {("z", 1): [1, 2]}
    assert topic_json(server, "z")["partitions"] == {"0": [1, 0], "1": [1, 2, 0]}
    # the controller dies; its successor loads the running reassignment and finishes it
    nodes[0].zk.expire()
    await settle(*nodes)
    b = active(nodes)
    assert b is nodes[1] and b.controller.ctx.reassigning == {("z", 1): ([2], [0])}
    s = b.controller.ctx.states[("z", 1)]
    assert s.leader == 1      # broker 0 bounced: leadership moved to 1
    await b.controller.alter_partition(alter_request(1, b.controller.ctx.live[1].epoch, [
        ("z", 1, s.leader_epoch, [*s.isr, 2], s.zk_version)], 0), 0)
    await settle(*nodes)
    assert topic_json(server, "z")["partitions"]["1"] == [1, 2]
    assert zd.REASSIGN_PARTITIONS not in server.nodes


# --- failover loads everything with pipelined reads ---------------------------------------

@aio
async def test_failover_reads_and_writes_in_pipelined_batches() -> None:
    server, nodes = await cluster(3)
    await topic(nodes, "a", {p: [0, 1, 2] for p in range(200)})
    await topic(nodes, "b", {p: [1, 2, 0] for p in range(200)})
    before = server.batches
    await nodes[0].store.close()    # the controller and the leader of a-* go away at once
    await settle(*nodes)
    b = active(nodes[1:])
    assert len(b.controller.ctx.states) == 400
    assert all(state_json(server, "a", p)["leader"] == 1 for p in (0, 199))
    assert server.batches - before < 20            # not one round trip per partition
    um = b.transport.of(6, broker=2)
    assert sum(len(ts.partition_states) for ts in um[0].topic_states) == 400


@aio
async def test_chunked_write_isolates_the_partition_that_changed() -> None:
    server, nodes = await cluster(2)
    a = active(nodes)
    await topic(nodes, "c", {p: [0, 1] for p in range(250)})
    ctl = a.controller
    # someone else bumped partition 7's znode: our cached version is stale
    nodes[1].zk.set(zd.partition_state_path("c", 7), server.nodes[
        zd.partition_state_path("c", 7)].data)
    changes = {tp: s.new_leader(1, (1,)) for tp, s in ctl.ctx.states.items()}
    done, failed = await ctl.store.update_partition_states(changes, ctl.ctx.epoch,
                                                           ctl.ctx.epoch_zk_version)
    assert failed == [("c", 7)] and len(done) == 249
    assert state_json(server, "c", 6)["leader"] == 1 and state_json(server, "c", 7)["leader"] == 0
    assert done[("c", 6)].zk_version == 1
