"""The ACL authorizer: rule evaluation (Kafka's AclAuthorizer.authorizeAction),
binding filters, and the ZooKeeper store (layout, conditional writes, change
notifications between brokers) over the in-memory FakeZk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from broker.acl.acl_model import (AccessControlEntry, AclBinding, AclBindingFilter, AclOperation,
                                  EntryFilter, PatternFilter, PatternType, PermissionType,
                                  ResourcePattern, ResourceType, decode_acls, decode_change,
                                  encode_acls, encode_change, parse_name, resource_path)
from broker.acl.acl_store import VersionedAcls
from broker.acl.authorizer import (AclAuthorizer, AuthorizerConfigError, build_authorizer,
                                   parse_super_users)
from controller import ClusterStore
from protocol.errors import ErrorCode
from tests.unit.controller.fake_zk import FakeZk, FakeZkServer
from tests.unit.polling import until

Op, Perm, RT, PT = AclOperation, PermissionType, ResourceType, PatternType
ALICE, BOB, ANON = "User:alice", "User:bob", "User:ANONYMOUS"
HOST = "10.0.0.1"


def ace(principal: str, op: AclOperation, perm: PermissionType, host: str = "*"
        ) -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, perm)


def authorizer(acls: dict[ResourcePattern, list[AccessControlEntry]], *,
               allow_everyone: bool = False, super_users: tuple[str, ...] = ()) -> AclAuthorizer:
    """An authorizer whose cache holds ``acls`` (no ZooKeeper involved)."""
    auth = AclAuthorizer(None, super_users, allow_everyone)  # type: ignore[arg-type]
    for pattern, entries in acls.items():
        auth.store.cache.put(pattern, VersionedAcls(frozenset(entries), 0))
    return auth


def lit(name: str, rtype: ResourceType = RT.TOPIC) -> ResourcePattern:
    return ResourcePattern(rtype, name, PT.LITERAL)


def pre(name: str, rtype: ResourceType = RT.TOPIC) -> ResourcePattern:
    return ResourcePattern(rtype, name, PT.PREFIXED)


# ---- rules ---------------------------------------------------------------------------------

@pytest.mark.parametrize("allow_everyone", [True, False])
def test_no_acl_found_follows_the_setting(allow_everyone: bool) -> None:
    auth = authorizer({lit("other"): [ace(ALICE, Op.READ, Perm.ALLOW)]},
                      allow_everyone=allow_everyone)
    assert auth.authorize(BOB, HOST, Op.WRITE, RT.TOPIC, "t") is allow_everyone
    # ACLs on a topic of the same name but another resource type do not count
    assert auth.authorize(BOB, HOST, Op.READ, RT.GROUP, "other") is allow_everyone
    # once the resource has ACLs, only they decide
    assert auth.authorize(BOB, HOST, Op.READ, RT.TOPIC, "other") is False
    assert auth.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "other") is True


def test_deny_beats_allow_and_wildcards_match() -> None:
    auth = authorizer({
        lit("t"): [ace("User:*", Op.ALL, Perm.ALLOW), ace(ALICE, Op.WRITE, Perm.DENY)],
        lit("u"): [ace(ALICE, Op.READ, Perm.ALLOW), ace("User:*", Op.READ, Perm.DENY, HOST)],
    }, allow_everyone=True)
    assert auth.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "t") is False
    assert auth.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "t") is True
    assert auth.authorize(BOB, HOST, Op.WRITE, RT.TOPIC, "t") is True
    # a DENY for everyone from one host beats alice's ALLOW from anywhere
    assert auth.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "u") is False
    assert auth.authorize(ALICE, "10.0.0.2", Op.READ, RT.TOPIC, "u") is True


def test_deny_all_operations_and_hosts() -> None:
    auth = authorizer({lit("t"): [ace(ALICE, Op.READ, Perm.ALLOW), ace(ALICE, Op.ALL, Perm.DENY)]})
    assert auth.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "t") is False
    assert auth.authorize(ALICE, HOST, Op.DESCRIBE, RT.TOPIC, "t") is False


def test_host_must_match_unless_wildcard() -> None:
    auth = authorizer({lit("t"): [ace(ALICE, Op.READ, Perm.ALLOW, HOST)]})
    assert auth.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "t") is True
    assert auth.authorize(ALICE, "10.0.0.9", Op.READ, RT.TOPIC, "t") is False


@pytest.mark.parametrize("granted,asked,ok", [
    (Op.READ, Op.DESCRIBE, True), (Op.WRITE, Op.DESCRIBE, True), (Op.DELETE, Op.DESCRIBE, True),
    (Op.ALTER, Op.DESCRIBE, True), (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, True),
    (Op.ALL, Op.CREATE, True), (Op.READ, Op.WRITE, False), (Op.DESCRIBE, Op.READ, False),
    (Op.CREATE, Op.DESCRIBE, False), (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, False),
    (Op.ALTER_CONFIGS, Op.DESCRIBE, False),
])
def test_implied_operations(granted: AclOperation, asked: AclOperation, ok: bool) -> None:
    auth = authorizer({lit("t"): [ace(ALICE, granted, Perm.ALLOW)]})
    assert auth.authorize(ALICE, HOST, asked, RT.TOPIC, "t") is ok


def test_deny_is_not_implied() -> None:
    """DENY READ does not deny DESCRIBE (Kafka matches DENY on the operation or ALL only)."""
    auth = authorizer({lit("t"): [ace(ALICE, Op.DESCRIBE, Perm.ALLOW),
                                  ace(ALICE, Op.READ, Perm.DENY)]})
    assert auth.authorize(ALICE, HOST, Op.DESCRIBE, RT.TOPIC, "t") is True
    assert auth.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "t") is False


def test_prefixed_and_wildcard_patterns() -> None:
    auth = authorizer({
        pre("sales-"): [ace(ALICE, Op.WRITE, Perm.ALLOW)],
        pre("sales-secret"): [ace(ALICE, Op.WRITE, Perm.DENY)],
        lit("*"): [ace(BOB, Op.READ, Perm.ALLOW)],
    })
    assert auth.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "sales-eu") is True
    assert auth.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "sales-") is True
    assert auth.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "sales") is False
    assert auth.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "sales-secret-1") is False
    assert auth.authorize(BOB, HOST, Op.READ, RT.TOPIC, "anything") is True
    assert auth.authorize(BOB, HOST, Op.READ, RT.GROUP, "anything") is False


def test_super_users_bypass_every_acl() -> None:
    auth = authorizer({lit("t"): [ace("User:*", Op.ALL, Perm.DENY)]},
                      super_users=("User:admin",))
    assert auth.authorize("User:admin", HOST, Op.WRITE, RT.TOPIC, "t") is True
    assert auth.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "t") is False
    assert parse_super_users(" User:a ; User:b;") == {"User:a", "User:b"}
    with pytest.raises(AuthorizerConfigError):
        parse_super_users("alice")


def test_build_authorizer_from_config() -> None:
    class Cfg:
        authorizer_class_name = ""
        super_users = "User:admin"
        allow_everyone_if_no_acl_found = True
    assert build_authorizer(Cfg(), None) is None
    for name in ("kafka.security.authorizer.AclAuthorizer",
                 "kafka.security.auth.SimpleAclAuthorizer"):
        Cfg.authorizer_class_name = name
        auth = build_authorizer(Cfg(), None)
        assert auth is not None and auth.super_users == {"User:admin"}
        assert auth.allow_everyone_if_no_acl_found is True
    Cfg.authorizer_class_name = "org.example.Nope"
    with pytest.raises(AuthorizerConfigError):
        build_authorizer(Cfg(), None)


# ---- filters and formats -------------------------------------------------------------------

def test_pattern_filters_as_kafka() -> None:
    patterns = [lit("foo"), lit("*"), pre("fo"), pre("bar"), lit("foo", RT.GROUP)]

    def hits(rtype: ResourceType, name: str | None, ptype: PatternType) -> list[ResourcePattern]:
        return [p for p in patterns if PatternFilter(rtype, name, ptype).matches(p)]
    assert hits(RT.TOPIC, "foo", PT.LITERAL) == [lit("foo")]
    assert hits(RT.TOPIC, "foo", PT.ANY) == [lit("foo")]
    assert hits(RT.TOPIC, "foo", PT.MATCH) == [lit("foo"), lit("*"), pre("fo")]
    assert hits(RT.TOPIC, "fo", PT.PREFIXED) == [pre("fo")]
    assert hits(RT.ANY, None, PT.ANY) == patterns
    assert hits(RT.ANY, "foo", PT.LITERAL) == [lit("foo"), lit("foo", RT.GROUP)]
    assert PatternFilter(RT.TOPIC, "x", PT.LITERAL).matches_at_most_one()
    assert not PatternFilter(RT.TOPIC, "x", PT.MATCH).matches_at_most_one()
    e = ace(ALICE, Op.READ, Perm.ALLOW, HOST)
    assert EntryFilter(None, None, Op.ANY, Perm.ANY).matches(e)
    assert EntryFilter(ALICE, HOST, Op.READ, Perm.ALLOW).matches(e)
    assert not EntryFilter(BOB, None, Op.ANY, Perm.ANY).matches(e)
    assert not EntryFilter(None, None, Op.WRITE, Perm.ANY).matches(e)
    assert not EntryFilter(None, None, Op.ANY, Perm.DENY).matches(e)


def test_znode_formats() -> None:
    entries = frozenset({ace(ALICE, Op.DESCRIBE_CONFIGS, Perm.DENY, HOST)})
    js = json.loads(encode_acls(entries))
    assert js == {"version": 1, "acls": [{"principal": "User:alice", "permissionType": "Deny",
                                          "operation": "DescribeConfigs", "host": HOST}]}
    assert decode_acls(encode_acls(entries)) == entries
    assert decode_acls(b'{"version":1,"acls":[{"principal":"User:a","permissionType":"ALLOW",'
                       b'"operation":"READ","host":"*"}]}') == {ace("User:a", Op.READ, Perm.ALLOW)}
    assert resource_path(lit("t")) == "/kafka-acl/Topic/t"
    assert resource_path(pre("t", RT.TRANSACTIONAL_ID)) == \
        "/kafka-acl-extended/prefixed/TransactionalId/t"
    assert encode_change(lit("t")) == b"TOPIC:t"
    assert decode_change("/kafka-acl-changes", b"Topic:a:b") == lit("a:b")
    change = encode_change(pre("p", RT.GROUP))
    assert json.loads(change) == {"version": 1, "resourceType": "GROUP", "name": "p",
                                  "patternType": "PREFIXED"}
    assert decode_change("/kafka-acl-extended-changes", change) == pre("p", RT.GROUP)
    assert parse_name(AclOperation, "IdempotentWrite") == Op.IDEMPOTENT_WRITE
    assert parse_name(AclOperation, "nonsense") == Op.UNKNOWN


# ---- the ZooKeeper store, two brokers ------------------------------------------------------

def run(fn: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(fn(), 20))


async def started(server: FakeZkServer, allow_everyone: bool = False
                  ) -> tuple[AclAuthorizer, ClusterStore]:
    store = ClusterStore("fake", client=FakeZk(server))
    await store.connect()
    auth = AclAuthorizer(store, (), allow_everyone)
    await auth.start()
    return auth, store


def data(server: FakeZkServer, path: str) -> Any:
    node = server.nodes.get(path)
    return None if node is None else node.data


def test_acls_go_through_zookeeper_to_every_broker() -> None:
    server = FakeZkServer()

    async def scenario() -> None:
        a, sa = await started(server)
        b, sb = await started(server)
        deny = AclBinding(lit("t"), ace(ANON, Op.WRITE, Perm.DENY))
        allow = AclBinding(lit("t"), ace("User:*", Op.ALL, Perm.ALLOW))
        prefixed = AclBinding(pre("p-"), ace(ALICE, Op.READ, Perm.ALLOW, HOST))
        bad = AclBinding(lit("a/b"), ace(ALICE, Op.READ, Perm.ALLOW))
        results = await a.create_acls([deny, allow, prefixed, bad])
        assert results[:3] == [(ErrorCode.NONE, None)] * 3
        assert results[3][0] == ErrorCode.INVALID_REQUEST and "a/b" in str(results[3][1])
        stored = json.loads(data(server, "/kafka-acl/Topic/t"))
        assert len(stored["acls"]) == 2 and stored["version"] == 1
        assert data(server, "/kafka-acl-extended/prefixed/Topic/p-") is not None
        assert [data(server, f"/kafka-acl-changes/{c}") for c in
                server.children_of("/kafka-acl-changes")] == [b"TOPIC:t"]
        assert len(server.children_of("/kafka-acl-extended-changes")) == 1
        # broker b learns through the change notifications
        await until(lambda: not b.authorize(ANON, HOST, Op.WRITE, RT.TOPIC, "t"),
                    "the deny reached broker b")
        assert b.authorize(ANON, HOST, Op.READ, RT.TOPIC, "t")
        await until(lambda: b.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "p-1"),
                    "the prefixed allow reached broker b")
        everything = AclBindingFilter(PatternFilter(RT.ANY, None, PT.ANY),
                                      EntryFilter(None, None, Op.ANY, Perm.ANY))
        assert {x.pattern for x in b.acls(everything)} == {lit("t"), pre("p-")}

        # b deletes the DENY; a follows; the last ACL of a resource removes its znode
        only_deny = AclBindingFilter(PatternFilter(RT.TOPIC, "t", PT.MATCH),
                                     EntryFilter(None, None, Op.ANY, Perm.DENY))
        assert await b.delete_acls([only_deny]) == [[(deny, ErrorCode.NONE, None)]]
        await until(lambda: a.authorize(ANON, HOST, Op.WRITE, RT.TOPIC, "t"),
                    "the deletion reached broker a")
        result = await a.delete_acls([everything, everything])
        assert sorted(str(x[0].pattern) for x in result[0]) == sorted(
            [str(lit("t")), str(pre("p-"))]) and result[1] == []
        assert data(server, "/kafka-acl/Topic/t") is None
        assert data(server, "/kafka-acl-extended/prefixed/Topic/p-") is None
        await until(lambda: len(b.store.cache) == 0, "broker b's cache emptied")

        # a restarted broker loads what is stored
        await a.create_acls([allow])
        c, sc = await started(server)
        assert c.acls(everything) == [allow]
        for auth, st in ((a, sa), (b, sb), (c, sc)):
            auth.close()
            await st.close()
    run(scenario)


def test_conditional_writes_retry_on_a_stale_cache() -> None:
    """Another writer changed the znode after our cache read it: our versioned
    set fails, we re-read and apply our edit on top (nothing is lost)."""
    server = FakeZkServer()

    async def scenario() -> None:
        a, sa = await started(server)
        a.store.retry_backoff_s = 0.0
        first = AclBinding(lit("t"), ace(ALICE, Op.READ, Perm.ALLOW))
        await a.create_acls([first])
        a.close()                            # no more notifications: a's cache goes stale
        other = FakeZk(server)
        other.start(1)
        sneaked = frozenset({first.entry, ace(BOB, Op.READ, Perm.ALLOW)})
        other.set("/kafka-acl/Topic/t", encode_acls(sneaked), -1)
        third = AclBinding(lit("t"), ace("User:carol", Op.READ, Perm.ALLOW))
        assert await a.create_acls([third]) == [(ErrorCode.NONE, None)]
        assert decode_acls(data(server, "/kafka-acl/Topic/t")) == sneaked | {third.entry}
        other.stop()
        await sa.close()
    run(scenario)
