"""Two ClusterStore + Controller pairs against a real ZooKeeper (kazoo), with a
recording transport instead of brokers."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any, Awaitable, Callable

import pytest
from kazoo.client import KazooClient

from controller import ClusterStore, Controller
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api

pytestmark = pytest.mark.integration


class RecordingTransport:
    def __init__(self) -> None:
        self.sent: list[tuple[int, int, Struct]] = []

    async def send(self, broker_id: int, host: str, port: int, header: RequestHeader,
                   body: Struct) -> Struct:
        self.sent.append((broker_id, header.api_key, body))
        return api(header.api_key).response.new()

    def to(self, broker: int, key: int) -> list[Struct]:
        return [b for bid, k, b in self.sent if bid == broker and k == key]


async def until(cond: Callable[[], Any], timeout: float = 15) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await cond() if asyncio.iscoroutinefunction(cond) else not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


async def ran_for_controller(ctl: Controller, winner: int = 1) -> None:
    """Until ``ctl`` has run its election and names ``winner`` the active controller.
    Controller.start only queues the election: with a fixed sleep before the next pair
    starts, a loaded machine could let broker 2 run for controller before broker 1 had
    won, and win."""
    await until(lambda: ctl.active_controller_id == winner)


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 50))  # type: ignore[arg-type]


def test_election_topic_creation_and_failover(zookeeper: str) -> None:
    chroot = f"/pb-{uuid.uuid4().hex[:8]}"
    connect = zookeeper + chroot
    raw = KazooClient(hosts=zookeeper)
    raw.start(10)

    def znode(path: str) -> Any:
        return json.loads(raw.get(chroot + path)[0])

    async def scenario() -> None:
        nodes = []
        for bid in (1, 2):
            store = ClusterStore(connect, session_timeout_ms=6000)
            await store.connect()
            await store.register_broker(bid, [f"PLAINTEXT://127.0.0.1:{19090 + bid}"], None)
            t = RecordingTransport()
            ctl = Controller(bid, store, t)
            await ctl.start()
            nodes.append((store, ctl, t))
            await ran_for_controller(ctl)
        (s1, c1, t1), (s2, c2, t2) = nodes
        await until(lambda: c1.is_active)
        assert not c2.is_active
        assert raw.get(chroot + "/controller_epoch")[0] == b"1"
        reg = znode("/brokers/ids/2")
        assert reg["endpoints"] == ["PLAINTEXT://127.0.0.1:19092"] and reg["version"] == 5
        assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}

        topic_id = await s2.create_topic("events", {0: [1, 2], 1: [2, 1]}, {"retention.ms": "9"})
        assert znode("/brokers/topics/events")["partitions"] == {"0": [1, 2], "1": [2, 1]}
        await until(lambda: raw.exists(chroot + "/brokers/topics/events/partitions/1/state"))
        assert znode("/brokers/topics/events/partitions/0/state") == {
            "controller_epoch": 1, "leader": 1, "version": 1, "leader_epoch": 0, "isr": [1, 2]}
        assert znode("/brokers/topics/events/partitions/1/state")["leader"] == 2
        assert znode("/config/topics/events") == {"version": 1, "config": {"retention.ms": "9"}}
        await until(lambda: t1.to(2, 4) and t1.to(1, 4))
        lai = t1.to(2, 4)[-1]
        assert lai.controller_id == 1 and lai.controller_epoch == 1
        assert lai.topic_states[0].topic_id == topic_id
        await until(lambda: any(u.topic_states for u in t1.to(1, 6)))

        await s1.close()                       # the controller's session ends
        await until(lambda: c2.is_active)
        assert raw.get(chroot + "/controller_epoch")[0] == b"2"
        assert znode("/controller")["brokerid"] == 2
        await until(lambda: znode("/brokers/topics/events/partitions/0/state")["leader"] == 2)
        st = znode("/brokers/topics/events/partitions/0/state")
        assert st["isr"] == [2] and st["controller_epoch"] == 2 and st["leader_epoch"] == 1
        await until(lambda: t2.to(2, 6))
        assert [b.id for b in t2.to(2, 6)[-1].live_brokers] == [2]
        await c1.stop()
        await c2.stop()
        await s2.close()

    try:
        run(scenario())
    finally:
        raw.stop()
        raw.close()


def test_chroot_ids_and_producer_blocks(zookeeper: str) -> None:
    async def scenario() -> None:
        store = ClusterStore(zookeeper + f"/pb-{uuid.uuid4().hex[:8]}/nested")
        await store.connect()
        cid = await store.cluster_id()
        assert len(cid) == 22 and cid == await store.cluster_id()
        assert await store.allocate_broker_id() == 1001
        blocks = await asyncio.gather(*(store.allocate_producer_ids(0, 1000) for _ in range(4)))
        assert sorted(blocks) == [(0, 999), (1000, 1999), (2000, 2999), (3000, 3999)]
        await store.close()
    run(scenario())
