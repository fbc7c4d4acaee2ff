"""broker/quotas/quota_store.py, admin_rules.py and client_quotas.py over FakeZk: Kafka's
znodes and change notifications, SCRAM keys and quota keys kept by each other's
writes, the AlterClientQuotas / DescribeClientQuotas rules, and changes applied from
/config/changes without a restart (the watch shared with topic configs)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest

from broker.quotas.admin_rules import (CLIENT_ID, USER, Component, QuotaFilter,
                                       QuotaRequestError, entity_parts, parse_entity, parse_ops)
from broker.quotas.client_quota_manager import DEFAULT, QuotaEntity
from broker.quotas.client_quotas import ClientQuotas
from broker.quotas.quota_store import QuotaStore, parse_entity_path, quota_values
from broker.security.scram_credentials import ScramCredentialStore, Upsertion
from controller import ClusterStore
from controller.zk import _config_change_entity
from protocol.errors import ErrorCode
from tests.unit.controller.fake_zk import FakeZk, FakeZkServer

T = TypeVar("T")
CONFIG = SimpleNamespace(quota_window_num=11, quota_window_size_seconds=1)


def run(coro: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, 20)
    return asyncio.run(bounded())


async def connected(server: FakeZkServer) -> ClusterStore:
    cluster = ClusterStore("fake", client=FakeZk(server))
    await cluster.connect()
    return cluster


def znode(server: FakeZkServer, path: str) -> Any:
    return json.loads(server.nodes[path].data)


def changes(server: FakeZkServer) -> list[str]:
    return [json.loads(server.nodes[f"/config/changes/{c}"].data)["entity_path"]
            for c in server.children_of("/config/changes")]


# ---- paths and notifications --------------------------------------------------------------

@pytest.mark.parametrize("path, entity", [
    ("users/alice", QuotaEntity("alice", None)),
    ("clients/<default>", QuotaEntity(None, DEFAULT)),
    ("users/<default>/clients/app", QuotaEntity(DEFAULT, "app")),
    ("topics/t", None), ("brokers/1", None), ("users/a/clients", None), ("users/", None),
])
def test_entity_paths(path: str, entity: QuotaEntity | None) -> None:
    assert parse_entity_path(path) == entity
    if entity is not None:
        assert entity.path == path


def test_change_notifications_name_their_entity() -> None:
    assert _config_change_entity(b'{"version":2,"entity_path":"users/a/clients/b"}') \
        == "users/a/clients/b"
    assert _config_change_entity(b'{"version":1,"entity_type":"clients","entity_name":"c"}') \
        == "clients/c"
    assert _config_change_entity(b"not json") is None


def test_quota_values_skip_other_keys_and_bad_numbers() -> None:
    assert quota_values({"producer_byte_rate": "1024", "SCRAM-SHA-256": "salt=...",
                         "consumer_byte_rate": "fast", "request_percentage": "12.5"}) \
        == {"producer_byte_rate": 1024.0, "request_percentage": 12.5}


# ---- the store -----------------------------------------------------------------------------

def test_alter_writes_kafkas_znodes_and_notifications() -> None:
    server = FakeZkServer()

    async def scenario() -> None:
        store = QuotaStore(await connected(server))
        await store.alter(QuotaEntity(None, "app"), {"producer_byte_rate": "1048576"})
        await store.alter(QuotaEntity("a%20b", DEFAULT), {"consumer_byte_rate": "2048"})
        await store.alter(QuotaEntity(None, "app"), {"producer_byte_rate": None,
                                                      "request_percentage": "50.0"})
        assert await store.read_all() == {
            QuotaEntity(None, "app"): {"request_percentage": 50.0},
            QuotaEntity("a%20b", DEFAULT): {"consumer_byte_rate": 2048.0}}
    run(scenario())
    assert znode(server, "/config/clients/app") == {
        "version": 1, "config": {"request_percentage": "50.0"}}
    assert znode(server, "/config/users/a%20b/clients/<default>")["config"] == {
        "consumer_byte_rate": "2048"}
    assert changes(server) == ["clients/app", "users/a%20b/clients/<default>", "clients/app"]


def test_quota_and_scram_writes_keep_each_others_keys() -> None:
    server = FakeZkServer()

    async def scenario() -> None:
        cluster = await connected(server)
        scram, quotas = ScramCredentialStore(cluster), QuotaStore(cluster)
        await scram.alter([Upsertion("alice", "SCRAM-SHA-256", 4096, b"salt", b"x" * 32)], [])
        await quotas.alter(QuotaEntity("alice", None), {"producer_byte_rate": "1024"})
        await scram.alter([Upsertion("alice", "SCRAM-SHA-512", 4096, b"salt", b"y" * 64)], [])
        await quotas.alter(QuotaEntity("alice", None), {"consumer_byte_rate": "2048"})
    run(scenario())
    config = znode(server, "/config/users/alice")["config"]
    assert set(config) == {"SCRAM-SHA-256", "SCRAM-SHA-512", "producer_byte_rate",
                           "consumer_byte_rate"}


# ---- AlterClientQuotas / DescribeClientQuotas rules ------------------------------------------

def test_parse_entity() -> None:
    assert parse_entity([(USER, "a b"), (CLIENT_ID, None)]) == QuotaEntity("a%20b", DEFAULT)
    assert entity_parts(QuotaEntity("a%20b", DEFAULT)) == [(USER, "a b"), (CLIENT_ID, None)]


@pytest.mark.parametrize("parts, message", [
    ([], "Invalid empty client quota entity"),
    ([("group", "g")], "Unhandled client quota entity type: group"),
    ([(USER, "a"), (USER, "b")], "Duplicate entity type user"),
    ([(CLIENT_ID, "")], "Empty client-id not supported"),
    ([("ip", "1.2.3.4")], "IP quotas"),
])
def test_parse_entity_refuses(parts: list[tuple[str, str | None]], message: str) -> None:
    with pytest.raises(QuotaRequestError, match=message) as e:
        parse_entity(parts)
    assert e.value.code == ErrorCode.INVALID_REQUEST


def test_parse_ops() -> None:
    assert parse_ops([("producer_byte_rate", 1024.0000001, False),
                      ("request_percentage", 12.5, False),
                      ("consumer_byte_rate", 0.0, True)]) == {
        "producer_byte_rate": "1024", "request_percentage": "12.5", "consumer_byte_rate": None}
    with pytest.raises(QuotaRequestError, match="must be a LONG value"):
        parse_ops([("producer_byte_rate", 1024.5, False)])
    with pytest.raises(QuotaRequestError, match="Invalid configuration key SCRAM-SHA-256"):
        parse_ops([("SCRAM-SHA-256", 1.0, False)])
    with pytest.raises(QuotaRequestError, match="non-negative"):
        parse_ops([("consumer_byte_rate", -1.0, False)])


ALL = [QuotaEntity("alice", None), QuotaEntity(DEFAULT, None), QuotaEntity(None, "app"),
       QuotaEntity(None, DEFAULT), QuotaEntity("alice", "app"), QuotaEntity(DEFAULT, DEFAULT)]


@pytest.mark.parametrize("components, strict, expected", [
    ([], False, ALL),
    ([], True, []),
    ([Component(USER, 0, "alice")], True, [QuotaEntity("alice", None)]),
    ([Component(USER, 0, "alice")], False, [QuotaEntity("alice", None),
                                            QuotaEntity("alice", "app")]),
    ([Component(USER, 1, None)], True, [QuotaEntity(DEFAULT, None)]),
    ([Component(USER, 2, None)], True, [QuotaEntity("alice", None), QuotaEntity(DEFAULT, None)]),
    ([Component(CLIENT_ID, 2, None)], True, [QuotaEntity(None, "app"), QuotaEntity(None, DEFAULT)]),
    ([Component(USER, 2, None), Component(CLIENT_ID, 1, None)], True,
     [QuotaEntity(DEFAULT, DEFAULT)]),
    ([Component("ip", 2, None)], False, []),
])
def test_filter_matches_as_kafka(components: list[Component], strict: bool,
                                 expected: list[QuotaEntity]) -> None:
    f = QuotaFilter(components, strict)
    assert [e for e in ALL if f.matches(e)] == expected


@pytest.mark.parametrize("components, code, message", [
    ([Component(USER, 0, None)], ErrorCode.INVALID_REQUEST, "MATCH_TYPE_EXACT"),
    ([Component(USER, 1, "x")], ErrorCode.INVALID_REQUEST, "MATCH_TYPE_DEFAULT"),
    ([Component(USER, 2, "x")], ErrorCode.INVALID_REQUEST, "MATCH_TYPE_SPECIFIED"),
    ([Component(USER, 7, None)], ErrorCode.INVALID_REQUEST, "Unexpected match type: 7"),
    ([Component("", 2, None)], ErrorCode.INVALID_REQUEST, "empty filter component"),
    ([Component("group", 2, None)], ErrorCode.UNSUPPORTED_VERSION, "Custom entity type 'group'"),
    ([Component(CLIENT_ID, 2, None), Component(CLIENT_ID, 1, None)], ErrorCode.INVALID_REQUEST,
     "Duplicate client filter component entity type"),
    ([Component("ip", 2, None), Component(USER, 2, None)], ErrorCode.INVALID_REQUEST,
     "IP filter component should not be used"),
])
def test_filter_refuses_as_kafka(components: list[Component], code: ErrorCode,
                                 message: str) -> None:
    with pytest.raises(QuotaRequestError, match=message) as e:
        QuotaFilter(components, True)
    assert e.value.code == code


# ---- ClientQuotas: loaded at start, kept current from /config/changes -------------------------

def test_quotas_load_and_follow_changes_without_restart() -> None:
    server = FakeZkServer()

    async def scenario() -> None:
        cluster = await connected(server)
        store = QuotaStore(cluster)
        await store.alter(QuotaEntity(None, "app"), {"producer_byte_rate": "1000"})
        quotas = ClientQuotas(CONFIG, cluster)       # type: ignore[arg-type]
        topics: list[str] = []
        cancel = await quotas.start(cluster)
        cluster.watch_config_changes(topics.append)  # a second subscriber, same watch
        assert quotas.produce.quota_for(None, "app") == 1000
        await cluster.create_sequential(      # what set_topic_configs writes after the config
            "/config/changes/config_change_", b'{"version":2,"entity_path":"topics/t"}')
        await store.alter(QuotaEntity(DEFAULT, None), {"consumer_byte_rate": "5"})
        await store.alter(QuotaEntity(None, "app"), {"producer_byte_rate": None})
        for _ in range(100):
            if (quotas.fetch.quota_for("User:x", "y") == 5
                    and quotas.produce.quota_for(None, "app") is None and topics):
                break
            await asyncio.sleep(0.02)
        assert quotas.fetch.quota_for("User:x", "y") == 5
        assert quotas.produce.quota_for(None, "app") is None
        assert topics == ["t"]
        cancel()
    run(scenario())
