"""KIP-848 consumer groups end to end: stock confluent-kafka (librdkafka 2.16) consumers
with ``group.protocol=consumer`` against a real 3-broker cluster on one ZooKeeper
(__consumer_offsets and the topic replicated 3 ways, min.insync.replicas=2).

1. Two members share a 6-partition topic: each gets 3, every record is consumed
   exactly once (offsets committed synchronously after each batch).
2. ConsumerGroupDescribe through AdminClient.describe_consumer_groups: type CONSUMER,
   two members with 3 partitions each; the epochs through ConsumerGroupDescribe v1 on
   the wire; ListGroups v5 lists it as type "consumer"; the classic DescribeGroups
   says Dead (Kafka 4.0 below v6).
3. A member leaving moves its partitions to the other; committed offsets survive:
   a new member resumes after them (nothing committed is consumed again).
4. kill -9 of the coordinator's broker: the new coordinator reloads the group from
   __consumer_offsets without a rebalance (same group epoch, same member epochs)
   and consumption goes on.
5. A regex subscription (evaluated by the broker) picks up a topic created later.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from tests.integration.cluster import Cluster, MakeCluster, WireClient
from tests.integration.multi import create_topic, wait_until

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

pytestmark = pytest.mark.integration

PARTITIONS = 6
OVERRIDES = {
    "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "4",
    "min.insync.replicas": "2", "default.replication.factor": "3",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.session.timeout.ms": "6000",
}


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("consumer-protocol", size=3, overrides=OVERRIDES)


class Member:
    """A confluent-kafka consumer with group.protocol=consumer, polling in a thread;
    commits synchronously after each batch; ``records`` are (partition, offset)."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 1000})
        self.consumer.subscribe([topic])
        self.records: list[tuple[int, int]] = []
        self.assigned: list[int] = []
        self.topic_partitions: list[tuple[str, int]] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            msgs = self.consumer.consume(100, 0.1)
            got = [(m.partition(), m.offset()) for m in msgs if m.error() is None]
            if got:
                try:
                    self.consumer.commit(asynchronous=False)
                except KafkaException as e:
                    self.errors.append(str(e))
            with self.lock:
                self.records.extend(got)
                self.topic_partitions = sorted((tp.topic, tp.partition)
                                               for tp in self.consumer.assignment())
                self.assigned = [p for _, p in self.topic_partitions]
        self.consumer.close()

    def partitions(self) -> list[int]:
        with self.lock:
            return list(self.assigned)

    def owned(self) -> list[tuple[str, int]]:
        with self.lock:
            return list(self.topic_partitions)

    def seen(self) -> list[tuple[int, int]]:
        with self.lock:
            return list(self.records)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


def produce(bootstrap: str, topic: str, n: int) -> set[tuple[int, int]]:
    written: set[tuple[int, int]] = set()

    def done(err: Any, msg: Any) -> None:
        assert err is None, err
        written.add((msg.partition(), msg.offset()))
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=i % PARTITIONS, on_delivery=done)
    p.flush(30)
    assert len(written) == n
    return written


def describe(bootstrap: str, group: str) -> Any:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group], request_timeout=10)[group].result()


def describe_wire(cluster: Cluster, group: str) -> Any:
    """ConsumerGroupDescribe v1 at the group's coordinator (epochs are not in the
    confluent-kafka AdminClient's description); None until it answers the group."""
    broker = cluster.broker(coordinator_of(cluster, group))
    with WireClient(broker.port, timeout=5) as c:
        r = c.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[group],
                      include_authorized_operations=False)
    g = r.groups[0]
    return g if g.error_code == 0 else None


def consumed_once(members: list[Member], written: set[tuple[int, int]]) -> bool:
    seen = [r for m in members for r in m.seen()]
    assert len(seen) == len(set(seen)), "a record was consumed twice"
    return written <= set(seen)


def coordinator_of(cluster: Cluster, group: str) -> int:
    for b in cluster.brokers:
        if not b.running:
            continue
        with WireClient(b.port, timeout=5) as c:
            r = c.request(ApiKey.FIND_COORDINATOR, 3, key=group, key_type=0)
        if r.error_code == 0:
            return int(r.node_id)
    raise AssertionError("no coordinator")


def test_two_members_share_leave_and_resume(cluster: Cluster) -> None:
    topic, group = f"t-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    assert create_topic(cluster.brokers[0].port, topic, PARTITIONS, 3) == 0
    m1, m2 = Member(cluster.bootstrap, topic, group), Member(cluster.bootstrap, topic, group)
    try:
        wait_until(lambda: len(m1.partitions()) == 3 and len(m2.partitions()) == 3, 30,
                   "3 partitions each")
        assert set(m1.partitions()) | set(m2.partitions()) == set(range(PARTITIONS))
        written = produce(cluster.bootstrap, topic, 60)
        wait_until(lambda: consumed_once([m1, m2], written), 30, "every record consumed once")

        d = describe(cluster.bootstrap, group)
        assert d.type.name == "CONSUMER" and d.state.name == "STABLE"
        assert len(d.members) == 2
        assert sorted(len(m.assignment.topic_partitions) for m in d.members) == [3, 3]
        assert all(m.target_assignment is not None for m in d.members)
        g = wait_until(lambda: describe_wire(cluster, group), 10, "ConsumerGroupDescribe")
        assert g.group_state == "Stable" and g.assignor_name == "uniform"
        assert g.group_epoch == g.assignment_epoch > 0
        assert [m.member_epoch for m in g.members] == [g.group_epoch] * 2
        assert {m.member_type for m in g.members} == {1}
        with WireClient(cluster.broker(coordinator_of(cluster, group)).port, timeout=5) as c:
            listed = c.request(ApiKey.LIST_GROUPS, 5, states_filter=[],
                               types_filter=["consumer"]).groups
            assert [(x.group_id, x.group_type, x.protocol_type) for x in listed
                    if x.group_id == group] == [(group, "consumer", "consumer")]
            # the classic DescribeGroups describes a consumer group as Dead (Kafka 4.0, v5)
            classic = c.request(ApiKey.DESCRIBE_GROUPS, 5, groups=[group],
                                include_authorized_operations=False).groups[0]
            assert (classic.error_code, classic.group_state) == (0, "Dead")
        assert sorted(len(m.assignment.topic_partitions[0].partitions)
                      for m in g.members) == [3, 3]

        m2.close()                                       # leaves: m1 takes everything
        wait_until(lambda: len(m1.partitions()) == PARTITIONS, 30, "m1 gets all 6")
        more = produce(cluster.bootstrap, topic, 30)
        wait_until(lambda: consumed_once([m1, m2], written | more), 30, "after the leave")
        assert not m1.errors and not m2.errors
    finally:
        m1.close()
        m2.close()
    # committed offsets survive: a new member starts after them
    m3 = Member(cluster.bootstrap, topic, group)
    try:
        wait_until(lambda: len(m3.partitions()) == PARTITIONS, 30, "m3 joins")
        last = produce(cluster.bootstrap, topic, 12)
        wait_until(lambda: last <= set(m3.seen()), 30, "m3 consumes the new records")
        assert set(m3.seen()) == last, "records committed before were consumed again"
    finally:
        m3.close()


def test_regex_subscription_follows_created_topics(cluster: Cluster) -> None:
    """A broker-side regex (ConsumerGroupHeartbeat v1) is re-resolved when topics are
    created: the UpdateMetadata hook refreshes the group, which then assigns them."""
    prefix, group = f"re-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    assert create_topic(cluster.brokers[0].port, f"{prefix}-a", 2, 3) == 0
    m = Member(cluster.bootstrap, f"^{prefix}-.*", group)
    try:
        wait_until(lambda: m.owned() == [(f"{prefix}-a", 0), (f"{prefix}-a", 1)], 30,
                   "the first matching topic")
        assert create_topic(cluster.brokers[0].port, f"{prefix}-b", 1, 3) == 0
        wait_until(lambda: (f"{prefix}-b", 0) in m.owned(), 30, "the created topic")
        g = wait_until(lambda: describe_wire(cluster, group), 10, "describe")
        assert f"^{prefix}-.*" in g.members[0].subscribed_topic_regex   # librdkafka: "(re)"
    finally:
        m.close()


def test_coordinator_failover_keeps_the_group(cluster: Cluster) -> None:
    """Last in this module: it leaves one broker dead."""
    topic, group = f"t-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    assert create_topic(cluster.brokers[0].port, topic, PARTITIONS, 3) == 0
    members = [Member(cluster.bootstrap, topic, group) for _ in range(2)]
    try:
        wait_until(lambda: sorted(len(m.partitions()) for m in members) == [3, 3], 30,
                   "3 partitions each")
        written = produce(cluster.bootstrap, topic, 30)
        wait_until(lambda: consumed_once(members, written), 30, "consumed before the kill")
        before = wait_until(lambda: describe_wire(cluster, group), 10, "describe")
        epochs = {m.member_id: m.member_epoch for m in before.members}
        victim = cluster.broker(coordinator_of(cluster, group))
        victim.kill9()
        wait_until(lambda: coordinator_of(cluster, group) != victim.broker_id, 40,
                   "a new coordinator")
        after = wait_until(lambda: describe_wire(cluster, group), 30, "describe after failover")
        assert after.group_epoch == before.group_epoch, "the group was rebalanced on failover"
        assert {m.member_id: m.member_epoch for m in after.members} == epochs
        more = produce(cluster.bootstrap, topic, 30)
        wait_until(lambda: consumed_once(members, written | more), 40,
                   "consumption goes on after the failover")
        assert sorted(len(m.partitions()) for m in members) == [3, 3]
    finally:
        for m in members:
            m.close()


