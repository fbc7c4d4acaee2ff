"""ACL checks inside the admin handlers (Metadata, CreateTopics, DeleteTopics,
CreatePartitions, DescribeConfigs, AlterConfigs) with an authorizer whose cache
holds the ACLs, over the in-memory fakes of test_admin_handlers; and the
DescribeConfigs BROKER rows' ReadOnly flags (Kafka 3.9's dynamic keys)."""

from __future__ import annotations

from broker.acl.acl_model import (AccessControlEntry, AclOperation, PatternType,
                                  PermissionType, ResourcePattern, ResourceType)
from broker.acl.acl_store import VersionedAcls
from broker.acl.authorizer import AclAuthorizer
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.unit.broker.test_admin_handlers import (FakeBroker, call, describe_configs,
                                                   make_broker, md_topic, request, struct)

Op, Perm = AclOperation, PermissionType
TOPIC_AUTH = ErrorCode.TOPIC_AUTHORIZATION_FAILED
CLUSTER_AUTH = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def with_acls(b: FakeBroker, acls: dict[tuple[ResourceType, str], list[tuple[Op, Perm]]],
              allow_everyone: bool = True) -> FakeBroker:
    auth = AclAuthorizer(None, (), allow_everyone)  # type: ignore[arg-type]
    for (rtype, name), entries in acls.items():
        auth.store.cache.put(ResourcePattern(rtype, name, PatternType.LITERAL), VersionedAcls(
            frozenset(AccessControlEntry("User:*", "*", op, perm) for op, perm in entries), 0))
    b.authorizer = auth
    return b


def test_metadata_hides_and_refuses_undescribable_topics() -> None:
    b = make_broker()
    for t in ("open", "secret", "readable"):
        b.cluster.add_topic(t, {0: [1]})
    with_acls(b, {(ResourceType.TOPIC, "secret"): [(Op.ALL, Perm.DENY)],
                  (ResourceType.TOPIC, "readable"): [(Op.READ, Perm.ALLOW)],
                  (ResourceType.CLUSTER, "kafka-cluster"): [(Op.CREATE, Perm.DENY)],
                  (ResourceType.TOPIC, "new"): [(Op.CREATE, Perm.DENY),
                                                (Op.DESCRIBE, Perm.ALLOW)]})
    every = call(b, ApiKey.METADATA, 1, request(ApiKey.METADATA, topics=None))
    assert sorted(t.name for t in every.topics) == ["open", "readable"]
    named = call(b, ApiKey.METADATA, 4, request(
        ApiKey.METADATA, topics=[md_topic(n) for n in ("secret", "readable", "new")],
        allow_auto_topic_creation=True))
    assert {t.name: t.error_code for t in named.topics} == {
        "secret": TOPIC_AUTH, "readable": 0, "new": TOPIC_AUTH}   # READ implies DESCRIBE
    ops = call(b, ApiKey.METADATA, 8, request(
        ApiKey.METADATA, topics=[md_topic("readable")], include_topic_authorized_operations=True))
    assert ops.topics[0].topic_authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)


def test_admin_apis_refuse_without_the_operation() -> None:
    b = make_broker()
    b.cluster.add_topic("t", {0: [1]})
    with_acls(b, {(ResourceType.TOPIC, "t"): [(Op.DESCRIBE, Perm.ALLOW)],
                  (ResourceType.TOPIC, "u"): [(Op.CREATE, Perm.DENY)],
                  (ResourceType.CLUSTER, "kafka-cluster"): [(Op.DESCRIBE_CONFIGS, Perm.DENY)]})
    k = ApiKey.CREATE_TOPICS
    created = call(b, k, 5, request(k, topics=[
        struct(k, "CreatableTopic", name=n, num_partitions=1, replication_factor=1)
        for n in ("u", "v")], timeout_ms=0, validate_only=True))
    assert [(t.name, t.error_code) for t in created.topics] == [("u", TOPIC_AUTH), ("v", 0)]
    k = ApiKey.DELETE_TOPICS
    deleted = call(b, k, 4, request(k, topic_names=["t"], timeout_ms=0))
    assert [r.error_code for r in deleted.responses] == [TOPIC_AUTH]
    k = ApiKey.CREATE_PARTITIONS
    grown = call(b, k, 1, request(k, topics=[struct(k, "CreatePartitionsTopic", name="t",
                                                    count=2, assignments=None)],
                                  timeout_ms=0, validate_only=True))
    assert [r.error_code for r in grown.results] == [TOPIC_AUTH]
    assert describe_configs(b, 1, 2, "t").error_code == TOPIC_AUTH
    assert describe_configs(b, 1, 4, "1").error_code == CLUSTER_AUTH
    k = ApiKey.ALTER_CONFIGS
    altered = call(b, k, 1, request(k, resources=[struct(
        k, "AlterConfigsResource", resource_type=2, resource_name="t", configs=[])],
        validate_only=True))
    assert [r.error_code for r in altered.responses] == [TOPIC_AUTH]


def test_broker_rows_read_only_as_kafka_3_9() -> None:
    rows = {c.name: c for c in describe_configs(make_broker(), 3, 4, "1").configs}
    adv = rows["advertised.listeners"]
    assert (adv.read_only, adv.config_source, adv.value, adv.synonyms) == (False, 5, None, [])
    assert rows["listeners"].read_only is False
    assert rows["message.max.bytes"].read_only is False
    assert rows["log.retention.hours"].read_only is True     # log.retention.ms is the dynamic one
    assert rows["broker.id"].read_only is True
    assert rows["zookeeper.connect"].read_only is True
