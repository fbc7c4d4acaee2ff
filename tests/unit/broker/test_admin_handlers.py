"""Admin handlers (Metadata, CreateTopics, DeleteTopics, CreatePartitions, the
config APIs, DescribeCluster) against in-memory fakes of the ClusterStore and
the metadata cache. Every call goes through the codec at the version under
test, both ways, so fields a version lacks really are absent."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from broker.config import BrokerConfig
from broker.context import RequestContext
from broker.dispatch import REGISTRY, load_handlers
from broker.handler_support import CLUSTER_OPERATIONS, TOPIC_OPERATIONS
from broker.metadata_cache import BrokerMeta, PartitionMeta
from broker.replication.leader_fence import LeaderFence
from controller import BrokerInfo, Endpoint, TopicAlreadyExists, TopicAssignment, TopicNotFound
from protocol.api_keys import ApiKey
from protocol.codec import decode, encode
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.schema import ZERO_UUID, Struct
from protocol.spec import api
from tests.unit.broker.replication.fakes import FakeConnection

MIN_INT = -2147483648


class FakeMetadata:
    def __init__(self, brokers: list[int], controller_id: int | None = None) -> None:
        self._brokers = {b: BrokerMeta(b, f"host{b}", 9000 + b, None) for b in brokers}
        self._parts: dict[str, dict[int, PartitionMeta]] = {}
        self._ids: dict[str, uuid.UUID] = {}
        self.controller_id = controller_id

    async def wait_received(self, timeout_s: float) -> bool:
        return True                     # the controller's UpdateMetadata came

    def topics(self) -> list[str]:
        return sorted(self._parts)

    def has_topic(self, name: str) -> bool:
        return name in self._parts

    def topic_id(self, name: str) -> uuid.UUID | None:
        return self._ids.get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, t in self._ids.items() if t == topic_id), None)

    def partitions(self, topic: str) -> list[PartitionMeta]:
        return [p for _, p in sorted(self._parts.get(topic, {}).items())]

    def brokers(self) -> list[BrokerMeta]:
        return [b for _, b in sorted(self._brokers.items())]

    def broker(self, broker_id: int) -> BrokerMeta | None:
        return self._brokers.get(broker_id)

    def brokers_on(self, _listener: str) -> list[BrokerMeta]:
        return self.brokers()

    def broker_on(self, broker_id: int, _listener: str) -> BrokerMeta | None:
        return self.broker(broker_id)

    # -- what the controller's UpdateMetadata would do
    def put_topic(self, name: str, assignment: dict[int, list[int]],
                  topic_id: uuid.UUID | None = None, leader: bool = True) -> None:
        self._ids[name] = topic_id or uuid.uuid4()
        parts = self._parts.setdefault(name, {})
        for p, replicas in assignment.items():
            lead = replicas[0] if leader else -1
            parts[p] = PartitionMeta(p, lead, 0, tuple(replicas), tuple(replicas))

    def drop_topic(self, name: str) -> None:
        self._parts.pop(name, None)
        self._ids.pop(name, None)


class FakeCluster:
    """ClusterStore in memory. With ``elect``, a change is mirrored into the
    metadata cache shortly after, as the controller would."""

    def __init__(self, metadata: FakeMetadata, brokers: list[int], elect: bool = True) -> None:
        self.metadata = metadata
        self.brokers = [BrokerInfo(b, (Endpoint("PLAINTEXT", f"host{b}", 9000 + b),))
                        for b in brokers]
        self.topics: dict[str, TopicAssignment] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.deleting: set[str] = set()
        self.notifications: list[str] = []
        self.elect = elect
        self.cluster_id_reads = 0

    def _later(self, fn: Any) -> None:
        if self.elect:
            asyncio.get_running_loop().call_later(0.02, fn)

    async def cluster_id(self) -> str:
        self.cluster_id_reads += 1
        return "fake-cluster-id"

    async def live_brokers(self) -> list[BrokerInfo]:
        return list(self.brokers)

    async def create_topic(self, name: str, assignment: dict[int, list[int]],
                           configs: dict[str, str] | None = None) -> uuid.UUID:
        if name in self.topics:
            raise TopicAlreadyExists(f"Topic '{name}' already exists.")
        tid = uuid.uuid4()
        self.topics[name] = TopicAssignment(tid, dict(assignment))
        self.configs[name] = dict(configs or {})
        self._later(lambda: self.metadata.put_topic(name, assignment, tid))
        return tid

    def add_topic(self, name: str, assignment: dict[int, list[int]],
                  configs: dict[str, str] | None = None) -> uuid.UUID:
        """A topic that already exists everywhere (ZooKeeper and the cache)."""
        tid = uuid.uuid4()
        self.topics[name] = TopicAssignment(tid, dict(assignment))
        self.configs[name] = dict(configs or {})
        self.metadata.put_topic(name, assignment, tid)
        return tid

    async def read_topics(self, names: list[str] | None = None) -> dict[str, TopicAssignment]:
        return {n: self.topics[n] for n in (names or self.topics) if n in self.topics}

    async def add_partitions(self, name: str, new_assignment: dict[int, list[int]]) -> None:
        if name not in self.topics:
            raise TopicNotFound(name)
        cur = self.topics[name]
        merged = {**new_assignment, **cur.partitions}
        cur.partitions = merged
        self._later(lambda: self.metadata.put_topic(name, merged, cur.topic_id))

    async def delete_topic(self, name: str) -> None:
        if name not in self.topics:
            raise TopicNotFound(name)
        self.deleting.add(name)

        def done() -> None:
            self.topics.pop(name, None)
            self.metadata.drop_topic(name)
        self._later(done)

    async def topics_to_delete(self) -> list[str]:
        return sorted(self.deleting)

    async def get_data(self, path: str) -> tuple[bytes, int] | None:
        return None         # no /config/brokers/<id> or <default> entry stored

    async def topic_configs(self, name: str) -> dict[str, str]:
        return dict(self.configs.get(name, {}))

    async def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        if name not in self.topics:
            raise TopicNotFound(name)
        self.configs[name] = dict(configs)
        self.notifications.append(name)


@dataclass
class FakeBroker:
    config: BrokerConfig
    metadata: FakeMetadata
    cluster: FakeCluster
    extra: dict[str, Any] = field(default_factory=dict)
    authorizer: Any = None                   # the ACL tests set one
    cluster_id: str = "fake-cluster-id"      # /cluster/id, as the Broker read it at start
    dynamic_configs: dict[str, str] = field(default_factory=dict)     # /config/brokers/<id>
    listener_security: dict[str, Any] = field(default_factory=dict)   # no TLS listener
    replicas: Any = field(default_factory=lambda: FakeReplicas())   # nothing led, nothing fenced
    dynamic_default_configs: dict[str, str] = field(default_factory=dict)  # .../<default>
    broker_id: int = field(init=False)
    static_config: BrokerConfig = field(init=False)     # the dynamic layers' base

    def __post_init__(self) -> None:
        self.broker_id = self.config.broker_id
        self.static_config = self.config

    @property
    def dynamic_config_host(self) -> FakeBroker:
        """The same object, as Broker: the dynamic configs see the broker itself."""
        return self


@dataclass
class FakeReplicas:
    """What the admin handlers read of the replica manager: its leader fence (the
    Metadata handler answers fenced partitions leaderless) and its clock."""
    fence: LeaderFence = field(default_factory=lambda: LeaderFence(1))

    def clock(self) -> int:
        return 0

    def partition(self, topic: str, partition: int) -> None:
        return None


def make_broker(brokers: tuple[int, ...] = (1,), elect: bool = True, **props: str) -> FakeBroker:
    settings = {"broker.id": str(brokers[0])}
    settings.update({k.replace("_", "."): v for k, v in props.items()})
    metadata = FakeMetadata(list(brokers), controller_id=brokers[0])
    return FakeBroker(BrokerConfig.from_properties(settings), metadata,
                      FakeCluster(metadata, list(brokers), elect))


def request(api_key: int, **fields: Any) -> Struct:
    return api(api_key).request.new(**fields)


def struct(api_key: int, struct_name: str, **fields: Any) -> Struct:
    return api(api_key).request.structs[struct_name].new(**fields)


def call(broker: FakeBroker, api_key: int, version: int, body: Struct) -> Struct:
    """Encode the request at ``version`` (dropping what that version lacks),
    run the handler, and decode its response from the bytes of that version."""
    load_handlers()
    spec = api(api_key)
    wire_request = decode(spec.request, encode(body, version), version)
    header = RequestHeader(api_key, version, 1, "test")
    ctx = RequestContext(header=header, connection=FakeConnection(), broker=broker)  # type: ignore[arg-type]
    response = asyncio.run(REGISTRY[api_key].fn(ctx, wire_request))
    assert response is not None
    return decode(spec.response, encode(response, version), version)


# ---- helpers for building requests ---------------------------------------------------------

def md_topic(name: str | None, topic_id: uuid.UUID = ZERO_UUID) -> Struct:
    return struct(ApiKey.METADATA, "MetadataRequestTopic", name=name, topic_id=topic_id)


def metadata(broker: FakeBroker, version: int, topics: list[Struct] | None,
             **kw: Any) -> Struct:
    return call(broker, ApiKey.METADATA, version, request(ApiKey.METADATA, topics=topics, **kw))


def creatable(name: str, partitions: int = 1, rf: int = 1,
              assignment: dict[int, list[int]] | None = None,
              configs: dict[str, str | None] | None = None) -> Struct:
    k = ApiKey.CREATE_TOPICS
    return struct(k, "CreatableTopic", name=name, num_partitions=partitions,
                  replication_factor=rf,
                  assignments=[struct(k, "CreatableReplicaAssignment", partition_index=p,
                                      broker_ids=b) for p, b in (assignment or {}).items()],
                  configs=[struct(k, "CreatableTopicConfig", name=n, value=v)
                           for n, v in (configs or {}).items()])


def create(broker: FakeBroker, version: int, *topics: Struct, timeout_ms: int = 2000,
           validate_only: bool = False) -> list[Struct]:
    body = request(ApiKey.CREATE_TOPICS, topics=list(topics), timeout_ms=timeout_ms,
                   validate_only=validate_only)
    return call(broker, ApiKey.CREATE_TOPICS, version, body).topics


def errors(results: list[Struct]) -> list[int]:
    return [r.error_code for r in results]


# ---- Metadata --------------------------------------------------------------------------------

def test_metadata_all_topics_v0_empty_list_v1_null() -> None:
    b = make_broker()
    b.cluster.add_topic("b", {0: [1]})
    b.cluster.add_topic("a", {0: [1], 1: [1]})
    assert [t.name for t in metadata(b, 0, []).topics] == ["a", "b"]
    assert [t.name for t in metadata(b, 1, None).topics] == ["a", "b"]
    assert metadata(b, 1, []).topics == []          # v1+: empty means none


def test_metadata_fields_by_version() -> None:
    b = make_broker(brokers=(1, 2))
    tid = b.cluster.add_topic("t", {0: [2, 1]})
    v0 = metadata(b, 0, [md_topic("t")])
    assert [(x.node_id, x.host, x.port) for x in v0.brokers] == [(1, "host1", 9001),
                                                                (2, "host2", 9002)]
    p = v0.topics[0].partitions[0]
    assert (p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes) == (0, 2, [2, 1], [2, 1])
    assert p.leader_epoch == -1                       # absent before v7
    v1 = metadata(b, 1, [md_topic("t")])
    assert v1.controller_id == 1 and v1.cluster_id is None
    assert metadata(b, 2, [md_topic("t")]).cluster_id == "fake-cluster-id"
    assert metadata(b, 7, [md_topic("t")]).topics[0].partitions[0].leader_epoch == 0
    assert metadata(b, 9, [md_topic("t")]).topics[0].topic_id == ZERO_UUID
    v10 = metadata(b, 10, [md_topic("t")])
    assert v10.topics[0].topic_id == tid
    assert v10.topics[0].topic_authorized_operations == MIN_INT
    asked = metadata(b, 8, [md_topic("t")], include_topic_authorized_operations=True,
                     include_cluster_authorized_operations=True)
    assert asked.topics[0].topic_authorized_operations == TOPIC_OPERATIONS == 3576
    assert asked.cluster_authorized_operations == CLUSTER_OPERATIONS
    v11 = metadata(b, 11, [md_topic("t")], include_cluster_authorized_operations=True)
    assert v11.cluster_authorized_operations == MIN_INT   # gone from v11
    assert b.cluster.cluster_id_reads == 0     # the broker's id: ZooKeeper is not asked


def test_metadata_internal_flag() -> None:
    b = make_broker()
    b.cluster.add_topic("__consumer_offsets", {0: [1]})
    assert metadata(b, 1, None).topics[0].is_internal is True


def test_metadata_leader_not_live_and_v0_replica_filtering() -> None:
    b = make_broker(brokers=(1, 2))
    b.metadata.put_topic("t", {0: [3, 1], 1: [1, 3]})   # broker 3 is not live
    p0, p1 = metadata(b, 1, [md_topic("t")]).topics[0].partitions
    assert (p0.error_code, p0.leader_id) == (ErrorCode.LEADER_NOT_AVAILABLE, -1)
    assert (p1.error_code, p1.leader_id, p1.replica_nodes) == (0, 1, [1, 3])
    old0, old1 = metadata(b, 0, [md_topic("t")]).topics[0].partitions
    assert (old1.error_code, old1.replica_nodes) == (ErrorCode.REPLICA_NOT_AVAILABLE, [1])
    assert old0.error_code == ErrorCode.LEADER_NOT_AVAILABLE


def test_metadata_auto_creates_with_broker_defaults() -> None:
    b = make_broker(num_partitions="3")
    t = metadata(b, 4, [md_topic("fresh")]).topics[0]
    assert (t.name, t.error_code, t.partitions) == ("fresh", ErrorCode.LEADER_NOT_AVAILABLE, [])
    assert sorted(b.cluster.topics["fresh"].partitions) == [0, 1, 2]
    # v0-3 have no AllowAutoTopicCreation: creation is always allowed
    assert metadata(b, 1, [md_topic("older")]).topics[0].error_code == \
        ErrorCode.LEADER_NOT_AVAILABLE
    assert "older" in b.cluster.topics


def test_metadata_no_auto_create() -> None:
    b = make_broker()
    t = metadata(b, 4, [md_topic("x")], allow_auto_topic_creation=False).topics[0]
    assert t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and "x" not in b.cluster.topics
    off = make_broker(auto_create_topics_enable="false")
    assert metadata(off, 12, [md_topic("x")]).topics[0].error_code == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert off.cluster.topics == {}


def test_metadata_bad_name_and_failed_auto_create() -> None:
    b = make_broker()
    assert metadata(b, 4, [md_topic("bad/name")]).topics[0].error_code == \
        ErrorCode.INVALID_TOPIC_EXCEPTION
    assert metadata(b, 4, [md_topic("bad/name")], allow_auto_topic_creation=False) \
        .topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    rf3 = make_broker(default_replication_factor="3")
    assert metadata(rf3, 4, [md_topic("t")]).topics[0].error_code == \
        ErrorCode.INVALID_REPLICATION_FACTOR
    assert rf3.cluster.topics == {}


def test_metadata_auto_creates_offsets_topic_with_its_settings() -> None:
    b = make_broker(offsets_topic_num_partitions="5", offsets_topic_replication_factor="1")
    metadata(b, 9, [md_topic("__consumer_offsets")])
    assert len(b.cluster.topics["__consumer_offsets"].partitions) == 5
    assert b.cluster.configs["__consumer_offsets"]["cleanup.policy"] == "compact"


def test_metadata_topic_ids_v12_and_refused_before() -> None:
    b = make_broker()
    tid = b.cluster.add_topic("t", {0: [1]})
    missing = uuid.uuid4()
    r = metadata(b, 12, [md_topic(None, tid), md_topic(None, missing)])
    by_err = {t.error_code: t for t in r.topics}
    assert by_err[0].name == "t" and by_err[0].topic_id == tid
    assert by_err[ErrorCode.UNKNOWN_TOPIC_ID].name is None
    assert by_err[ErrorCode.UNKNOWN_TOPIC_ID].topic_id == missing
    r10 = metadata(b, 10, [md_topic("t", tid)])
    assert errors(r10.topics) == [ErrorCode.INVALID_REQUEST]
    assert errors(metadata(b, 11, [md_topic(None)]).topics) == [ErrorCode.INVALID_REQUEST]


# ---- DescribeCluster -------------------------------------------------------------------------

def describe_cluster(b: FakeBroker, version: int, **kw: Any) -> Struct:
    return call(b, ApiKey.DESCRIBE_CLUSTER, version, request(ApiKey.DESCRIBE_CLUSTER, **kw))


def test_describe_cluster() -> None:
    b = make_broker(brokers=(1, 2))
    r = describe_cluster(b, 0)
    assert (r.error_code, r.cluster_id, r.controller_id) == (0, "fake-cluster-id", 1)
    assert [(x.broker_id, x.port) for x in r.brokers] == [(1, 9001), (2, 9002)]
    assert r.cluster_authorized_operations == MIN_INT
    assert describe_cluster(b, 1, include_cluster_authorized_operations=True) \
        .cluster_authorized_operations == CLUSTER_OPERATIONS
    assert describe_cluster(b, 1, endpoint_type=2).error_code == \
        ErrorCode.MISMATCHED_ENDPOINT_TYPE
    assert describe_cluster(b, 1, endpoint_type=7).error_code == \
        ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    b.metadata.controller_id = 9                     # not a live broker -> -1
    assert describe_cluster(b, 1).controller_id == -1


# ---- CreateTopics ----------------------------------------------------------------------------

def test_create_topic_v7_waits_for_leaders_and_echoes() -> None:
    b = make_broker(brokers=(1, 2, 3))
    [r] = create(b, 7, creatable("t", 4, 2, configs={"retention.ms": "1000"}))
    assert (r.error_code, r.num_partitions, r.replication_factor) == (0, 4, 2)
    assert r.topic_id == b.cluster.topics["t"].topic_id != ZERO_UUID
    assert b.metadata.has_topic("t")                  # answered after the leaders appeared
    configs = {c.name: c for c in r.configs}
    assert configs["retention.ms"].value == "1000" and configs["retention.ms"].config_source == 1
    assert configs["segment.bytes"].config_source == 5
    assert b.cluster.configs["t"] == {"retention.ms": "1000"}
    assert all(len(set(rs)) == 2 for rs in b.cluster.topics["t"].partitions.values())


def test_create_topic_v4_defaults_and_v4_vs_v5_fields() -> None:
    b = make_broker(num_partitions="3")
    [r4] = create(b, 4, creatable("a", -1, -1))
    assert r4.error_code == 0 and len(b.cluster.topics["a"].partitions) == 3
    assert (r4.num_partitions, r4.configs) == (-1, [])   # v5+ only
    [r5] = create(b, 5, creatable("b", -1, -1))
    assert (r5.num_partitions, r5.replication_factor, r5.topic_id) == (3, 1, ZERO_UUID)


@pytest.mark.parametrize("topic, error", [
    (creatable("t", 1, 3), ErrorCode.INVALID_REPLICATION_FACTOR),
    (creatable("t", 1, 0), ErrorCode.INVALID_REPLICATION_FACTOR),
    (creatable("t", 0, 1), ErrorCode.INVALID_PARTITIONS),
    (creatable("t", 2**31 - 1, 1), ErrorCode.POLICY_VIOLATION),    # the fuzzer's count
    (creatable("t", configs={"no.such.key": "1"}), ErrorCode.INVALID_CONFIG),
    (creatable("t", configs={"retention.ms": "soon"}), ErrorCode.INVALID_CONFIG),
    (creatable("t", configs={"cleanup.policy": "compact,shred"}), ErrorCode.INVALID_CONFIG),
    (creatable("t", configs={"retention.ms": None}), ErrorCode.INVALID_CONFIG),
    (creatable("t", -1, -1, {0: [1], 1: [1, 2]}), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (creatable("t", -1, -1, {0: [1, 1]}), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (creatable("t", -1, -1, {0: [1], 2: [1]}), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (creatable("t", 1, 1, {0: [1]}), ErrorCode.INVALID_REQUEST),
    (creatable("bad name"), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (creatable("x" * 250), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (creatable(".."), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (creatable("__cluster_metadata"), ErrorCode.INVALID_REQUEST),
])
def test_create_topic_errors(topic: Struct, error: int) -> None:
    b = make_broker(brokers=(1, 2))
    [r] = create(b, 7, topic)
    assert r.error_code == error and r.error_message
    assert (r.num_partitions, r.configs) == (-1, [])
    assert b.cluster.topics == {}


def test_create_topic_already_exists_and_collision() -> None:
    b = make_broker()
    b.cluster.add_topic("a.b", {0: [1]})
    assert errors(create(b, 3, creatable("a.b"))) == [ErrorCode.TOPIC_ALREADY_EXISTS]
    [r] = create(b, 3, creatable("a_b"))
    assert r.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION and "a.b" in r.error_message
    b.cluster.topics["zk-only"] = TopicAssignment(None, {0: [1]})   # not yet in the cache
    assert errors(create(b, 3, creatable("zk-only"))) == [ErrorCode.TOPIC_ALREADY_EXISTS]


def test_create_topic_explicit_assignment_and_duplicates() -> None:
    b = make_broker(brokers=(1, 2))
    results = create(b, 7, creatable("t", -1, -1, {0: [2, 1], 1: [1, 2]}),
                     creatable("d"), creatable("d"))
    assert errors(results) == [0, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST]
    assert b.cluster.topics["t"].partitions == {0: [2, 1], 1: [1, 2]}
    assert "d" not in b.cluster.topics


def test_create_topic_validate_only_writes_nothing() -> None:
    b = make_broker()
    [r] = create(b, 5, creatable("t", 2, 1), validate_only=True)
    assert (r.error_code, r.num_partitions) == (0, 2)
    assert b.cluster.topics == {}


def test_create_topic_times_out_without_leaders() -> None:
    b = make_broker(elect=False)
    [r] = create(b, 7, creatable("t"), timeout_ms=50)
    assert r.error_code == ErrorCode.REQUEST_TIMED_OUT and "t" in b.cluster.topics
    [z] = create(make_broker(), 2, creatable("u"), timeout_ms=0)   # Kafka's quirk
    assert z.error_code == ErrorCode.REQUEST_TIMED_OUT


# ---- DeleteTopics ----------------------------------------------------------------------------

def delete(b: FakeBroker, version: int, names: list[str] | None = None,
           states: list[tuple[str | None, uuid.UUID]] | None = None,
           timeout_ms: int = 2000) -> list[Struct]:
    k = ApiKey.DELETE_TOPICS
    body = request(k, topic_names=names or [], timeout_ms=timeout_ms, topics=[
        struct(k, "DeleteTopicState", name=n, topic_id=i) for n, i in (states or [])])
    return call(b, k, version, body).responses


def test_delete_topics_by_name() -> None:
    b = make_broker()
    b.cluster.add_topic("t", {0: [1]})
    r = delete(b, 1, ["t", "nope"])
    assert [(x.name, x.error_code) for x in r] == [
        ("t", 0), ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert not b.metadata.has_topic("t") and "t" in b.cluster.deleting


def test_delete_topics_by_id_v6() -> None:
    b = make_broker()
    tid = b.cluster.add_topic("t", {0: [1]})
    missing = uuid.uuid4()
    r = delete(b, 6, states=[(None, tid), (None, missing)])
    assert [(x.name, x.topic_id, x.error_code) for x in r] == [
        ("t", tid, 0), (None, missing, ErrorCode.UNKNOWN_TOPIC_ID)]
    both = delete(b, 6, states=[("t", tid)])
    assert errors(both) == [ErrorCode.INVALID_REQUEST]


def test_delete_topics_disabled_and_timeout() -> None:
    off = make_broker(delete_topic_enable="false")
    off.cluster.add_topic("t", {0: [1]})
    assert errors(delete(off, 2, ["t"])) == [ErrorCode.INVALID_REQUEST]
    assert errors(delete(off, 3, ["t"])) == [ErrorCode.TOPIC_DELETION_DISABLED]
    assert off.cluster.deleting == set()
    slow = make_broker(elect=False)
    slow.cluster.add_topic("t", {0: [1]})
    assert errors(delete(slow, 4, ["t"], timeout_ms=30)) == [ErrorCode.REQUEST_TIMED_OUT]
    assert "t" in slow.cluster.deleting


# ---- CreatePartitions ------------------------------------------------------------------------

def grow(b: FakeBroker, version: int, name: str, count: int,
         assignments: list[list[int]] | None = None, validate_only: bool = False,
         timeout_ms: int = 2000, twice: bool = False) -> list[Struct]:
    k = ApiKey.CREATE_PARTITIONS
    topic = struct(k, "CreatePartitionsTopic", name=name, count=count, assignments=None
                   if assignments is None else [struct(k, "CreatePartitionsAssignment",
                                                       broker_ids=a) for a in assignments])
    body = request(k, topics=[topic] * (2 if twice else 1), timeout_ms=timeout_ms,
                   validate_only=validate_only)
    return call(b, k, version, body).results


def test_create_partitions_placed_and_explicit() -> None:
    b = make_broker(brokers=(1, 2, 3))
    b.cluster.add_topic("t", {0: [2, 3]})
    assert errors(grow(b, 0, "t", 3)) == [0]
    parts = b.cluster.topics["t"].partitions
    assert sorted(parts) == [0, 1, 2] and parts[0] == [2, 3]
    assert all(len(set(r)) == 2 for r in parts.values())
    assert len(b.metadata.partitions("t")) == 3
    assert errors(grow(b, 3, "t", 4, [[1, 3]])) == [0]
    assert b.cluster.topics["t"].partitions[3] == [1, 3]


@pytest.mark.parametrize("name, count, assignments, error", [
    ("nope", 2, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ("t", 2, None, ErrorCode.INVALID_PARTITIONS),
    ("t", 1, None, ErrorCode.INVALID_PARTITIONS),
    ("t", 10_003, None, ErrorCode.POLICY_VIOLATION),                # 10,001 new
    ("t", 4, [[1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),          # 2 new, 1 list
    ("t", 3, [[1, 9]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),       # unknown broker
    ("t", 3, [[1, 1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),       # duplicate
    ("t", 3, [[1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),          # rf 1 vs 2
])
def test_create_partitions_errors(name: str, count: int, assignments: list[list[int]] | None,
                                  error: int) -> None:
    b = make_broker(brokers=(1, 2))
    b.cluster.add_topic("t", {0: [1, 2], 1: [2, 1]})
    [r] = grow(b, 2, name, count, assignments)
    assert r.error_code == error and r.error_message
    assert len(b.cluster.topics["t"].partitions) == 2


def test_create_partitions_duplicate_validate_only_reassigning() -> None:
    b = make_broker()
    b.cluster.add_topic("t", {0: [1]})
    assert errors(grow(b, 1, "t", 2, twice=True)) == [ErrorCode.INVALID_REQUEST] * 2
    assert errors(grow(b, 1, "t", 5, validate_only=True)) == [0]
    assert len(b.cluster.topics["t"].partitions) == 1
    b.cluster.topics["t"].adding = {0: [2]}
    assert errors(grow(b, 1, "t", 2)) == [ErrorCode.REASSIGNMENT_IN_PROGRESS]
    b.cluster.deleting.add("t")
    assert errors(grow(b, 1, "t", 2)) == [ErrorCode.INVALID_TOPIC_EXCEPTION]


# ---- DescribeConfigs -------------------------------------------------------------------------

def describe_configs(b: FakeBroker, version: int, rtype: int, name: str,
                     keys: list[str] | None = None, **kw: Any) -> Struct:
    k = ApiKey.DESCRIBE_CONFIGS
    res = struct(k, "DescribeConfigsResource", resource_type=rtype, resource_name=name,
                 configuration_keys=keys)
    return call(b, k, version, request(k, resources=[res], **kw)).results[0]


def test_describe_topic_configs_by_version() -> None:
    b = make_broker(log_retention_hours="24")
    b.cluster.add_topic("t", {0: [1]}, {"segment.bytes": "2048"})
    r1 = describe_configs(b, 1, 2, "t", include_synonyms=True)
    rows = {c.name: c for c in r1.configs}
    assert "retention.ms" in rows and len(rows) > 30
    seg, ret = rows["segment.bytes"], rows["retention.ms"]
    assert (seg.value, seg.config_source, seg.read_only) == ("2048", 1, False)
    assert [(s.name, s.source) for s in seg.synonyms] == [("segment.bytes", 1),
                                                        ("log.segment.bytes", 5)]
    assert (ret.value, ret.config_source) == (str(24 * 3_600_000), 4)
    assert [(s.name, s.value, s.source) for s in ret.synonyms] == [
        ("log.retention.hours", "24", 4), ("log.retention.hours", "168", 5)]
    assert describe_configs(b, 1, 2, "t").configs[0].synonyms == []   # not asked
    v0 = {c.name: c for c in describe_configs(b, 0, 2, "t", ["segment.bytes",
                                                             "flush.ms"]).configs}
    assert set(v0) == {"segment.bytes", "flush.ms"}
    assert v0["flush.ms"].is_default and not v0["segment.bytes"].is_default
    assert v0["flush.ms"].config_source == -1                        # v1+ field
    v3 = {c.name: c for c in describe_configs(b, 4, 2, "t", include_documentation=True).configs}
    assert v3["retention.ms"].config_type == 5 and v3["retention.ms"].documentation
    assert v3["cleanup.policy"].config_type == 7
    assert describe_configs(b, 3, 2, "t").configs[0].documentation is None


def test_describe_configs_errors_and_broker() -> None:
    b = make_broker(brokers=(7,), num_partitions="4")
    assert describe_configs(b, 2, 2, "nope").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert describe_configs(b, 2, 2, "a/b").error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert describe_configs(b, 2, 4, "8").error_code == ErrorCode.INVALID_REQUEST
    assert describe_configs(b, 2, 4, "").configs == []
    rows = {c.name: c for c in describe_configs(b, 2, 4, "7").configs}
    assert (rows["num.partitions"].value, rows["num.partitions"].config_source) == ("4", 4)
    assert rows["num.partitions"].read_only
    assert rows["log.retention.ms"].value is None
    assert describe_configs(b, 2, 99, "x").error_code == ErrorCode.INVALID_REQUEST


# ---- AlterConfigs / IncrementalAlterConfigs --------------------------------------------------

def alter(b: FakeBroker, version: int, rtype: int, name: str, configs: dict[str, str | None],
          validate_only: bool = False, twice: bool = False) -> list[Struct]:
    k = ApiKey.ALTER_CONFIGS
    res = struct(k, "AlterConfigsResource", resource_type=rtype, resource_name=name, configs=[
        struct(k, "AlterableConfig", name=n, value=v) for n, v in configs.items()])
    body = request(k, resources=[res] * (2 if twice else 1), validate_only=validate_only)
    return call(b, k, version, body).responses


def incremental(b: FakeBroker, version: int, name: str,
                ops: list[tuple[str, int, str | None]], rtype: int = 2,
                validate_only: bool = False) -> Struct:
    k = ApiKey.INCREMENTAL_ALTER_CONFIGS
    res = struct(k, "AlterConfigsResource", resource_type=rtype, resource_name=name, configs=[
        struct(k, "AlterableConfig", name=n, config_operation=o, value=v) for n, o, v in ops])
    return call(b, k, version, request(k, resources=[res],
                                       validate_only=validate_only)).responses[0]


def test_alter_configs_replaces_whole_set() -> None:
    b = make_broker()
    b.cluster.add_topic("t", {0: [1]}, {"retention.ms": "5"})
    assert errors(alter(b, 0, 2, "t", {"segment.bytes": "4096"})) == [0]
    assert b.cluster.configs["t"] == {"segment.bytes": "4096"}
    assert b.cluster.notifications == ["t"]
    assert errors(alter(b, 2, 2, "t", {"retention.ms": "1"}, validate_only=True)) == [0]
    assert b.cluster.configs["t"] == {"segment.bytes": "4096"}


@pytest.mark.parametrize("rtype, name, configs, error", [
    (2, "t", {"bogus": "1"}, ErrorCode.INVALID_CONFIG),
    (2, "t", {"segment.bytes": "1"}, ErrorCode.INVALID_CONFIG),        # below 14
    (2, "t", {"min.compaction.lag.ms": "9", "max.compaction.lag.ms": "5"},
     ErrorCode.INVALID_CONFIG),
    (2, "t", {"retention.ms": None}, ErrorCode.INVALID_REQUEST),
    (2, "nope", {"retention.ms": "1"}, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    (2, "", {"retention.ms": "1"}, ErrorCode.INVALID_REQUEST),
    (4, "1", {"num.partitions": "3"}, ErrorCode.INVALID_REQUEST),
    (4, "2", {}, ErrorCode.INVALID_REQUEST),
    (16, "x", {}, ErrorCode.INVALID_REQUEST),
])
def test_alter_configs_errors(rtype: int, name: str, configs: dict[str, str | None],
                              error: int) -> None:
    b = make_broker()
    b.cluster.add_topic("t", {0: [1]}, {"retention.ms": "5"})
    [r] = alter(b, 1, rtype, name, configs)
    assert r.error_code == error and r.error_message
    assert b.cluster.configs["t"] == {"retention.ms": "5"} and b.cluster.notifications == []


def test_alter_configs_duplicate_resource() -> None:
    b = make_broker()
    b.cluster.add_topic("t", {0: [1]})
    assert errors(alter(b, 1, 2, "t", {"retention.ms": "1"}, twice=True)) == \
        [ErrorCode.INVALID_REQUEST] * 2
    assert errors(alter(b, 1, 4, "", {})) == [0]


def test_incremental_alter_configs_operations() -> None:
    b = make_broker()
    b.cluster.add_topic("t", {0: [1]}, {"retention.ms": "5", "segment.bytes": "9999"})
    r = incremental(b, 1, "t", [("retention.ms", 1, None), ("flush.ms", 0, "10"),
                                ("cleanup.policy", 2, "compact")])
    assert r.error_code == 0
    assert b.cluster.configs["t"] == {"segment.bytes": "9999", "flush.ms": "10",
                                      "cleanup.policy": "delete,compact"}
    assert incremental(b, 0, "t", [("cleanup.policy", 3, "delete")]).error_code == 0
    assert b.cluster.configs["t"]["cleanup.policy"] == "compact"
    assert b.cluster.notifications == ["t", "t"]


@pytest.mark.parametrize("ops, error", [
    ([("retention.ms", 2, "1")], ErrorCode.INVALID_CONFIG),          # append to a non-list
    ([("bogus", 3, "1")], ErrorCode.INVALID_CONFIG),
    ([("bogus", 0, "1")], ErrorCode.INVALID_CONFIG),
    ([("retention.ms", 0, "x")], ErrorCode.INVALID_CONFIG),
    ([("retention.ms", 0, "1"), ("retention.ms", 1, None)], ErrorCode.INVALID_REQUEST),
    ([("retention.ms", 0, None)], ErrorCode.INVALID_REQUEST),
    ([("retention.ms", 9, "1")], ErrorCode.INVALID_REQUEST),
])
def test_incremental_alter_configs_errors(ops: list[tuple[str, int, str | None]],
                                          error: int) -> None:
    b = make_broker()
    b.cluster.add_topic("t", {0: [1]}, {"retention.ms": "5"})
    r = incremental(b, 1, "t", ops)
    assert r.error_code == error and r.error_message
    assert b.cluster.configs["t"] == {"retention.ms": "5"}


def test_incremental_alter_configs_validate_only_and_unknown_topic() -> None:
    b = make_broker()
    b.cluster.add_topic("t", {0: [1]})
    assert incremental(b, 1, "t", [("retention.ms", 0, "1")], validate_only=True) \
        .error_code == 0
    assert b.cluster.configs["t"] == {}
    assert incremental(b, 1, "gone", [("retention.ms", 0, "1")]).error_code == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
