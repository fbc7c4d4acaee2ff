"""Kafka's per-API authorization in the handlers (KafkaApis 3.9) and the shared
steps of broker/acl/checks.py: authorizeByResourceType, filterByAuthorized's
one check (and one log line) per name, and each handler's denial answer, sent
through the codec both ways at every version it touches, over small fakes that
fail loudly when a denied request reaches a coordinator, the controller or the
replica manager."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from broker.acl.acl_model import (AccessControlEntry, AclOperation, PatternType,
                                  PermissionType, ResourcePattern, ResourceType)
from broker.acl.acl_store import VersionedAcls
from broker.acl.authorizer import AclAuthorizer
from broker.acl.checks import authorize_by_resource_type, authorized_names
from broker.context import RequestContext
from broker.dispatch import REGISTRY, load_handlers
from broker.replication.replica_manager import ProduceResult
from protocol.api_keys import ApiKey as K
from protocol.codec import decode, encode
from protocol.errors import ErrorCode as E
from protocol.headers import RequestHeader
from protocol.records import build_batch
from protocol.schema import Struct
from protocol.spec import api

Op, Perm, RT, PT = AclOperation, PermissionType, ResourceType, PatternType
ANON, ALICE = "User:ANONYMOUS", "User:alice"
CLUSTER = (RT.CLUSTER, "kafka-cluster")
MIN_INT = -2147483648


def authorizer(acls: dict[tuple[ResourceType, str] | ResourcePattern,
                          list[tuple[Op, Perm] | tuple[Op, Perm, str]]],
               allow_everyone: bool = True, super_users: tuple[str, ...] = ()) -> AclAuthorizer:
    """ACLs for User:* (or the principal named third) on literal patterns (or the
    ResourcePattern given)."""
    auth = AclAuthorizer(None, super_users, allow_everyone)  # type: ignore[arg-type]
    for key, entries in acls.items():
        pattern = key if isinstance(key, ResourcePattern) else ResourcePattern(
            key[0], key[1], PT.LITERAL)
        auth.store.cache.put(pattern, VersionedAcls(frozenset(
            AccessControlEntry(e[2] if len(e) > 2 else "User:*", "*", e[0], e[1])  # type: ignore[misc]
            for e in entries), 0))
    return auth


class Untouchable:
    """Any attribute use means a denied request went further than Kafka lets it."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"{self._what}.{name} used by a denied request")


class FakeMetadata:
    def __init__(self, topics: dict[str, int]) -> None:
        self.topics = topics

    async def wait_received(self, timeout_s: float) -> bool:
        return True                     # the controller's UpdateMetadata came

    def partition(self, topic: str, partition: int) -> Any:
        return object() if partition < self.topics.get(topic, 0) else None


class FakeOffsets:
    """The group coordinator's committed offsets (``GroupCoordinator.offsets``) as the
    handlers call them, answering from ``stored`` and noting what was asked."""

    def __init__(self, stored: dict[tuple[str, int], int], asked: list[Any]) -> None:
        self.stored = stored
        self.asked = asked

    def fetch(self, group_id: str, wanted: Any, require_stable: bool) -> Any:
        self.asked.append(wanted)
        tps = self.stored if wanted is None else wanted
        return E.NONE, {tp: (self.stored.get(tp, -1), -1, "", E.NONE) for tp in tps}

    async def commit(self, group_id: str, member: str, instance: Any, generation: int,
                     offsets: dict[tuple[str, int], Any]) -> dict[tuple[str, int], int]:
        self.asked.append(sorted(offsets))
        return dict.fromkeys(offsets, E.NONE)

    async def delete_groups(self, names: list[str]) -> dict[str, int]:
        self.asked.append(names)
        return dict.fromkeys(names, E.NONE)

    async def delete(self, group_id: str, wanted: list[tuple[str, int]]) -> Any:
        self.asked.append(wanted)
        return E.NONE, dict.fromkeys(wanted, E.NONE)


class FakeGroups:
    """The group coordinator calls the handlers make, answering from ``offsets``."""

    def __init__(self, offsets: dict[tuple[str, int], int] | None = None,
                 groups: tuple[str, ...] = ()) -> None:
        self.groups = groups
        self.asked: list[Any] = []
        self.offsets = FakeOffsets(offsets or {}, self.asked)
        # no KIP-848 consumer groups here (coordinator/group/consumer/coordinator.py, issue 19)
        self.consumer = SimpleNamespace(groups={}, enabled=True, has_group=lambda _g: False)
        self.runtime = SimpleNamespace(clock=lambda: 0)   # what the handlers read of it

    def describe_group(self, group_id: str) -> tuple[int, Any]:
        return E.NONE, None

    def list_groups(self, states: Any, types: Any) -> tuple[int, list[tuple[str, str, str, str]]]:
        return E.NONE, [(g, "consumer", "Empty", "classic") for g in self.groups]


def broker(auth: AclAuthorizer | None, **services: Any) -> SimpleNamespace:
    b = SimpleNamespace(authorizer=auth, broker_id=1, cluster_id="abc",
                        group_coordinator=Untouchable("group_coordinator"),
                        transaction_coordinator=Untouchable("transaction_coordinator"),
                        controller=Untouchable("controller"), replicas=Untouchable("replicas"),
                        metadata=Untouchable("metadata"))
    for k, v in services.items():
        setattr(b, k, v)
    return b


class Conn:
    peer = "10.1.2.3:4567"
    listener = "PLAINTEXT"
    client_software = None

    def __init__(self, principal: str | None = None) -> None:
        self.principal = principal


def call(b: Any, api_key: int, version: int, body: Struct, principal: str | None = None
         ) -> Struct:
    load_handlers()
    spec = api(api_key)
    wire = decode(spec.request, encode(body, version), version)
    ctx = RequestContext(header=RequestHeader(api_key, version, 1, "t"),
                         connection=Conn(principal), broker=b)  # type: ignore[arg-type]
    response = asyncio.run(REGISTRY[api_key].fn(ctx, wire))
    assert isinstance(response, Struct)
    return decode(spec.response, encode(response, version), version)


def req(api_key: int, **fields: Any) -> Struct:
    return api(api_key).request.new(**fields)


def st(api_key: int, struct_name: str, **fields: Any) -> Struct:
    return api(api_key).request.structs[struct_name].new(**fields)


# ---- the shared steps -----------------------------------------------------------------------

def test_authorize_by_resource_type_follows_kafka() -> None:
    def by_type(acls: Any, **kw: Any) -> bool:
        return authorize_by_resource_type(authorizer(acls, **kw), ANON, "10.0.0.1", Op.WRITE,
                                          RT.TOPIC)
    topic_write = (Op.WRITE, Perm.ALLOW, ANON)
    assert not by_type({}, allow_everyone=False)
    assert by_type({}, allow_everyone=True)
    assert by_type({}, allow_everyone=False, super_users=(ANON,))
    assert by_type({(RT.TOPIC, "t"): [topic_write]}, allow_everyone=False)
    assert by_type({ResourcePattern(RT.TOPIC, "pre", PT.PREFIXED): [(Op.ALL, Perm.ALLOW)]},
                   allow_everyone=False)
    # READ does not count, nor another principal's WRITE, nor a GROUP ACL
    assert not by_type({(RT.TOPIC, "t"): [(Op.READ, Perm.ALLOW, ANON),
                                          (Op.WRITE, Perm.ALLOW, ALICE)],
                        (RT.GROUP, "g"): [topic_write]}, allow_everyone=False)
    # a literal DENY on "*" wins even with allow.everyone.if.no.acl.found
    assert not by_type({(RT.TOPIC, "*"): [(Op.WRITE, Perm.DENY)],
                        (RT.TOPIC, "t"): [topic_write]}, allow_everyone=True)
    # DENY on the same literal, or a prefixed DENY covering it, cancels an ALLOW ...
    assert not by_type({(RT.TOPIC, "t"): [topic_write, (Op.WRITE, Perm.DENY)]},
                       allow_everyone=False)
    assert not by_type({(RT.TOPIC, "abc"): [topic_write],
                        ResourcePattern(RT.TOPIC, "ab", PT.PREFIXED): [(Op.ALL, Perm.DENY)]},
                       allow_everyone=False)
    # ... but an ALLOW elsewhere survives, and so does an ALLOW on the literal "*"
    assert by_type({(RT.TOPIC, "t"): [topic_write, (Op.WRITE, Perm.DENY)],
                    (RT.TOPIC, "u"): [topic_write]}, allow_everyone=False)
    assert by_type({(RT.TOPIC, "*"): [topic_write], (RT.TOPIC, "t"): [(Op.WRITE, Perm.DENY)]},
                   allow_everyone=False)


def test_authorized_names_checks_and_logs_each_name_once(caplog: pytest.LogCaptureFixture
                                                         ) -> None:
    b = broker(authorizer({(RT.TOPIC, "no"): [(Op.READ, Perm.DENY)]}))
    ctx = SimpleNamespace(broker=b, connection=Conn())
    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        ok = authorized_names(ctx, Op.READ, RT.TOPIC, ["no", "yes", "no", "no"])
    assert ok == {"yes"}
    denials = [r.getMessage() for r in caplog.records]
    assert denials == ["Principal = User:ANONYMOUS is Denied Operation = READ from host = "
                       "10.1.2.3 on resource = TOPIC:LITERAL:no"]
    assert authorized_names(SimpleNamespace(broker=broker(None)), Op.READ, RT.TOPIC,
                            ["a", "a"]) == {"a"}


def test_the_connection_principal_is_the_one_checked() -> None:
    b = broker(authorizer({(RT.GROUP, "g"): [(Op.READ, Perm.DENY, ALICE)]}), group_coordinator=None)
    hb = req(K.HEARTBEAT, group_id="g", generation_id=1, member_id="m")
    assert call(b, K.HEARTBEAT, 4, hb, principal=ALICE).error_code == E.GROUP_AUTHORIZATION_FAILED


# ---- groups ---------------------------------------------------------------------------------

GROUP_DENIED = {(RT.GROUP, "g"): [(Op.ALL, Perm.DENY)]}


@pytest.mark.parametrize("version", [0, 5, 9])
def test_join_group_needs_read_on_the_group(version: int) -> None:
    r = call(broker(authorizer(GROUP_DENIED)), K.JOIN_GROUP, version, req(
        K.JOIN_GROUP, group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
        member_id="", protocol_type="consumer", protocols=[
            st(K.JOIN_GROUP, "JoinGroupRequestProtocol", name="range", metadata=b"")]))
    assert (r.error_code, r.generation_id, r.leader, r.member_id, r.members) == (
        E.GROUP_AUTHORIZATION_FAILED, -1, "", "", [])
    assert r.protocol_name == (None if version >= 7 else "")


@pytest.mark.parametrize("version", [0, 3, 5])
def test_sync_heartbeat_leave_need_read_on_the_group(version: int) -> None:
    b = broker(authorizer(GROUP_DENIED))
    sync = call(b, K.SYNC_GROUP, version, req(K.SYNC_GROUP, group_id="g", generation_id=1,
                                              member_id="m", protocol_type="consumer",
                                              protocol_name="range", assignments=[]))
    assert (sync.error_code, sync.assignment) == (E.GROUP_AUTHORIZATION_FAILED, b"")
    hb = call(b, K.HEARTBEAT, min(version, 4), req(K.HEARTBEAT, group_id="g", generation_id=1,
                                                   member_id="m"))
    assert hb.error_code == E.GROUP_AUTHORIZATION_FAILED
    leave = call(b, K.LEAVE_GROUP, version, req(K.LEAVE_GROUP, group_id="g", member_id="m",
                                                members=[st(K.LEAVE_GROUP, "MemberIdentity",
                                                            member_id="m")]))
    assert (leave.error_code, leave.members) == (E.GROUP_AUTHORIZATION_FAILED, [])


def _commit(version: int, topics: dict[str, list[int]]) -> Struct:
    return req(K.OFFSET_COMMIT, group_id="g", generation_id_or_member_epoch=-1, member_id="",
               topics=[st(K.OFFSET_COMMIT, "OffsetCommitRequestTopic", name=t, partitions=[
                   st(K.OFFSET_COMMIT, "OffsetCommitRequestPartition", partition_index=p,
                      committed_offset=5) for p in ps]) for t, ps in topics.items()])


@pytest.mark.parametrize("version", [2, 8])
def test_offset_commit_group_then_topic_read(version: int) -> None:
    wanted = {"ok": [0, 1], "secret": [0], "gone": [0]}
    denied = call(broker(authorizer(GROUP_DENIED)), K.OFFSET_COMMIT, version,
                  _commit(version, wanted))
    assert {(t.name, p.partition_index): p.error_code for t in denied.topics
            for p in t.partitions} == dict.fromkeys(
        [("ok", 0), ("ok", 1), ("secret", 0), ("gone", 0)], E.GROUP_AUTHORIZATION_FAILED)
    groups = FakeGroups()
    b = broker(authorizer({(RT.TOPIC, "secret"): [(Op.READ, Perm.DENY)]}),
               group_coordinator=groups, metadata=FakeMetadata({"ok": 2, "secret": 1}))
    r = call(b, K.OFFSET_COMMIT, version, _commit(version, wanted))
    assert {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions} \
        == {("ok", 0): 0, ("ok", 1): 0, ("secret", 0): E.TOPIC_AUTHORIZATION_FAILED,
            ("gone", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert groups.asked == [[("ok", 0), ("ok", 1)]]


def test_offset_fetch_hides_or_refuses_topics_without_describe() -> None:
    groups = FakeGroups({("ok", 0): 7, ("secret", 0): 9})
    b = broker(authorizer({(RT.TOPIC, "secret"): [(Op.DESCRIBE, Perm.DENY)],
                           (RT.GROUP, "locked"): [(Op.DESCRIBE, Perm.DENY)]}),
               group_coordinator=groups)
    topic = api(K.OFFSET_FETCH).request.structs["OffsetFetchRequestTopic"]
    every = call(b, K.OFFSET_FETCH, 7, req(K.OFFSET_FETCH, group_id="g", topics=None))
    assert [(t.name, [p.committed_offset for p in t.partitions]) for t in every.topics] == [
        ("ok", [7])]
    named = call(b, K.OFFSET_FETCH, 7, req(K.OFFSET_FETCH, group_id="g", topics=[
        topic.new(name=n, partition_indexes=[0]) for n in ("ok", "secret")]))
    assert {t.name: [(p.committed_offset, p.error_code) for p in t.partitions]
            for t in named.topics} == {"ok": [(7, 0)],
                                       "secret": [(-1, E.TOPIC_AUTHORIZATION_FAILED)]}
    assert groups.asked[-1] == [("ok", 0)]          # the coordinator never heard of "secret"
    locked = call(b, K.OFFSET_FETCH, 3, req(K.OFFSET_FETCH, group_id="locked", topics=None))
    assert (locked.error_code, locked.topics) == (E.GROUP_AUTHORIZATION_FAILED, [])
    v1 = call(b, K.OFFSET_FETCH, 1, req(K.OFFSET_FETCH, group_id="locked", topics=[
        topic.new(name="ok", partition_indexes=[0])]))
    assert [p.error_code for t in v1.topics for p in t.partitions] == [
        E.GROUP_AUTHORIZATION_FAILED]
    group = api(K.OFFSET_FETCH).request.structs["OffsetFetchRequestGroup"]
    batch = call(b, K.OFFSET_FETCH, 8, req(K.OFFSET_FETCH, groups=[
        group.new(group_id="locked", topics=None), group.new(group_id="g", topics=None)]))
    assert [(g.group_id, g.error_code, [t.name for t in g.topics]) for g in batch.groups] == [
        ("locked", E.GROUP_AUTHORIZATION_FAILED, []), ("g", 0, ["ok"])]


def test_describe_list_delete_groups() -> None:
    groups = FakeGroups(groups=("open", "hidden"))
    auth = authorizer({(RT.GROUP, "hidden"): [(Op.ALL, Perm.DENY)],
                       (RT.GROUP, "open"): [(Op.READ, Perm.ALLOW)],
                       CLUSTER: [(Op.DESCRIBE, Perm.DENY)]})
    b = broker(auth, group_coordinator=groups)
    d = call(b, K.DESCRIBE_GROUPS, 5, req(K.DESCRIBE_GROUPS, groups=["open", "hidden"],
                                          include_authorized_operations=True))
    assert [(g.group_id, g.error_code, g.authorized_operations) for g in d.groups] == [
        ("hidden", E.GROUP_AUTHORIZATION_FAILED, MIN_INT),
        ("open", 0, (1 << Op.READ) | (1 << Op.DESCRIBE))]     # READ implies DESCRIBE
    listed = call(b, K.LIST_GROUPS, 4, req(K.LIST_GROUPS))
    assert [g.group_id for g in listed.groups] == ["open"]
    auth.store.cache.put(ResourcePattern(RT.CLUSTER, "kafka-cluster", PT.LITERAL),
                         VersionedAcls(frozenset({AccessControlEntry(
                             "User:*", "*", Op.DESCRIBE, Perm.ALLOW)}), 1))
    listed = call(b, K.LIST_GROUPS, 4, req(K.LIST_GROUPS))
    assert [g.group_id for g in listed.groups] == ["open", "hidden"]   # DESCRIBE on the cluster
    deleted = call(b, K.DELETE_GROUPS, 2, req(K.DELETE_GROUPS, groups_names=["hidden", "open"]))
    assert [(r.group_id, r.error_code) for r in deleted.results] == [
        ("hidden", E.GROUP_AUTHORIZATION_FAILED), ("open", E.GROUP_AUTHORIZATION_FAILED)]
    assert groups.asked == [[]]                      # READ on "open" does not imply DELETE
    auth.store.cache.put(ResourcePattern(RT.GROUP, "open", PT.LITERAL), VersionedAcls(
        frozenset({AccessControlEntry("User:*", "*", Op.DELETE, Perm.ALLOW)}), 1))
    deleted = call(b, K.DELETE_GROUPS, 2, req(K.DELETE_GROUPS, groups_names=["hidden", "open"]))
    assert [(r.group_id, r.error_code) for r in deleted.results] == [   # refused ones last
        ("open", 0), ("hidden", E.GROUP_AUTHORIZATION_FAILED)]


def test_offset_delete_needs_delete_on_group_and_read_on_topics() -> None:
    def od(topics: list[str]) -> Struct:
        return req(K.OFFSET_DELETE, group_id="g", topics=[
            st(K.OFFSET_DELETE, "OffsetDeleteRequestTopic", name=t, partitions=[
                st(K.OFFSET_DELETE, "OffsetDeleteRequestPartition", partition_index=0)])
            for t in topics])
    denied = call(broker(authorizer({(RT.GROUP, "g"): [(Op.DELETE, Perm.DENY)]})),
                  K.OFFSET_DELETE, 0, od(["t"]))
    assert (denied.error_code, denied.topics) == (E.GROUP_AUTHORIZATION_FAILED, [])
    groups = FakeGroups()
    b = broker(authorizer({(RT.TOPIC, "secret"): [(Op.READ, Perm.DENY)]}),
               group_coordinator=groups, metadata=FakeMetadata({"t": 1, "secret": 1}))
    r = call(b, K.OFFSET_DELETE, 0, od(["t", "secret"]))
    assert {t.name: t.partitions[0].error_code for t in r.topics} == {
        "t": 0, "secret": E.TOPIC_AUTHORIZATION_FAILED}
    assert groups.asked == [[("t", 0)]]


def test_find_coordinator_needs_describe_on_the_key() -> None:
    b = broker(authorizer({**GROUP_DENIED, (RT.TRANSACTIONAL_ID, "tx"): [(Op.ALL, Perm.DENY)],
                           CLUSTER: [(Op.CLUSTER_ACTION, Perm.DENY)]}))
    old = call(b, K.FIND_COORDINATOR, 3, req(K.FIND_COORDINATOR, key="g", key_type=0))
    assert (old.error_code, old.node_id, old.host, old.port) == (
        E.GROUP_AUTHORIZATION_FAILED, -1, "", -1)
    for key_type, error in ((0, E.GROUP_AUTHORIZATION_FAILED),
                            (1, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
                            (2, E.CLUSTER_AUTHORIZATION_FAILED)):
        key = {0: "g", 1: "tx", 2: "g:t:0"}[key_type]
        r = call(b, K.FIND_COORDINATOR, 6, req(K.FIND_COORDINATOR, key_type=key_type,
                                               coordinator_keys=[key]))
        assert [(c.key, c.error_code) for c in r.coordinators] == [(key, error)]
    share = call(b, K.FIND_COORDINATOR, 5, req(K.FIND_COORDINATOR, key_type=2,
                                               coordinator_keys=["x"]))
    assert share.coordinators[0].error_code == E.INVALID_REQUEST


# ---- inter-broker APIs: CLUSTER_ACTION --------------------------------------------------------

NO_CLUSTER_ACTION = {CLUSTER: [(Op.CLUSTER_ACTION, Perm.DENY, ANON)]}


@pytest.mark.parametrize("version", [1, 4, 5, 7])
def test_leader_and_isr_needs_cluster_action(version: int) -> None:
    spec = api(K.LEADER_AND_ISR).request.structs
    state = spec["LeaderAndIsrPartitionState"].new(
        topic_name="t", partition_index=0, controller_epoch=1, leader=1, leader_epoch=1,
        isr=[1], partition_epoch=1, replicas=[1])
    body = req(K.LEADER_AND_ISR, controller_id=1, controller_epoch=1,
               ungrouped_partition_states=[state] if version < 2 else [],
               topic_states=[] if version < 2 else [spec["LeaderAndIsrTopicState"].new(
                   topic_name="t", partition_states=[state])], live_leaders=[])
    r = call(broker(authorizer(NO_CLUSTER_ACTION)), K.LEADER_AND_ISR, version, body)
    assert r.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    errors = ([p.error_code for p in r.partition_errors] if version < 5
              else [p.error_code for t in r.topics for p in t.partition_errors])
    assert errors == [E.CLUSTER_AUTHORIZATION_FAILED]


def test_other_inter_broker_apis_need_cluster_action() -> None:
    b = broker(authorizer(NO_CLUSTER_ACTION))
    um = call(b, K.UPDATE_METADATA, 8, req(K.UPDATE_METADATA, controller_id=1,
                                           controller_epoch=1))
    assert um.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    s = api(K.STOP_REPLICA).request.structs
    sr = call(b, K.STOP_REPLICA, 3, req(K.STOP_REPLICA, controller_id=1, controller_epoch=1,
                                        topic_states=[s["StopReplicaTopicState"].new(
                                            topic_name="t", partition_states=[
                                                s["StopReplicaPartitionState"].new(
                                                    partition_index=0, leader_epoch=1)])]))
    assert (sr.error_code, [(p.topic_name, p.error_code) for p in sr.partition_errors]) == (
        E.CLUSTER_AUTHORIZATION_FAILED, [("t", E.CLUSTER_AUTHORIZATION_FAILED)])
    cs = call(b, K.CONTROLLED_SHUTDOWN, 3, req(K.CONTROLLED_SHUTDOWN, broker_id=2))
    assert cs.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    ap = call(b, K.ALTER_PARTITION, 3, req(K.ALTER_PARTITION, broker_id=2, topics=[]))
    assert ap.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    w = api(K.WRITE_TXN_MARKERS).request.structs
    wm = call(b, K.WRITE_TXN_MARKERS, 1, req(K.WRITE_TXN_MARKERS, markers=[
        w["WritableTxnMarker"].new(producer_id=5, producer_epoch=0, transaction_result=True,
                                   coordinator_epoch=0, topics=[w["WritableTxnMarkerTopic"].new(
                                       name="t", partition_indexes=[0, 1])])]))
    assert [p.error_code for m in wm.markers for t in m.topics for p in t.partitions] == [
        E.CLUSTER_AUTHORIZATION_FAILED] * 2
    a = api(K.ADD_PARTITIONS_TO_TXN).request.structs
    apt = call(b, K.ADD_PARTITIONS_TO_TXN, 5, req(K.ADD_PARTITIONS_TO_TXN, transactions=[
        a["AddPartitionsToTxnTransaction"].new(transactional_id="tx", producer_id=5,
                                               producer_epoch=0, verify_only=True, topics=[])]))
    assert (apt.error_code, apt.results_by_transaction) == (E.CLUSTER_AUTHORIZATION_FAILED, [])


def test_write_txn_markers_alter_on_the_cluster_is_enough() -> None:
    calls: list[Any] = []

    async def append_markers(*args: Any) -> dict[tuple[str, int], int]:
        calls.append(args)
        return {("t", 0): E.NONE}
    b = broker(authorizer({CLUSTER: [(Op.CLUSTER_ACTION, Perm.DENY), (Op.ALTER, Perm.ALLOW)]}),
               replicas=SimpleNamespace(
                   appends=SimpleNamespace(append_markers=append_markers)),
               config=SimpleNamespace(request_timeout_ms=1000), group_coordinator=None)
    w = api(K.WRITE_TXN_MARKERS).request.structs
    r = call(b, K.WRITE_TXN_MARKERS, 1, req(K.WRITE_TXN_MARKERS, markers=[
        w["WritableTxnMarker"].new(producer_id=5, producer_epoch=0, transaction_result=True,
                                   coordinator_epoch=0, topics=[w["WritableTxnMarkerTopic"].new(
                                       name="t", partition_indexes=[0])])]))
    assert r.markers[0].topics[0].partitions[0].error_code == 0 and len(calls) == 1


# ---- producers ------------------------------------------------------------------------------

def test_init_producer_id_without_transactional_id() -> None:
    class Ids:
        async def generate_producer_id(self) -> int:
            return 42
    def init(acls: Any, allow_everyone: bool = False) -> Struct:
        b = broker(authorizer(acls, allow_everyone=allow_everyone), producer_ids=Ids())
        return call(b, K.INIT_PRODUCER_ID, 4, req(K.INIT_PRODUCER_ID, transactional_id=None,
                                                  transaction_timeout_ms=1000))
    refused = init({(RT.TOPIC, "t"): [(Op.READ, Perm.ALLOW)]})
    assert (refused.error_code, refused.producer_id, refused.producer_epoch) == (
        E.CLUSTER_AUTHORIZATION_FAILED, -1, -1)
    assert init({CLUSTER: [(Op.IDEMPOTENT_WRITE, Perm.ALLOW)]}).producer_id == 42
    assert init({ResourcePattern(RT.TOPIC, "logs-", PT.PREFIXED): [(Op.WRITE, Perm.ALLOW)]}
                ).producer_id == 42                  # KIP-679: WRITE on some topic
    assert init({}, allow_everyone=True).producer_id == 42
    denied_tid = call(broker(authorizer({(RT.TRANSACTIONAL_ID, ""): [(Op.WRITE, Perm.DENY)]})),
                      K.INIT_PRODUCER_ID, 4, req(K.INIT_PRODUCER_ID, transactional_id="",
                                                 transaction_timeout_ms=1000))
    assert denied_tid.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def _produce(tid: str | None, transactional: bool) -> Struct:
    batch = build_batch([(b"k", b"v", 1)], producer_id=7, producer_epoch=0, base_sequence=0,
                        transactional=transactional)
    return req(K.PRODUCE, transactional_id=tid, acks=1, timeout_ms=1000, topic_data=[
        st(K.PRODUCE, "TopicProduceData", name="t", partition_data=[
            st(K.PRODUCE, "PartitionProduceData", index=0, records=bytes(batch))])])


def test_produce_checks_the_transactional_id_only_for_transactional_batches() -> None:
    appended: list[Any] = []

    async def append_records(acks: int, timeout: int, entries: dict[Any, Any], **kw: Any
                             ) -> dict[Any, Any]:
        appended.append(sorted(entries))
        return {tp: ProduceResult(0, base_offset=0, log_start_offset=0) for tp in entries}
    b = broker(authorizer({(RT.TRANSACTIONAL_ID, "tx"): [(Op.WRITE, Perm.DENY)]}),
               replicas=SimpleNamespace(
                   appends=SimpleNamespace(append_records=append_records)))
    r = call(b, K.PRODUCE, 9, _produce("tx", transactional=True))
    assert r.responses[0].partition_responses[0].error_code == \
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    r = call(b, K.PRODUCE, 9, _produce(None, transactional=True))
    assert r.responses[0].partition_responses[0].error_code == \
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    r = call(b, K.PRODUCE, 9, _produce("tx", transactional=False))   # idempotent: no check
    assert r.responses[0].partition_responses[0].error_code == 0
    assert appended == [[], [], [("t", 0)]]


# ---- reads and admin ------------------------------------------------------------------------

def test_offset_for_leader_epoch_cluster_action_or_describe() -> None:
    o = api(K.OFFSET_FOR_LEADER_EPOCH).request.structs
    body = req(K.OFFSET_FOR_LEADER_EPOCH, replica_id=2, topics=[
        o["OffsetForLeaderTopic"].new(topic="t", partitions=[
            o["OffsetForLeaderPartition"].new(partition=0, current_leader_epoch=-1,
                                              leader_epoch=0)])])
    b = broker(authorizer({**NO_CLUSTER_ACTION, (RT.TOPIC, "t"): [(Op.DESCRIBE, Perm.DENY)]}))
    r = call(b, K.OFFSET_FOR_LEADER_EPOCH, 4, body)
    p = r.topics[0].partitions[0]
    assert (p.error_code, p.leader_epoch, p.end_offset) == (E.TOPIC_AUTHORIZATION_FAILED, -1, -1)


def test_cluster_admin_apis_need_their_cluster_operation() -> None:
    b = broker(authorizer({CLUSTER: [(Op.ALTER, Perm.DENY), (Op.DESCRIBE, Perm.DENY)]}))
    e = api(K.ELECT_LEADERS).request.structs
    elect = call(b, K.ELECT_LEADERS, 2, req(K.ELECT_LEADERS, topic_partitions=[
        e["TopicPartitions"].new(topic="t", partitions=[0])]))
    assert elect.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    assert [(p.partition_id, p.error_code, p.error_message)
            for r in elect.replica_election_results for p in r.partition_result] == [
        (0, E.CLUSTER_AUTHORIZATION_FAILED, None)]
    a = api(K.ALTER_PARTITION_REASSIGNMENTS).request.structs
    alter = call(b, K.ALTER_PARTITION_REASSIGNMENTS, 0, req(
        K.ALTER_PARTITION_REASSIGNMENTS, topics=[a["ReassignableTopic"].new(name="t", partitions=[
            a["ReassignablePartition"].new(partition_index=0, replicas=[1])])]))
    assert alter.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    assert alter.responses[0].partitions[0].error_code == E.CLUSTER_AUTHORIZATION_FAILED
    assert "is not authorized" in alter.error_message
    listed = call(b, K.LIST_PARTITION_REASSIGNMENTS, 0, req(K.LIST_PARTITION_REASSIGNMENTS,
                                                           topics=None))
    assert (listed.error_code, listed.topics) == (E.CLUSTER_AUTHORIZATION_FAILED, [])


def test_describe_cluster_operations_need_describe() -> None:
    meta = SimpleNamespace(brokers=lambda: [], controller_id=None,
                           brokers_on=lambda listener: [], broker_on=lambda i, listener: None)
    b = broker(authorizer({CLUSTER: [(Op.DESCRIBE, Perm.DENY)]}), metadata=meta)
    r = call(b, K.DESCRIBE_CLUSTER, 1, req(K.DESCRIBE_CLUSTER,
                                           include_cluster_authorized_operations=True))
    assert (r.error_code, r.cluster_authorized_operations) == (0, 0)
