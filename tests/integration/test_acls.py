"""ACLs end to end: two brokers running Kafka's ZooKeeper-mode AclAuthorizer
(allow.everyone.if.no.acl.found=true), ACLs managed with kafka-python's admin
client, enforced on a stock kafka-python producer.

The ACLs are created through whichever broker the admin client picks; each
broker must learn them from ZooKeeper's change notifications, so both brokers
are asked (DescribeAcls over the wire) before the producer runs. The topic has
a partition on each broker, so both brokers' enforcement is exercised.
"""

from __future__ import annotations

import time
import uuid

import pytest

from protocol.api_keys import ApiKey
from protocol.records import build_batch
from tests.integration.cluster import Cluster, MakeCluster, WireClient
from tests.integration.multi import led_in_sync

kafka = pytest.importorskip("kafka")
from kafka import KafkaProducer  # noqa: E402
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType,  # noqa: E402
                         KafkaAdminClient, NewTopic, ResourcePattern, ResourcePatternFilter,
                         ResourceType)
from kafka.admin import ACLResourcePatternType as PatternType  # noqa: E402
from kafka.errors import TopicAuthorizationFailedError  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC_AUTHORIZATION_FAILED = 29


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("acls", size=2, overrides={
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
        "auto.create.topics.enable": "false"})


def topic_acls(port: int, topic: str) -> int:
    """How many ACLs a broker's cache holds on the literal topic (DescribeAcls v1)."""
    with WireClient(port) as w:
        resp = w.request(ApiKey.DESCRIBE_ACLS, 1, resource_type_filter=2,
                         resource_name_filter=topic, pattern_type_filter=3,
                         principal_filter=None, host_filter=None, operation=1,
                         permission_type=1)
    assert resp.error_code == 0, resp
    return sum(len(r.acls) for r in resp.resources)


def wait_every_broker(cluster: Cluster, topic: str, count: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while any(topic_acls(b.port, topic) != count for b in cluster.brokers):
        assert time.monotonic() < deadline, f"brokers never saw {count} ACLs on {topic}"
        time.sleep(0.1)


def send_both(bootstrap: str, topic: str) -> list[BaseException | int]:
    """One record to each partition with a fresh producer: offsets or errors."""
    p = KafkaProducer(bootstrap_servers=bootstrap, retries=0, request_timeout_ms=10000)
    try:
        futures = [p.send(topic, value=b"v", partition=i) for i in (0, 1)]
        out: list[BaseException | int] = []
        for f in futures:
            try:
                out.append(f.get(timeout=30).offset)
            except Exception as e:  # the producer's per-record error
                out.append(e)
        return out
    finally:
        p.close(timeout=10)


def test_deny_write_acl_blocks_produce_on_every_broker(cluster: Cluster) -> None:
    topic = f"acl-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
        assert _leaders(cluster, topic) == {b.broker_id for b in cluster.brokers}, \
            "one partition per broker"
        assert send_both(cluster.bootstrap, topic) == [0, 0]

        pattern = ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL)
        allow_all = ACL("User:*", "*", ACLOperation.ALL, ACLPermissionType.ALLOW, pattern)
        deny_write = ACL("User:ANONYMOUS", "*", ACLOperation.WRITE, ACLPermissionType.DENY,
                         pattern)
        created = admin.create_acls([allow_all, deny_write])
        assert not created["failed"], created
        wait_every_broker(cluster, topic, 2)

        results = send_both(cluster.bootstrap, topic)
        assert all(isinstance(r, TopicAuthorizationFailedError) for r in results), results
        for b in cluster.brokers:  # nothing was appended, on either broker
            for p in range(2):
                with WireClient(b.port) as w:
                    error, offset = w.list_offset(topic, p)
                    if error == 0:
                        assert offset == 1

        # the raw wire answer too: TOPIC_AUTHORIZATION_FAILED on the partition
        with WireClient(cluster.brokers[0].port) as w:
            resp = w.produce(topic, 0, build_batch([(b"k", b"v", 1)]))
            assert resp.error_code == TOPIC_AUTHORIZATION_FAILED

        # deleting the DENY lets writes through again
        deleted = admin.delete_acls([ACLFilter(
            "User:ANONYMOUS", "*", ACLOperation.WRITE, ACLPermissionType.DENY,
            ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.LITERAL))])
        assert len(deleted[0][1]) == 1, deleted
        wait_every_broker(cluster, topic, 1)
        assert send_both(cluster.bootstrap, topic) == [1, 1]
    finally:
        admin.close()


def _leaders(cluster: Cluster, topic: str) -> set[int]:
    """The leaders of the topic's partitions, once the metadata names both and each
    leader's own metadata has its partition (multi.led_in_sync): the producer of
    send_both does not retry, and a leader that has not applied its LeaderAndIsr
    yet refuses it (UNKNOWN_TOPIC_OR_PARTITION)."""
    port = cluster.brokers[0].port
    deadline = time.monotonic() + 15
    while True:
        with WireClient(port) as w:
            parts = w.metadata([topic]).topics[0].partitions
        leaders = {p.leader_id for p in parts}
        if len(parts) == 2 and -1 not in leaders and all(
                led_in_sync(cluster.brokers, port, topic, p.partition_index, 1) for p in parts):
            return leaders
        assert time.monotonic() < deadline, f"no leaders for {topic}"
        time.sleep(0.1)
