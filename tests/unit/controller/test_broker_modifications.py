"""controller/broker_modifications.py over the in-memory ZooKeeper: a live broker
rewriting its /brokers/ids/<id> (ClusterStore.update_broker_registration, the
dynamic listeners' path) makes the active controller update its context and send
UpdateMetadata with the new endpoints to every live broker; the broker epoch stays."""

from __future__ import annotations

from controller import zkdata as zd
from tests.unit.controller.test_controller import active, aio, cluster, settle


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
