"""controller/broker_modifications.py over the in-memory ZooKeeper: a live broker
rewriting its /brokers/ids/<id> (ClusterStore.update_broker_registration, the
dynamic listeners' path) makes the active controller update its context and send
UpdateMetadata with the new endpoints to every live broker; the broker epoch stays.
And unclean leader election turned on at run time elects the offline partitions."""

from __future__ import annotations

from controller import zkdata as zd
from tests.unit.controller.test_controller import active, aio, cluster, settle
from tests.unit.controller.test_failover_admin import alter_request, state_json, topic


def endpoints_sent(um: object, broker_id: int) -> list[tuple[str, int]]:
    (b,) = [b for b in um.live_brokers if b.id == broker_id]    # type: ignore[attr-defined]
    return sorted((e.listener, e.port) for e in b.endpoints)


@aio
async def test_new_endpoints_reach_every_broker() -> None:
    _server, nodes = await cluster(3)
    a = active(nodes)
    epoch = a.controller.ctx.live[1].epoch
    before = {n: len(a.transport.of(6, broker=n)) for n in range(3)}
    await nodes[1].store.update_broker_registration(1, [
        zd.Endpoint("PLAINTEXT", "127.0.0.1", 9093),
        zd.Endpoint("EXTERNAL", "127.0.0.1", 19093)])
    await settle(*nodes)
    info = a.controller.ctx.live[1]
    assert info.epoch == epoch                      # same registration: no bounce
    assert [e.listener for e in info.endpoints] == ["PLAINTEXT", "EXTERNAL"]
    for n in range(3):
        sent = a.transport.of(6, broker=n)
        assert len(sent) > before[n]
        assert endpoints_sent(sent[-1], 1) == [("EXTERNAL", 19093), ("PLAINTEXT", 9093)]
    # a rewrite with the same endpoints sends nothing more
    count = len(a.transport.of(6))
    await nodes[1].store.update_broker_registration(1, list(info.endpoints))
    await settle(*nodes)
    assert len(a.transport.of(6)) == count


@aio
async def test_turning_unclean_election_on_elects_the_offline_partitions_now() -> None:
    """Kafka's UncleanLeaderElectionEnable: the broker default switched on at run time
    (a dynamic broker config) elects the partitions left offline at once; a topic's
    own unclean.leader.election.enable=false still wins."""
    server, nodes = await cluster(3)
    a = active(nodes)
    await topic(nodes, "t", {0: [1, 2]})
    await topic(nodes, "strict", {0: [1, 2]}, {"unclean.leader.election.enable": "false"})
    e1 = a.controller.ctx.live[1].epoch
    for t in ("t", "strict"):         # broker 2 falls out of the ISR, then broker 1 dies
        await a.controller.alter_partition(alter_request(1, e1, [(t, 0, 0, [1], 0)], 0), 0)
    await nodes[1].store.close()
    await settle(*nodes)
    assert state_json(server, "t", 0)["leader"] == -1
    a.controller.set_unclean_leader_election(True)
    await settle(*nodes)
    assert (state_json(server, "t", 0)["leader"], state_json(server, "t", 0)["isr"]) == (2, [2])
    assert state_json(server, "strict", 0)["leader"] == -1
    assert a.controller.stats.unclean_leader_elections == 1
