"""The DescribeWhy handler (broker/handlers/describe_why.py) through the codec both
ways: ACLs as DescribeConfigs asks them, the per-resource errors, the resource cap,
and a group answered from the coordinator's history."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from broker.acl.acl_model import (AccessControlEntry, AclBinding, AclOperation, PatternType,
                                  PermissionType, ResourcePattern, ResourceType)
from broker.acl.authorizer import AclAuthorizer
from broker.handlers.describe_why import MAX_RESOURCES
from broker.why.broker_status import ZkSessionWatch
from controller import ClusterStore
from protocol.api_keys import PybrokerApiKey
from protocol.errors import ErrorCode
from protocol.spec import api

from tests.unit.coordinator.group.classic.test_group_coordinator import MemoryLog, loaded, make, \
    stable_group
from tests.unit.broker.replication.fakes import FakeClock
from tests.unit.broker.test_acl_log_dir_handlers import call
from tests.unit.controller.fake_zk import FakeZk, FakeZkServer

KEY = PybrokerApiKey.DESCRIBE_WHY
REQ = api(KEY).request


def request(*resources: tuple[int, str, int]) -> Any:
    return REQ.new(resources=[REQ.structs["WhyResource"].new(
        resource_type=t, resource_name=n, partition=p) for t, n, p in resources])


def broker(coordinator: Any, authorizer: Any = None) -> Any:
    def no_partitions(topic: str) -> Any:
        raise KeyError(topic)
    return SimpleNamespace(
        broker_id=7, authorizer=authorizer, group_coordinator=coordinator,
        replicas=SimpleNamespace(partition=lambda t, p: None),
        metadata=SimpleNamespace(partitions=no_partitions, controller_id=3),
        controller=SimpleNamespace(is_active=False, active_controller_id=3),
        zk_session=ZkSessionWatch(monotonic=lambda: 12.5))  # never attached: NOT_STARTED


def test_answers_per_resource_in_order() -> None:
    async def body() -> None:
        clock = FakeClock()
        c = make(clock)
        await loaded(c)
        await stable_group(c, clock, 2)
        r = await call(broker(c), KEY, 0, request(
            (1, "", -1), (1, "8", -1), (2, "t", 0), (3, "g", -1), (5, "x", -1)))
        b, other, part, group, bad = r.results
        assert b.error_code == 0 and b.partition_why is None and b.group_why is None
        assert (b.broker_status.broker_id, b.broker_status.controller_id,
                b.broker_status.is_controller) == (7, 3, False)
        assert (b.broker_status.zk_session_state, b.broker_status.uptime_ms) == ("NOT_STARTED", 0)
        assert other.error_code == ErrorCode.INVALID_REQUEST and "broker 7" in other.error_message
        assert part.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert (part.resource_name, part.partition) == ("t", 0)
        assert group.error_code == 0 and group.group_why.state == "Stable"
        assert [e.kind for e in group.group_why.rebalances] == ["new-group", "join"]
        assert bad.error_code == ErrorCode.INVALID_REQUEST

        log = MemoryLog()
        log.leader[0] = None                 # we do not lead the group's partition
        r = await call(broker(make(clock, log)), KEY, 0, request((3, "g", -1)))
        assert r.results[0].error_code == ErrorCode.NOT_COORDINATOR

        many = request(*[(1, "", -1)] * (MAX_RESOURCES + 1))
        r = await call(broker(c), KEY, 0, many)
        [only] = r.results
        assert only.error_code == ErrorCode.INVALID_REQUEST and "at most" in only.error_message
    asyncio.run(body())


def test_acls_as_describe_configs() -> None:
    async def body() -> None:
        store = ClusterStore("fake", client=FakeZk(FakeZkServer()))
        await store.connect()
        auth = AclAuthorizer(store, (), True)
        await auth.start()
        deny = [(ResourceType.CLUSTER, "kafka-cluster"), (ResourceType.TOPIC, "secret"),
                (ResourceType.GROUP, "hidden")]
        await auth.create_acls([AclBinding(
            ResourcePattern(rt, name, PatternType.LITERAL),
            AccessControlEntry("User:*", "*", AclOperation.DESCRIBE, PermissionType.DENY))
            for rt, name in deny])
        clock = FakeClock()
        c = make(clock)
        await loaded(c, "open")
        r = await call(broker(c, auth), KEY, 0, request(
            (1, "", -1), (2, "secret", 0), (3, "hidden", -1), (3, "open", -1)))
        assert [x.error_code for x in r.results] == [
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.NONE]
        assert r.results[3].group_why.state == "Dead"
        auth.close()
        await store.close()
    asyncio.run(body())
