"""The broker side of the control plane at every request version: the controller's
requests (built by RequestBatch) go through the codec at version v and into the
handlers, with a fake ReplicaManager."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from broker.handlers.controlled_shutdown import handle_controlled_shutdown
from broker.handlers.leader_and_isr import handle_leader_and_isr
from broker.handlers.stop_replica import handle_stop_replica
from broker.handlers.update_metadata import handle_update_metadata
from broker.metadata_cache import MetadataCache
from controller.channel import RequestBatch
from controller.context import ControllerContext
from controller.zkdata import BrokerInfo, Endpoint, LeaderIsr
from protocol import codec
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.spec import api

TID = uuid.UUID(int=77)


class FakeReplicas:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.state_change_lock = asyncio.Lock()

    async def become_leader_or_follower_paced(self, epoch: int, states: list[Any]
                                              ) -> dict[Any, int]:
        self.calls.append(("lai", (epoch, states)))
        return {}

    def stop_replicas(self, epoch: int, entries: list[Any]) -> dict[Any, int]:
        self.calls.append(("stop", (epoch, entries)))
        return {}


def make_ctx(epoch: int = 3) -> ControllerContext:
    ctx = ControllerContext(epoch=epoch)
    ctx.live = {b: BrokerInfo(b, (Endpoint("PLAINTEXT", "127.0.0.1", 9000 + b),), "r1", 50 + b)
                for b in (1, 2)}
    ctx.assignments = {"t": {0: [1, 2], 1: [2, 1]}}
    ctx.topic_ids = {"t": TID}
    ctx.states = {("t", 0): LeaderIsr(1, 4, (1, 2), epoch, 6), ("t", 1): LeaderIsr(2, 0, (2,), epoch, 0)}
    return ctx


def bodies(ctx: ControllerContext, key: int) -> Any:
    batch = RequestBatch(ctx, controller_id=1)
    sent: list[tuple[int, int, Any]] = []
    batch.add_leader_and_isr([2], ("t", 0), is_new=True)
    batch.add_leader_and_isr([2], ("t", 1))
    batch.add_stop_replica(2, ("t", 1), delete=True)
    batch.send(SimpleNamespace(enqueue=lambda b, k, body, cb=None: sent.append((b, k, body))))
    return [body for b, k, body in sent if k == key and b == 2][0]


def roundtrip(body: Any, key: int, version: int) -> Any:
    return codec.decode(api(key).request, codec.encode(body, version), version)


def ctx_for(version: int, key: int, broker: Any) -> Any:
    return SimpleNamespace(version=version, broker=broker,
                           header=RequestHeader(key, version, 1, "c"))


def make_broker() -> Any:
    async def ensure_topic_configs(topics: set[str]) -> None:
        loaded.update(topics)

    loaded: set[str] = set()
    hooks: list[tuple[str, Any]] = []
    return SimpleNamespace(metadata=MetadataCache(), replicas=FakeReplicas(), controller=None,
                           group_coordinator=None,
                           authorizer=None,   # no authorizer.class.name: all allowed
                           ensure_topic_configs=ensure_topic_configs, configs_loaded=loaded,
                           on_leader_and_isr=lambda st, err: hooks.append(("lai", len(st))),
                           on_stop_replica=lambda parts: hooks.append(("stop", parts)),
                           hooks=hooks)


@pytest.mark.parametrize("version", range(0, 9))
def test_update_metadata_every_version(version: int) -> None:
    broker = make_broker()
    assert not asyncio.run(broker.metadata.wait_received(0.05))  # nothing from a controller
    req = roundtrip(bodies(make_ctx(), 6), 6, version)
    resp = asyncio.run(handle_update_metadata(ctx_for(version, 6, broker), req))
    assert resp.error_code == 0
    cache = broker.metadata
    assert cache.controller_id == 1 and cache.controller_epoch == 3
    assert [(b.id, b.host, b.port) for b in cache.brokers()] == [(1, "127.0.0.1", 9001),
                                                                 (2, "127.0.0.1", 9002)]
    assert cache.broker(2).rack == ("r1" if version >= 2 else None)
    assert [(p.partition, p.leader, p.isr, p.replicas) for p in cache.partitions("t")] == [
        (0, 1, (1, 2), (1, 2)), (1, 2, (2,), (2, 1))]
    assert cache.partition_count("t") == 2 and cache.partition_count("absent") == 0
    assert asyncio.run(cache.wait_received(0.0))                 # answered from here on
    assert cache.topic_id("t") == (TID if version >= 7 else None)
    assert cache.topic_name(TID) == ("t" if version >= 7 else None)
    # an older controller is refused and changes nothing
    stale = roundtrip(bodies(make_ctx(epoch=2), 6), 6, version)
    stale.live_brokers = []
    resp = asyncio.run(handle_update_metadata(ctx_for(version, 6, broker), stale))
    assert resp.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert len(cache.brokers()) == 2


@pytest.mark.parametrize("version", range(0, 8))
def test_leader_and_isr_every_version(version: int) -> None:
    broker = make_broker()
    req = roundtrip(bodies(make_ctx(), 4), 4, version)
    resp = asyncio.run(handle_leader_and_isr(ctx_for(version, 4, broker), req))
    kind, (epoch, states) = broker.replicas.calls[0]
    assert kind == "lai" and epoch == 3
    assert [(s.topic, s.partition, s.leader, s.leader_epoch, s.isr, s.replicas) for s in states] == [
        ("t", 0, 1, 4, (1, 2), (1, 2)), ("t", 1, 2, 0, (2,), (2, 1))]
    assert states[0].is_new is (version >= 1)
    assert states[0].partition_epoch == 6
    assert (states[0].topic_id == TID) is (version >= 5)
    errs = resp.partition_errors if version < 5 else resp.topics[0].partition_errors
    assert [e.error_code for e in errs] == [0, 0]
    assert broker.metadata.partition("t", 0).leader == 1
    assert broker.configs_loaded == {"t"}  # topic configs read before logs are created
    assert broker.hooks == [("lai", 2)]  # the broker hears of leadership changes
    codec.encode(resp, version)  # the answer encodes at the request's version


@pytest.mark.parametrize("version", range(0, 5))
def test_stop_replica_every_version(version: int) -> None:
    broker = make_broker()
    req = roundtrip(bodies(make_ctx(), 5), 5, version)
    resp = asyncio.run(handle_stop_replica(ctx_for(version, 5, broker), req))
    kind, (epoch, entries) = broker.replicas.calls[0]
    assert kind == "stop" and epoch == 3
    assert [e[:3] for e in entries] == [("t", 1, True)]
    assert [(e.topic_name, e.partition_index, e.error_code) for e in resp.partition_errors] == [
        ("t", 1, 0)]
    broker.metadata.controller_epoch = 9
    resp = asyncio.run(handle_stop_replica(ctx_for(version, 5, broker), req))
    assert resp.error_code == ErrorCode.STALE_CONTROLLER_EPOCH and len(broker.replicas.calls) == 1


def test_controlled_shutdown_forwards_only_on_the_controller() -> None:
    broker = make_broker()
    req = api(7).request.new(broker_id=2, broker_epoch=5)
    resp = asyncio.run(handle_controlled_shutdown(ctx_for(3, 7, broker), req))
    assert resp.error_code == ErrorCode.NOT_CONTROLLER

    class Ctl:
        is_active = True

        async def controlled_shutdown(self, b: int, e: int) -> list[tuple[str, int]]:
            assert (b, e) == (2, 5)
            return [("t", 0)]
    broker.controller = Ctl()
    resp = asyncio.run(handle_controlled_shutdown(ctx_for(3, 7, broker), req))
    assert resp.error_code == 0
    assert [(r.topic_name, r.partition_index) for r in resp.remaining_partitions] == [("t", 0)]


def test_the_id_to_name_map_follows_a_topic_recreated_and_deleted() -> None:
    """Fetch v13+ resolves topic ids through ``topic_name``: a topic created again
    under its name gets the new id only, and a deleted one has none."""
    from broker.metadata_cache import LEADER_DURING_DELETE
    cache = MetadataCache()

    def update(tid: uuid.UUID, leader: int) -> None:
        ps = SimpleNamespace(partition_index=0, leader=leader, leader_epoch=0, replicas=[1],
                             isr=[1], offline_replicas=[], zk_version=0)
        cache.update_metadata(SimpleNamespace(
            controller_id=1, controller_epoch=1, live_brokers=[],
            topic_states=[SimpleNamespace(topic_name="t", topic_id=tid,
                                          partition_states=[ps])]), 7)
    first, second = uuid.UUID(int=1), uuid.UUID(int=2)
    update(first, 1)
    assert cache.topic_name(first) == "t" and cache.topic_id("t") == first
    update(second, 1)                             # deleted and created again
    assert cache.topic_name(first) is None and cache.topic_name(second) == "t"
    update(second, LEADER_DURING_DELETE)
    assert cache.topic_name(second) is None and cache.topic_id("t") is None
