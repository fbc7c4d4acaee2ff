"""AlterPartitionManager against a fake controller connection: one batched
request, the wire versions (names v0-1, ids v2+), retries, answers applied."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import Any

from client import KafkaConnectionError
from broker.replication.alter_partition_manager import AlterPartitionManager
from protocol.api_keys import ApiKey
from protocol.codec import decode, encode
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

from tests.unit.broker.replication.replication_fakes import FakeCluster
from tests.unit.polling import until

REQ = api(ApiKey.ALTER_PARTITION).request
RESP = api(ApiKey.ALTER_PARTITION).response
LAG = 10_000


class FakeController:
    """A connection to the 'controller': decodes each request through the real
    codec, commits it (partition epoch + 1) unless told to fail."""

    def __init__(self, max_version: int = 3) -> None:
        self.max_version = max_version
        self.requests: list[tuple[int, Struct]] = []
        self.fail_next: list[Any] = []      # an exception, a top-level error code, or a partition error
        self.gets = 0

    async def get(self, host: str, port: int) -> FakeController:
        self.gets += 1
        return self

    def version_for(self, api_key: int, max_version: int | None = None) -> int:
        return min(self.max_version, max_version if max_version is not None else 99)

    async def request(self, api_key: int, body: Struct, version: int | None = None,
                      timeout: float | None = None) -> Struct:
        assert version is not None
        body = decode(REQ, encode(body, version), version)
        self.requests.append((version, body))
        failure = self.fail_next.pop(0) if self.fail_next else None
        if isinstance(failure, Exception):
            raise failure
        if isinstance(failure, tuple) and failure[0] == "top":
            return RESP.new(error_code=failure[1], topics=[])
        topics = []
        for t in body.topics:
            parts = []
            for p in t.partitions:
                isr = p.new_isr if version < 3 else [b.broker_id for b in p.new_isr_with_epochs]
                error = failure if isinstance(failure, int) else 0
                parts.append(RESP.structs["PartitionData"].new(
                    partition_index=p.partition_index, error_code=error, leader_id=body.broker_id,
                    leader_epoch=p.leader_epoch, isr=isr, partition_epoch=p.partition_epoch + 1))
            topics.append(RESP.structs["TopicData"].new(topic_name=t.topic_name, topic_id=t.topic_id,
                                                        partitions=parts))
        return decode(RESP, encode(RESP.new(error_code=0, topics=topics), version), version)


def setup(tmp_path: Path, controller: FakeController, *, partitions: int = 3,
          address: Any = ("127.0.0.1", 9092)) -> tuple[FakeCluster, AlterPartitionManager, list[Any]]:
    c = FakeCluster(tmp_path, lag_ms=LAG)
    node = c.nodes[1]
    manager = AlterPartitionManager(1, lambda: 77, controller, lambda: address, backoff_ms=10)
    node.replicas.alter_partitions = manager
    from broker.replication.partition_state import PartitionState
    states = [PartitionState("t", i, c.topic_id, 1, 1, 0, (1, 2, 3), 5, (1, 2, 3))
              for i in range(partitions)]
    assert not any(node.replicas.become_leader_or_follower(1, states).values())
    parts = [node.replicas.partition("t", i) for i in range(partitions)]
    for p in parts:
        p.isr_sink = partial(node.replicas._submit_isr_change, p)
    return c, manager, parts


def test_one_batched_request_and_answers_applied(tmp_path: Path) -> None:
    async def main() -> None:
        ctl = FakeController(max_version=2)
        c, manager, parts = setup(tmp_path, ctl)
        c.clock.advance(LAG + 1)
        assert c.nodes[1].replicas.maybe_shrink_isr() == 3
        assert manager.pending == 3
        await until(lambda: all(p.pending_isr is None for p in parts), "the answers applied")
        assert len(ctl.requests) == 1
        version, body = ctl.requests[0]
        assert version == 2 and body.broker_id == 1 and body.broker_epoch == 77
        assert body.topics[0].topic_id == c.topic_id and len(body.topics[0].partitions) == 3
        assert {tuple(p.new_isr) for p in body.topics[0].partitions} == {(1,)}
        assert {p.partition_epoch for p in body.topics[0].partitions} == {5}
        for p in parts:
            assert p.isr == {1} and p.partition_epoch == 6 and p.pending_isr is None
        await manager.shutdown()
    asyncio.run(main())


def test_versions_names_without_topic_ids_and_v3_broker_states(tmp_path: Path) -> None:
    async def main() -> None:
        ctl = FakeController(max_version=3)
        c, manager, parts = setup(tmp_path, ctl, partitions=1)
        manager.max_version = 3
        c.clock.advance(LAG + 1)
        c.nodes[1].replicas.maybe_shrink_isr()
        await until(lambda: parts[0].pending_isr is None, "the answer applied")
        version, body = ctl.requests[-1]
        assert version == 3 and [b.broker_id for b in body.topics[0].partitions[0].new_isr_with_epochs] == [1]
        assert parts[0].isr == {1}
        from broker.replication.partition_state import NO_TOPIC_ID
        parts[0].topic_id = NO_TOPIC_ID           # no topic id known: names, v1 at most
        c.clock.advance(LAG + 1)
        parts[0].isr = frozenset({1, 2})
        parts[0].followers[2].last_caught_up_ms = 0
        assert parts[0].maybe_shrink_isr(LAG)
        await until(lambda: parts[0].pending_isr is None, "the answer applied")
        version, body = ctl.requests[-1]
        assert version == 1 and body.topics[0].topic_name == "t"
        assert parts[0].isr == {1}
        await manager.shutdown()
    asyncio.run(main())


def test_retries_connection_errors_not_controller_and_retriable_partition_errors(tmp_path: Path) -> None:
    async def main() -> None:
        ctl = FakeController()
        ctl.fail_next = [KafkaConnectionError("refused"), ("top", ErrorCode.NOT_CONTROLLER),
                         ErrorCode.REQUEST_TIMED_OUT]
        c, manager, parts = setup(tmp_path, ctl, partitions=1)
        c.clock.advance(LAG + 1)
        c.nodes[1].replicas.maybe_shrink_isr()
        for _ in range(50):
            await asyncio.sleep(0.01)
            if parts[0].pending_isr is None:
                break
        assert len(ctl.requests) == 4 and parts[0].isr == {1}
        await manager.shutdown()
    asyncio.run(main())


def test_fenced_answer_stays_pending_and_superseded_items_are_dropped(tmp_path: Path) -> None:
    async def main() -> None:
        ctl = FakeController()
        ctl.fail_next = [ErrorCode.INVALID_UPDATE_VERSION]
        c, manager, parts = setup(tmp_path, ctl, partitions=1)
        c.clock.advance(LAG + 1)
        c.nodes[1].replicas.maybe_shrink_isr()
        await until(lambda: len(ctl.requests) == 1, "the request sent")
        await asyncio.sleep(0.05)                           # a retry would be sent by now
        assert len(ctl.requests) == 1                       # not retried: awaiting LeaderAndIsr
        assert parts[0].pending_isr is not None and parts[0].isr == {1, 2, 3}
        # no controller known: queued, retried; a LeaderAndIsr then replaces the change
        c2, manager2, parts2 = setup(tmp_path / "b", FakeController(), partitions=1, address=None)
        c2.clock.advance(LAG + 1)
        c2.nodes[1].replicas.maybe_shrink_isr()
        await asyncio.sleep(0.03)
        parts2[0].pending_isr = None                        # as a LeaderAndIsr does
        await until(lambda: manager2.pending == 0, "the superseded change dropped")
        await manager.shutdown()
        await manager2.shutdown()
    asyncio.run(main())


class RoutingPool:
    """A pool whose connection to ``down`` cannot be opened; every other address
    reaches ``ctl``."""

    def __init__(self, ctl: FakeController, down: tuple[str, int]) -> None:
        self.ctl, self.down = ctl, down
        self.asked: list[tuple[str, int]] = []

    async def get(self, host: str, port: int) -> FakeController:
        self.asked.append((host, port))
        if (host, port) == self.down:
            raise KafkaConnectionError(f"cannot connect to {host}:{port}")
        return self.ctl


def test_a_controller_out_of_reach_is_asked_through_a_peer(tmp_path: Path) -> None:
    """The leader cannot connect to the controller (a bridge partition): the ISR change
    goes through the first peer whose answer is not NOT_CONTROLLER, and is applied."""
    async def main() -> None:
        ctl = FakeController()
        controller, peer_a, peer_b = ("10.0.0.1", 9092), ("10.0.0.2", 9092), ("10.0.0.3", 9092)
        pool = RoutingPool(ctl, down=controller)
        c, manager, parts = setup(tmp_path, ctl, partitions=1, address=controller)
        manager.pool = pool
        manager.relays = lambda: [peer_a, peer_b]
        ctl.fail_next = [("top", ErrorCode.NOT_CONTROLLER)]     # peer a does not forward
        c.clock.advance(LAG + 1)
        c.nodes[1].replicas.maybe_shrink_isr()
        for _ in range(50):
            await asyncio.sleep(0.01)
            if parts[0].pending_isr is None:
                break
        assert pool.asked == [controller, peer_a, peer_b]
        assert parts[0].isr == {1} and manager.requests_relayed == 1
        await manager.shutdown()
    asyncio.run(main())


def test_no_peer_reaches_it_either_retried_after_the_backoff(tmp_path: Path) -> None:
    async def main() -> None:
        ctl = FakeController()
        controller = ("10.0.0.1", 9092)
        pool = RoutingPool(ctl, down=controller)
        c, manager, parts = setup(tmp_path, ctl, partitions=1, address=controller)
        manager.pool = pool
        manager.relays = lambda: [controller]                  # the controller is no relay
        c.clock.advance(LAG + 1)
        c.nodes[1].replicas.maybe_shrink_isr()
        await until(lambda: len(pool.asked) >= 2, "the controller asked again")   # retried
        assert set(pool.asked) == {controller} and len(pool.asked) >= 2
        assert parts[0].pending_isr is not None and not ctl.requests
        manager.relays = lambda: [("10.0.0.2", 9092)]          # a peer appears
        for _ in range(50):
            await asyncio.sleep(0.01)
            if parts[0].pending_isr is None:
                break
        assert parts[0].isr == {1} and manager.requests_relayed == 1
        await manager.shutdown()
    asyncio.run(main())


def _request(broker_id: int) -> Struct:
    s = REQ.structs
    return REQ.new(broker_id=broker_id, broker_epoch=77, topics=[s["TopicData"].new(
        topic_name="t", partitions=[s["PartitionData"].new(
            partition_index=0, leader_epoch=3, new_isr=[1, 2], partition_epoch=5)])])


def test_the_relay_forwards_one_hop_to_the_controller_it_knows() -> None:
    from broker.replication.alter_partition_manager import RELAY_CLIENT_ID, AlterPartitionRelay

    async def main() -> None:
        ctl = FakeController()
        controller = ("10.0.0.1", 9092)
        relay = AlterPartitionRelay(2, ctl, lambda: controller, lambda: 0)
        resp = await relay.forward("pybroker-controller", _request(1), 2)
        assert resp is not None and resp.error_code == 0
        assert [tuple(p.isr) for p in resp.topics[0].partitions] == [(1, 2)]
        assert len(ctl.requests) == 1 and ctl.requests[0][1].broker_id == 1
        # not again: a forwarded request, our own, or no other controller known
        assert await relay.forward(RELAY_CLIENT_ID, _request(1), 2) is None
        assert await relay.forward("pybroker-controller", _request(2), 2) is None
        assert await AlterPartitionRelay(2, ctl, lambda: controller, lambda: 2).forward(
            "pybroker-controller", _request(1), 2) is None
        assert await AlterPartitionRelay(2, ctl, lambda: None, lambda: -1).forward(
            "pybroker-controller", _request(1), 2) is None
        # the controller out of its reach too: not forwarded
        down = AlterPartitionRelay(2, RoutingPool(ctl, down=controller), lambda: controller,
                                   lambda: 0)
        assert await down.forward("pybroker-controller", _request(1), 2) is None
        assert len(ctl.requests) == 1 and relay.forwarded == 1
    asyncio.run(main())


class SilentConnection:
    """A connection open to a controller cut off by dropped packets: no answer comes;
    the request times out after its ``timeout`` as KafkaConnection's does."""

    def __init__(self) -> None:
        self.timeouts: list[float | None] = []

    def version_for(self, api_key: int, max_version: int | None = None) -> int:
        return min(3, max_version if max_version is not None else 99)

    async def request(self, api_key: int, body: Struct, version: int | None = None,
                      timeout: float | None = None) -> Struct:
        from client.errors import RequestTimedOut
        self.timeouts.append(timeout)
        await asyncio.sleep(timeout if timeout is not None else 3600)
        raise RequestTimedOut("no response", "10.0.0.1", 9092)


def test_a_silent_controller_connection_is_given_controller_timeout_then_a_peer(
        tmp_path: Path) -> None:
    async def main() -> None:
        ctl, silent = FakeController(), SilentConnection()
        controller, peer = ("10.0.0.1", 9092), ("10.0.0.2", 9092)

        class Pool:
            async def get(self, host: str, port: int) -> Any:
                return silent if (host, port) == controller else ctl

        c, manager, parts = setup(tmp_path, ctl, partitions=1, address=controller)
        manager.pool, manager.relays = Pool(), lambda: [peer]
        manager.controller_timeout = 0.05
        c.clock.advance(LAG + 1)
        c.nodes[1].replicas.maybe_shrink_isr()
        for _ in range(100):
            await asyncio.sleep(0.01)
            if parts[0].pending_isr is None:
                break
        assert silent.timeouts == [0.05]
        assert parts[0].isr == {1} and manager.requests_relayed == 1
        await manager.shutdown()
    asyncio.run(main())
