"""DescribeAcls / CreateAcls / DeleteAcls, DescribeLogDirs and AlterReplicaLogDirs
handlers at every version, through the codec both ways, against a FakeZk-backed
authorizer and a real LogManager over two temporary log dirs."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker.acl.acl_model import (AccessControlEntry, AclBinding, AclOperation, PatternType,
                                  PermissionType, ResourcePattern, ResourceType)
from broker.acl.authorizer import AclAuthorizer
from broker.context import RequestContext
from broker.dispatch import REGISTRY, load_handlers
from controller import ClusterStore
from protocol import records as R
from protocol.api_keys import ApiKey
from protocol.codec import decode, encode
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api
from tests.unit.broker.replication.fakes import FakeConnection
from storage.log_manager import LogManager
from tests.unit.controller.fake_zk import FakeZk, FakeZkServer

SECURITY_DISABLED, CLUSTER_AUTH, INVALID_REQUEST = 54, 31, 42


async def call(broker: Any, api_key: int, version: int, body: Struct) -> Struct:
    load_handlers()
    spec = api(api_key)
    wire = decode(spec.request, encode(body, version), version)
    ctx = RequestContext(header=RequestHeader(api_key, version, 1, "t"),
                         connection=FakeConnection(), broker=broker)  # type: ignore[arg-type]
    response = await REGISTRY[api_key].fn(ctx, wire)
    return decode(spec.response, encode(response, version), version)


def describe_req(name: str | None = None, pattern: int = 3) -> Struct:
    return api(ApiKey.DESCRIBE_ACLS).request.new(
        resource_type_filter=1, resource_name_filter=name, pattern_type_filter=pattern,
        principal_filter=None, host_filter=None, operation=1, permission_type=1)


def create_req(*acls: tuple[int, str, int, int, int]) -> Struct:
    spec = api(ApiKey.CREATE_ACLS).request
    return spec.new(creations=[spec.structs["AclCreation"].new(
        resource_type=rt, resource_name=name, resource_pattern_type=pt, principal="User:a",
        host="*", operation=op, permission_type=perm) for rt, name, pt, op, perm in acls])


def delete_req(name: str | None, pattern: int = 1) -> Struct:
    spec = api(ApiKey.DELETE_ACLS).request
    return spec.new(filters=[spec.structs["DeleteAclsFilter"].new(
        resource_type_filter=2, resource_name_filter=name, pattern_type_filter=pattern,
        principal_filter=None, host_filter=None, operation=1, permission_type=1)])


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_acl_apis_without_an_authorizer_are_security_disabled(version: int) -> None:
    broker = SimpleNamespace(authorizer=None)

    async def scenario() -> None:
        d = await call(broker, ApiKey.DESCRIBE_ACLS, version, describe_req())
        assert d.error_code == SECURITY_DISABLED and d.resources == []
        c = await call(broker, ApiKey.CREATE_ACLS, version, create_req((2, "t", 3, 3, 3)))
        assert [r.error_code for r in c.results] == [SECURITY_DISABLED]
        x = await call(broker, ApiKey.DELETE_ACLS, version, delete_req("t", 3))
        assert [r.error_code for r in x.filter_results] == [SECURITY_DISABLED]
    asyncio.run(scenario())


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_acl_apis_create_describe_delete(version: int) -> None:
    async def scenario() -> None:
        store = ClusterStore("fake", client=FakeZk(FakeZkServer()))
        await store.connect()
        auth = AclAuthorizer(store, (), True)
        await auth.start()
        broker = SimpleNamespace(authorizer=auth)
        c = await call(broker, ApiKey.CREATE_ACLS, version, create_req(
            (2, "t", 3, 3, 3),            # TOPIC t LITERAL READ ALLOW
            (4, "other", 3, 7, 3),        # CLUSTER must be named kafka-cluster
            (2, "", 3, 3, 3),             # empty name
            (2, "t", 3, 1, 3)))           # operation ANY is a filter value only
        assert [r.error_code for r in c.results] == [0] + [INVALID_REQUEST] * 3
        d = await call(broker, ApiKey.DESCRIBE_ACLS, version, describe_req("t"))
        assert d.error_code == 0
        assert [(r.resource_type, r.resource_name, [(a.principal, a.operation)
                                                    for a in r.acls]) for r in d.resources] \
            == [(2, "t", [("User:a", 3)])]
        if version >= 1:  # MATCH (v1+) finds the literal ACL of that name too
            m = await call(broker, ApiKey.DESCRIBE_ACLS, version, describe_req("t", 2))
            assert len(m.resources) == 1
        x = await call(broker, ApiKey.DELETE_ACLS, version, delete_req("t", 3))
        assert [(a.resource_name, a.operation, a.error_code)
                for a in x.filter_results[0].matching_acls] == [("t", 3, 0)]
        d = await call(broker, ApiKey.DESCRIBE_ACLS, version, describe_req(None))
        assert d.resources == []
        # a DENY ALTER on the cluster for everyone: ACL changes are refused
        await auth.create_acls([AclBinding(
            ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),
            AccessControlEntry("User:*", "*", AclOperation.ALTER, PermissionType.DENY))])
        c = await call(broker, ApiKey.CREATE_ACLS, version, create_req((2, "t", 3, 3, 3)))
        assert [r.error_code for r in c.results] == [CLUSTER_AUTH]
        x = await call(broker, ApiKey.DELETE_ACLS, version, delete_req(None))
        assert [r.error_code for r in x.filter_results] == [CLUSTER_AUTH]
        auth.close()
        await store.close()
    asyncio.run(scenario())


# ---- log dirs ---------------------------------------------------------------------------------

def log_broker(tmp_path: Path) -> tuple[Any, LogManager]:
    logs = LogManager([str(tmp_path / "a"), str(tmp_path / "b")])
    logs.startup(broker_id=1, cluster_id="c")
    for p in range(3):
        logs.get_or_create_log("t", p).append(R.build_batch([(b"k", b"v" * 10, 1)]))
    return SimpleNamespace(logs=logs, authorizer=None), logs


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_describe_log_dirs(tmp_path: Path, version: int) -> None:
    broker, logs = log_broker(tmp_path)
    spec = api(ApiKey.DESCRIBE_LOG_DIRS).request
    r = asyncio.run(call(broker, ApiKey.DESCRIBE_LOG_DIRS, version, spec.new(topics=None)))
    assert sorted(x.log_dir for x in r.results) == sorted(logs.log_dirs)
    seen = {}
    for res in r.results:
        assert res.error_code == 0
        assert (res.total_bytes > 0 and res.usable_bytes >= 0) if version >= 4 \
            else res.total_bytes == -1
        for t in res.topics:
            for p in t.partitions:
                seen[(t.name, p.partition_index)] = (res.log_dir, p.partition_size)
                assert p.offset_lag == 0 and p.is_future_key is False
    assert seen == {("t", p): (logs.dir_of("t", p), logs.get_log("t", p).size_in_bytes)
                    for p in range(3)}
    only = spec.new(topics=[spec.structs["DescribableLogDirTopic"].new(topic="t", partitions=[1])])
    r = asyncio.run(call(broker, ApiKey.DESCRIBE_LOG_DIRS, version, only))
    assert [(t.name, [p.partition_index for p in t.partitions])
            for res in r.results for t in res.topics] == [("t", [1])]
    logs.shutdown()


@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_replica_log_dirs(tmp_path: Path, version: int) -> None:
    broker, logs = log_broker(tmp_path)
    spec = api(ApiKey.ALTER_REPLICA_LOG_DIRS).request
    here, there = logs.dir_of("t", 0), [d for d in logs.log_dirs if d != logs.dir_of("t", 0)][0]

    def req(path: str, *parts: int, topic: str = "t") -> Struct:
        return spec.new(dirs=[spec.structs["AlterReplicaLogDir"].new(path=path, topics=[
            spec.structs["AlterReplicaLogDirTopic"].new(name=topic, partitions=list(parts))])])

    def errors(body: Struct) -> dict[tuple[str, int], int]:
        r = asyncio.run(call(broker, ApiKey.ALTER_REPLICA_LOG_DIRS, version, body))
        return {(t.topic_name, p.partition_index): p.error_code
                for t in r.results for p in t.partitions}

    assert errors(req(here, 0)) == {("t", 0): 0}                # already there: no-op
    assert logs.dir_of("t", 0) == here
    assert errors(req(there, 0)) == {("t", 0): 0}               # moved
    assert logs.dir_of("t", 0) == there and os.path.isdir(os.path.join(there, "t-0"))
    assert not os.path.exists(os.path.join(here, "t-0"))
    assert errors(req(str(tmp_path / "nope"), 1)) == {("t", 1): ErrorCode.LOG_DIR_NOT_FOUND}
    assert errors(req(there, 7)) == {("t", 7): ErrorCode.REPLICA_NOT_AVAILABLE}
    assert errors(req(there, 0, topic="x" * 250)) == {
        ("x" * 250, 0): ErrorCode.INVALID_TOPIC_EXCEPTION}
    logs.shutdown()
