"""SCRAM credentials in ZooKeeper (broker/security/scram_credentials.py) and the
Describe/AlterUserScramCredentials handlers: Kafka's znode JSON and names, the
ZkAdminManager rules, conditional writes with change notifications, over FakeZk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest

from broker.dispatch import REGISTRY, load_handlers
from broker.context import RequestContext
from broker.security.scram_credentials import (
    ALTERED_TWICE, DELETE_MISSING, EMPTY_USER, TOO_FEW_ITERATIONS, TOO_MANY_ITERATIONS,
    UNKNOWN_MECHANISM, CredentialInfo, Deletion, ScramCredentialStore, Upsertion,
    apply_alterations, decode_user_config, desanitize, encode_change, encode_user_config,
    sanitize, screen, user_path)
from controller import ClusterStore
from protocol.api_keys import ApiKey
from protocol.codec import decode, encode
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.scram import (credential_from_salted, format_credential, make_credential,
                            parse_credential, salted_password)
from protocol.spec import api
from tests.unit.controller.fake_zk import FakeZk, FakeZkServer

SHA256, SHA512 = "SCRAM-SHA-256", "SCRAM-SHA-512"
T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, 20)
    return asyncio.run(bounded())


def upsert(user: str, mechanism: str = SHA256, password: str = "secret", iterations: int = 4096,
           salt: bytes = b"salty") -> Upsertion:
    return Upsertion(user, mechanism, iterations, salt,
                     salted_password(mechanism, password, salt, iterations)
                     if mechanism in (SHA256, SHA512) else b"x")


def verifies(text: str, mechanism: str, password: str) -> bool:
    """Whether a stored credential string is the one ``password`` makes."""
    c = parse_credential(text)
    return credential_from_salted(
        mechanism, salted_password(mechanism, password, c.salt, c.iterations),
        c.salt, c.iterations) == c


# ---- names and JSON ------------------------------------------------------------------------

@pytest.mark.parametrize("name, znode", [
    ("alice", "alice"), ("a b", "a%20b"), ("a*b", "a%2Ab"), ("a/b", "a%2Fb"), ("a+b", "a%2Bb"),
    ("x.y-z_1", "x.y-z_1"), ("tilde~", "tilde%7E"), ("ü", "%C3%BC"), ("User:CN=x,O=y",
                                                                    "User%3ACN%3Dx%2CO%3Dy"),
])
def test_sanitize_is_kafkas_url_encoding(name: str, znode: str) -> None:
    assert sanitize(name) == znode
    assert desanitize(znode) == name
    assert user_path(name) == f"/config/users/{znode}"


def test_desanitize_reads_java_plus_as_space() -> None:
    assert desanitize("a+b") == "a b"


def test_user_config_json_is_kafkas() -> None:
    config = {SHA256: "salt=c2FsdA==,stored_key=AA==,server_key=AQ==,iterations=4096",
              "producer_byte_rate": "1024"}
    data = encode_user_config(config)
    assert data == (b'{"version":1,"config":{"SCRAM-SHA-256":"salt=c2FsdA==,stored_key=AA==,'
                    b'server_key=AQ==,iterations=4096","producer_byte_rate":"1024"}}')
    assert decode_user_config(data) == config
    assert decode_user_config(b"") == {} and decode_user_config(None) == {}
    assert decode_user_config(b'{"version":1}') == {}
    assert decode_user_config(b'{"version":1,"config":{}}') == {}
    with pytest.raises(ValueError):
        decode_user_config(b"not json")


def test_change_notification_names_the_sanitized_user() -> None:
    assert json.loads(encode_change("a b")) == {"version": 2, "entity_path": "users/a%20b"}
    assert encode_change("alice") == b'{"version":2,"entity_path":"users/alice"}'


# ---- the rules (ZkAdminManager.alterUserScramCredentials) ----------------------------------

def test_screen_refuses_as_kafka() -> None:
    refused, remaining = screen(
        [upsert(""), upsert("few", iterations=4095), upsert("many", iterations=16385),
         upsert("odd", mechanism="UNKNOWN(3)"), upsert("ok"), upsert("twice"),
         upsert("twice"), upsert("both"), upsert("mixed", SHA256)],
        [Deletion("both", SHA256), Deletion("bad-del", "UNKNOWN(0)"), Deletion("mixed", SHA512)])
    assert refused == {
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_USER),
        "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW_ITERATIONS),
        "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_MANY_ITERATIONS),
        "odd": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM),
        "bad-del": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM),
        "twice": (ErrorCode.DUPLICATE_RESOURCE, ALTERED_TWICE),
        "both": (ErrorCode.DUPLICATE_RESOURCE, ALTERED_TWICE),
    }
    # one mechanism upserted and the other deleted is fine
    assert remaining == ["ok", "mixed"]


def test_screen_upsertion_problem_names_the_error_over_a_deletion_problem() -> None:
    refused, remaining = screen([upsert("u", iterations=10)], [Deletion("u", "UNKNOWN(9)")])
    assert refused == {"u": (ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW_ITERATIONS)}
    assert remaining == []


def test_screen_a_bad_alteration_refuses_the_users_other_ones() -> None:
    refused, remaining = screen([upsert("u", SHA256), upsert("u", SHA512, iterations=1)], [])
    assert refused == {"u": (ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW_ITERATIONS)}
    assert remaining == []


def test_apply_keeps_other_keys_and_derives_the_keys_from_the_salted_password() -> None:
    config = {"consumer_byte_rate": "5", SHA512: "salt=AA==,stored_key=AA==,server_key=AA==,"
                                                 "iterations=4096"}
    new = apply_alterations(config, [upsert("u", SHA256, "pw", 8192)], [Deletion("u", SHA512)])
    assert isinstance(new, dict)
    assert set(new) == {"consumer_byte_rate", SHA256}
    assert new["consumer_byte_rate"] == "5"
    assert verifies(new[SHA256], SHA256, "pw") and not verifies(new[SHA256], SHA256, "pw2")
    assert parse_credential(new[SHA256]).iterations == 8192
    assert parse_credential(new[SHA256]).salt == b"salty"
    assert config[SHA512]  # the input is not modified
    assert apply_alterations({}, [], [Deletion("u", SHA256)]) == DELETE_MISSING
    with pytest.raises(ValueError):
        apply_alterations({}, [Upsertion("u", SHA256, 4096, b"s", b"")], [])


# ---- the store over FakeZk -------------------------------------------------------------------

async def connected(server: FakeZkServer) -> ScramCredentialStore:
    cluster = ClusterStore("fake", client=FakeZk(server))
    await cluster.connect()
    return ScramCredentialStore(cluster)


def stored(server: FakeZkServer, user: str) -> Any:
    node = server.nodes.get(user_path(user))
    return None if node is None else json.loads(node.data)


def changes(server: FakeZkServer) -> list[Any]:
    return [json.loads(server.nodes[f"/config/changes/{c}"].data)
            for c in server.children_of("/config/changes")]


def test_alter_writes_kafkas_znode_and_a_change_notification() -> None:
    server = FakeZkServer()

    async def scenario() -> None:
        store = await connected(server)
        results = await store.alter([upsert("alice", SHA512, "alice-secret"),
                                     upsert("alice", SHA256, "x", 8192), upsert("a b")], [])
        assert results == {"alice": (ErrorCode.NONE, None), "a b": (ErrorCode.NONE, None)}
        znode = stored(server, "alice")
        assert znode["version"] == 1 and set(znode["config"]) == {SHA256, SHA512}
        assert verifies(znode["config"][SHA512], SHA512, "alice-secret")
        assert verifies(znode["config"][SHA256], SHA256, "x")
        assert stored(server, "a b") is not None and "/config/users/a%20b" in server.nodes
        assert changes(server) == [{"version": 2, "entity_path": "users/alice"},
                                   {"version": 2, "entity_path": "users/a%20b"}]
        names = server.children_of("/config/changes")
        assert all(n.startswith("config_change_") and len(n) == 24 for n in names)

        got = await store.get("alice", SHA256)
        assert got is not None and got.iterations == 8192
        assert got == parse_credential(znode["config"][SHA256])
        assert await store.get("alice", "SCRAM-SHA-1") is None
        assert await store.get("nobody", SHA256) is None

        results = await store.alter([], [Deletion("alice", SHA512), Deletion("bob", SHA256)])
        assert results == {"alice": (ErrorCode.NONE, None),
                           "bob": (ErrorCode.RESOURCE_NOT_FOUND, DELETE_MISSING)}
        assert set(stored(server, "alice")["config"]) == {SHA256}
        assert stored(server, "bob") is None
        assert await store.get("alice", SHA512) is None
    run(scenario())


def test_alter_keeps_other_keys_of_the_user_config() -> None:
    server = FakeZkServer()

    async def scenario() -> None:
        store = await connected(server)
        await store.zk.create(user_path("carol"),  # type: ignore[attr-defined]
                              b'{"version":1,"config":{"producer_byte_rate":"1024"}}')
        assert await store.alter([upsert("carol")], []) == {"carol": (ErrorCode.NONE, None)}
        config = stored(server, "carol")["config"]
        assert config["producer_byte_rate"] == "1024" and SHA256 in config
        assert await store.alter([], [Deletion("carol", SHA256)]) == {
            "carol": (ErrorCode.NONE, None)}
        # the znode stays, as Kafka's changeConfigs leaves it
        assert stored(server, "carol") == {"version": 1, "config": {"producer_byte_rate": "1024"}}
        # a user with only quotas has no SCRAM credential to describe
        [d] = await store.describe(["carol"])
        assert d.error == ErrorCode.RESOURCE_NOT_FOUND
    run(scenario())


class RacingZk:
    """Wraps a store's ZooKeeper access: another writer changes the znode between our
    read and our conditional write, ``races`` times."""

    def __init__(self, inner: Any, races: int) -> None:
        self.inner = inner
        self.races = races
        self.attempts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def _race(self, path: str) -> None:
        self.attempts += 1
        if self.races > 0:
            self.races -= 1
            got = await self.inner.get_data(path)
            config = decode_user_config(got[0]) if got else {}
            config[f"other_{self.races}"] = "1"
            if got is None:
                await self.inner.create(path, encode_user_config(config))
            else:
                await self.inner.set_data(path, encode_user_config(config), got[1])

    async def create(self, path: str, data: bytes) -> bool:
        await self._race(path)
        return bool(await self.inner.create(path, data))

    async def set_data(self, path: str, data: bytes, version: int) -> int | None:
        await self._race(path)
        return await self.inner.set_data(path, data, version)  # type: ignore[no-any-return]


def test_alter_retries_when_another_writer_got_there_first() -> None:
    server = FakeZkServer()

    async def scenario() -> None:
        store = await connected(server)
        racing = RacingZk(store.zk, races=2)
        store.zk = racing
        assert await store.alter([upsert("dave")], []) == {"dave": (ErrorCode.NONE, None)}
        assert racing.attempts == 3
        config = stored(server, "dave")["config"]
        assert set(config) == {"other_1", "other_0", SHA256}   # nothing of theirs lost
        assert changes(server) == [{"version": 2, "entity_path": "users/dave"}]

        store.zk = RacingZk(racing.inner, races=100)
        code, message = (await store.alter([upsert("dave", SHA512)], []))["dave"]
        assert code == ErrorCode.UNKNOWN_SERVER_ERROR and "gave up" in str(message)
    run(scenario())


def test_alter_reports_a_zookeeper_failure_per_user() -> None:
    server = FakeZkServer()

    async def scenario() -> None:
        store = await connected(server)

        async def broken(path: str) -> Any:
            raise ConnectionError("zookeeper is away")
        real = store.zk
        store.zk = SimpleNamespace(get_data=broken)
        results = await store.alter([upsert("erin")], [])
        assert results == {"erin": (ErrorCode.UNKNOWN_SERVER_ERROR, "zookeeper is away")}
        [d] = await store.describe(["erin"])
        assert d.error == ErrorCode.UNKNOWN_SERVER_ERROR
        with pytest.raises(ConnectionError):   # read each time, never from a cache
            await store.get("erin", SHA256)
        store.zk = real
    run(scenario())


def test_describe_follows_kafka() -> None:
    server = FakeZkServer()

    async def scenario() -> None:
        store = await connected(server)
        await store.alter([upsert("zed", SHA512), upsert("zed", SHA256, iterations=8192),
                           upsert("amy"), upsert("a b", SHA512)], [])
        await store.zk.create(user_path("quota-only"),  # type: ignore[attr-defined]
                              b'{"version":1,"config":{"producer_byte_rate":"1"}}')
        everyone = await store.describe(None)
        assert [d.user for d in everyone] == ["a b", "amy", "zed"]
        assert await store.describe([]) == everyone
        assert everyone[2].credentials == (CredentialInfo(SHA256, 8192),
                                           CredentialInfo(SHA512, 4096))
        named = await store.describe(["zed", "", "ghost", "amy", "amy", "quota-only"])
        assert [(d.user, d.error) for d in named] == [
            ("zed", ErrorCode.NONE), ("", ErrorCode.RESOURCE_NOT_FOUND),
            ("ghost", ErrorCode.RESOURCE_NOT_FOUND), ("amy", ErrorCode.DUPLICATE_RESOURCE),
            ("quota-only", ErrorCode.RESOURCE_NOT_FOUND)]
        assert named[1].message == EMPTY_USER
        assert named[2].message == "Attempt to describe a user credential that does not " \
                                   "exist: ghost"
    run(scenario())


def test_unreadable_credential_fails_lookup_and_describe_of_that_user() -> None:
    server = FakeZkServer()

    async def scenario() -> None:
        store = await connected(server)
        good = format_credential(make_credential(SHA512, "pw"))
        await store.zk.create(user_path("bad"), encode_user_config(  # type: ignore[attr-defined]
            {SHA256: "salt=???,stored_key=AA==,server_key=AA==,iterations=4096", SHA512: good}))
        assert await store.get("bad", SHA256) is None
        assert await store.get("bad", SHA512) == parse_credential(good)
        [d] = await store.describe(["bad"])
        assert d.error == ErrorCode.UNKNOWN_SERVER_ERROR
    run(scenario())


# ---- the handlers ----------------------------------------------------------------------------

class Authorizer:
    def __init__(self, allow: bool) -> None:
        self.allow = allow
        self.asked: list[tuple[Any, ...]] = []

    def authorize(self, principal: str, host: str, op: Any, rtype: Any, name: str) -> bool:
        self.asked.append((op.name, rtype.name, name))
        return self.allow


def call(store: Any, api_key: int, body: Struct, authorizer: Any = None) -> Struct:
    """Through the wire form (v0) both ways, as test_admin_handlers does."""
    load_handlers()
    spec = api(api_key)
    broker = SimpleNamespace(authorizer=authorizer, scram_credentials=store)
    ctx = RequestContext(header=RequestHeader(api_key, 0, 1, "test"),
                         connection=SimpleNamespace(peer="127.0.0.1:5000", principal=None),  # type: ignore[arg-type]
                         broker=broker)  # type: ignore[arg-type]

    async def handle() -> Any:
        return await REGISTRY[api_key].fn(ctx, decode(spec.request, encode(body, 0), 0))
    response = run(handle())
    return decode(spec.response, encode(response, 0), 0)


def alter_body(ups: list[tuple[str, int, int]], dels: list[tuple[str, int]]) -> Struct:
    spec = api(ApiKey.ALTER_USER_SCRAM_CREDENTIALS).request
    s = spec.structs
    return spec.new(
        upsertions=[s["ScramCredentialUpsertion"].new(
            name=n, mechanism=m, iterations=i, salt=b"salt",
            salted_password=salted_password(SHA256 if m == 1 else SHA512, "pw", b"salt", i)
            if m in (1, 2) and 4096 <= i <= 16384 else b"x") for n, m, i in ups],
        deletions=[s["ScramCredentialDeletion"].new(name=n, mechanism=m) for n, m in dels])


def describe_body(users: list[str] | None) -> Struct:
    spec = api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS).request
    return spec.new(users=None if users is None else
                    [spec.structs["UserName"].new(name=u) for u in users])


def by_user(resp: Struct) -> dict[str, int]:
    return {r.user: r.error_code for r in resp.results}


def test_handlers_alter_then_describe() -> None:
    server = FakeZkServer()
    store = run(connected(server))
    resp = call(store, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, alter_body(
        [("alice", 2, 4096), ("alice", 1, 8192), ("bob", 0, 4096), ("carl", 3, 4096),
         ("dan", 1, 100), ("", 1, 4096), ("eve", 1, 4096)],
        [("eve", 1), ("fay", 2)]))
    assert by_user(resp) == {
        "alice": 0, "bob": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        "carl": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "dan": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "": ErrorCode.UNACCEPTABLE_CREDENTIAL, "eve": ErrorCode.DUPLICATE_RESOURCE,
        "fay": ErrorCode.RESOURCE_NOT_FOUND}
    assert verifies(stored(server, "alice")["config"][SHA512], SHA512, "pw")

    resp = call(store, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, describe_body(None))
    assert resp.error_code == 0
    [alice] = resp.results
    assert alice.user == "alice" and alice.error_code == 0
    assert [(c.mechanism, c.iterations) for c in alice.credential_infos] == [(1, 8192), (2, 4096)]
    resp = call(store, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, describe_body(["bob", "alice"]))
    assert by_user(resp) == {"bob": ErrorCode.RESOURCE_NOT_FOUND, "alice": 0}


def test_handlers_need_the_cluster_permission() -> None:
    store = run(connected(FakeZkServer()))
    deny = Authorizer(False)
    resp = call(store, ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                alter_body([("b", 1, 4096), ("a", 2, 4096)], [("b", 2)]), deny)
    assert [(r.user, r.error_code) for r in resp.results] == [
        ("a", ErrorCode.CLUSTER_AUTHORIZATION_FAILED), ("b", ErrorCode.CLUSTER_AUTHORIZATION_FAILED)]
    assert deny.asked == [("ALTER", "CLUSTER", "kafka-cluster")]
    resp = call(store, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, describe_body(["a", "b"]), deny)
    assert resp.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert [r.error_code for r in resp.results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED] * 2
    assert deny.asked[-1] == ("DESCRIBE", "CLUSTER", "kafka-cluster")
    allow = Authorizer(True)
    resp = call(store, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, alter_body([("a", 1, 4096)], []),
                allow)
    assert by_user(resp) == {"a": 0}


def test_describe_handler_answers_a_zookeeper_failure_at_the_top() -> None:
    async def broken(path: str) -> list[str]:
        raise ConnectionError("zookeeper is away")
    store = ScramCredentialStore(SimpleNamespace(children=broken))  # type: ignore[arg-type]
    resp = call(store, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, describe_body(None))
    assert resp.error_code == ErrorCode.UNKNOWN_SERVER_ERROR and resp.results == []

