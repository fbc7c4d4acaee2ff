"""Kafka's per-API authorization end to end, over PLAINTEXT (every client and the
brokers themselves are User:ANONYMOUS), with ACLs managed by ``pybroker acls``.

* ``cluster`` (2 brokers, allow.everyone.if.no.acl.found=true): the tool's
  add / list / remove; a DENY READ on one group makes stock consumers
  (kafka-python, confluent-kafka) in it fail with GROUP_AUTHORIZATION_FAILED
  while another group reads; a DENY DESCRIBE hides a group (FindCoordinator,
  DescribeGroups, ListGroups, OffsetFetch); a DENY READ on a topic refuses its
  offset commits. Brokers keep replicating: no cluster ACL exists.
* ``locked`` (2 brokers): ALLOW everything on the cluster but DENY CLUSTER_ACTION
  to User:ANONYMOUS, so the brokers' own traffic is refused: a follower Fetch
  (replica_id >= 0) answers TOPIC_AUTHORIZATION_FAILED per partition, as Kafka
  3.9's handleFetchRequest does; LeaderAndIsr, UpdateMetadata, StopReplica,
  ControlledShutdown and AlterPartition answer CLUSTER_AUTHORIZATION_FAILED; a
  consumer's Fetch and OffsetForLeaderEpoch (DESCRIBE on the topic) still work.
* ``superuser`` (1 broker, allow.everyone.if.no.acl.found=false,
  super.users=User:ANONYMOUS): DENY ACLs do not touch a super user.
"""

from __future__ import annotations

import io
import time
import uuid
from collections.abc import Callable

import pytest

from protocol.api_keys import ApiKey
from protocol.records import build_batch
from protocol.schema import Struct
from protocol.spec import api
from tests.integration.cluster import Cluster, MakeCluster, WireClient
from tools import acls as acls_tool

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")
from kafka import KafkaConsumer  # noqa: E402
from kafka.errors import GroupAuthorizationFailedError  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC_AUTH, GROUP_AUTH, CLUSTER_AUTH = 29, 30, 31
STALE_CONTROLLER_EPOCH = 11
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
RESOURCE_CODES = {"topic": 2, "group": 3, "cluster": 4}


def start(make_cluster: MakeCluster, name: str, size: int, **overrides: str) -> Cluster:
    return make_cluster(name, size, overrides={
        "authorizer.class.name": AUTHORIZER, "auto.create.topics.enable": "false",
        **{k.replace("_", "."): v for k, v in overrides.items()}})


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return start(make_cluster, "authz", 2, allow_everyone_if_no_acl_found="true")


# ---- helpers ---------------------------------------------------------------------------------

def tool(c: Cluster, *argv: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = acls_tool.main(["--bootstrap-server", c.bootstrap, *argv], stdin=io.StringIO(stdin),
                          stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def added(c: Cluster, *argv: str) -> None:
    code, out, err = tool(c, "--add", *argv)
    assert code == 0, err
    assert "Adding ACLs for resource" in out


def acl_count(port: int, kind: str, name: str) -> int:
    """How many ACLs a broker's cache holds on the literal resource (DescribeAcls v1);
    -1 while the broker refuses to say (DESCRIBE on the cluster denied)."""
    with WireClient(port) as w:
        resp = w.request(ApiKey.DESCRIBE_ACLS, 1, resource_type_filter=RESOURCE_CODES[kind],
                         resource_name_filter=name, pattern_type_filter=3,
                         principal_filter=None, host_filter=None, operation=1,
                         permission_type=1)
    if resp.error_code == CLUSTER_AUTH:
        return -1
    assert resp.error_code == 0, resp
    return sum(len(r.acls) for r in resp.resources)


def wait_for(what: str, check: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def wait_every_broker(c: Cluster, kind: str, name: str, count: int) -> None:
    wait_for(f"{count} ACLs on {kind} {name} everywhere",
             lambda: all(acl_count(b.port, kind, name) == count for b in c.brokers))


def new_topic(c: Cluster, partitions: int = 1, replication: int = 1) -> str:
    topic = f"authz-{uuid.uuid4().hex[:8]}"
    req = api(ApiKey.CREATE_TOPICS).request
    with WireClient(c.brokers[0].port) as w:
        resp = w.request(ApiKey.CREATE_TOPICS, 5, req.new(timeout_ms=20000, topics=[
            req.structs["CreatableTopic"].new(name=topic, num_partitions=partitions,
                                              replication_factor=replication)]))
    assert resp.topics[0].error_code == 0, resp
    wait_for(f"leaders of {topic}",
             lambda: all(_all_led(b.port, topic, partitions) for b in c.brokers))
    return topic


def _partitions(port: int, topic: str) -> list[Struct]:
    with WireClient(port) as w:
        return list(w.metadata([topic]).topics[0].partitions)


def _all_led(port: int, topic: str, partitions: int) -> bool:
    """The broker's metadata has exactly the topic's ``partitions`` partitions, each
    led, in one read (a broker that does not know the topic yet lists none, and
    all() of nothing would be True)."""
    parts = _partitions(port, topic)
    return sorted(p.partition_index for p in parts) == list(range(partitions)) and all(
        p.leader_id >= 0 and p.error_code == 0 for p in parts)


def leader_port(c: Cluster, topic: str, partition: int = 0) -> tuple[int, int]:
    """(leader id, its port)."""
    leader = next(p.leader_id for p in _partitions(c.brokers[0].port, topic)
                  if p.partition_index == partition)
    return leader, c.broker(leader).port


def coordinator_port(c: Cluster, group: str) -> int:
    def found() -> bool:
        with WireClient(c.brokers[0].port) as w:
            r = w.request(ApiKey.FIND_COORDINATOR, 3, key=group, key_type=0)
        holder.append(r)
        return r.error_code == 0
    holder: list[Struct] = []
    wait_for(f"the coordinator of {group}", found)
    return int(holder[-1].port)


def commit(port: int, group: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """A standalone OffsetCommit v8 (generation -1) -> partition errors."""
    spec = api(ApiKey.OFFSET_COMMIT).request
    by_topic: dict[str, list[Struct]] = {}
    for (t, p), o in offsets.items():
        by_topic.setdefault(t, []).append(spec.structs["OffsetCommitRequestPartition"].new(
            partition_index=p, committed_offset=o))
    with WireClient(port) as w:
        r = w.request(ApiKey.OFFSET_COMMIT, 8, spec.new(
            group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
                spec.structs["OffsetCommitRequestTopic"].new(name=t, partitions=ps)
                for t, ps in by_topic.items()]))
    return {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}


def produce(c: Cluster, topic: str, count: int) -> None:
    _, port = leader_port(c, topic)
    with WireClient(port) as w:
        resp = w.produce(topic, 0, build_batch([(None, b"v%d" % i, 1) for i in range(count)]))
    assert resp.error_code == 0, resp


# ---- the tool --------------------------------------------------------------------------------

def test_acls_tool_add_list_remove(cluster: Cluster) -> None:
    topic, group = f"tool-{uuid.uuid4().hex[:6]}", f"tool-g-{uuid.uuid4().hex[:6]}"
    pattern = f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)"
    read = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    describe = "(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)"
    code, out, err = tool(cluster, "--add", "--allow-principal", "User:alice", "--operation",
                          "Read", "--operation", "Describe", "--topic", topic, "--group", group)
    assert code == 0, err
    assert f"Adding ACLs for resource `{pattern}`: \n \t{read}\n\t{describe} \n\n" in out
    wait_every_broker(cluster, "topic", topic, 2)
    wait_every_broker(cluster, "group", group, 2)

    code, out, err = tool(cluster, "--list", "--topic", topic)
    assert (code, err) == (0, "")
    assert out == f"Current ACLs for resource `{pattern}`: \n \t{read}\n\t{describe} \n\n"
    code, out, _ = tool(cluster, "--list")
    assert f"name={topic}," in out and f"name={group}," in out
    code, out, _ = tool(cluster, "--list", "--principal", "User:alice", "--group", group)
    assert out.startswith("ACLs for principal `User:alice`\nCurrent ACLs for resource "
                          f"`ResourcePattern(resourceType=GROUP, name={group}, "
                          "patternType=LITERAL)`")

    # --producer on a prefixed pattern; listed by a MATCH filter on a name under it
    added(cluster, "--producer", "--allow-principal", "User:bob", "--topic", topic[:6],
          "--resource-pattern-type", "prefixed")
    wait_for("the prefixed ACLs", lambda: "operation=CREATE" in tool(
        cluster, "--list", "--topic", topic, "--resource-pattern-type", "match")[1])
    code, out, _ = tool(cluster, "--list", "--topic", topic, "--resource-pattern-type", "match")
    assert "patternType=PREFIXED" in out and "patternType=LITERAL" in out
    assert "(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW)" in out

    # --remove asks first: "n" (or no answer) keeps them, "y" removes them
    code, out, _ = tool(cluster, "--remove", "--topic", topic, stdin="n\n")
    assert code == 0 and "Are you sure you want to delete all ACLs for resource filter" in out
    assert acl_count(cluster.brokers[0].port, "topic", topic) == 2
    code, _, _ = tool(cluster, "--remove", "--topic", topic, stdin="y\n")
    assert code == 0
    wait_every_broker(cluster, "topic", topic, 0)
    code, _, err = tool(cluster, "--remove", "--force", "--allow-principal", "User:alice",
                        "--operation", "Read", "--group", group)
    assert code == 0, err
    wait_every_broker(cluster, "group", group, 1)      # only the READ entry went
    assert tool(cluster, "--remove", "--force", "--group", group)[0] == 0
    assert tool(cluster, "--remove", "--force", "--topic", topic[:6],
                "--resource-pattern-type", "prefixed")[0] == 0
    wait_every_broker(cluster, "group", group, 0)
    wait_for("no ACLs left", lambda: f"name={topic[:6]}," not in tool(cluster, "--list")[1])


# ---- groups ----------------------------------------------------------------------------------

def test_consumers_in_a_denied_group_get_group_authorization_failed(cluster: Cluster) -> None:
    topic = new_topic(cluster)
    produce(cluster, topic, 3)
    denied = f"denied-{uuid.uuid4().hex[:6]}"
    # DESCRIBE stays allowed (FindCoordinator answers), READ does not (JoinGroup refuses)
    added(cluster, "--allow-principal", "User:*", "--operation", "All", "--group", denied)
    added(cluster, "--deny-principal", "User:ANONYMOUS", "--operation", "Read", "--group", denied)
    wait_every_broker(cluster, "group", denied, 2)

    consumer = KafkaConsumer(topic, bootstrap_servers=cluster.bootstrap, group_id=denied,
                             auto_offset_reset="earliest", request_timeout_ms=10000)
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                consumer.poll(timeout_ms=500)
    finally:
        consumer.close()

    c = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": denied,
                                  "auto.offset.reset": "earliest"})
    try:
        c.subscribe([topic])
        errors: list[int] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not errors:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is not None:
                errors.append(msg.error().code())
        assert errors == [confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED]
    finally:
        c.close()

    # the group APIs on the wire: READ refused on each, the consumer's other group reads
    port = coordinator_port(cluster, denied)
    with WireClient(port) as w:
        hb = w.request(ApiKey.HEARTBEAT, 4, group_id=denied, generation_id=1, member_id="m")
        sync = w.request(ApiKey.SYNC_GROUP, 5, group_id=denied, generation_id=1, member_id="m",
                         protocol_type="consumer", protocol_name="range", assignments=[])
        leave = w.request(ApiKey.LEAVE_GROUP, 5, group_id=denied, members=[
            api(ApiKey.LEAVE_GROUP).request.structs["MemberIdentity"].new(member_id="m")])
    assert (hb.error_code, sync.error_code, leave.error_code) == (GROUP_AUTH,) * 3
    assert set(commit(port, denied, {(topic, 0): 1}).values()) == {GROUP_AUTH}

    reader = KafkaConsumer(topic, bootstrap_servers=cluster.bootstrap,
                           group_id=f"ok-{uuid.uuid4().hex[:6]}", auto_offset_reset="earliest",
                           consumer_timeout_ms=20000)
    try:
        values = [r.value for _, r in zip(range(3), reader)]
    finally:
        reader.close()
    assert values == [b"v0", b"v1", b"v2"]


def test_a_group_without_describe_is_hidden(cluster: Cluster) -> None:
    topic = new_topic(cluster)
    hidden, shown = (f"{n}-{uuid.uuid4().hex[:6]}" for n in ("hidden", "shown"))
    for g in (hidden, shown):   # standalone commits make the groups exist
        assert commit(coordinator_port(cluster, g), g, {(topic, 0): 0}) == {(topic, 0): 0}

    def listed() -> set[str]:
        out = set()
        for b in cluster.brokers:
            with WireClient(b.port) as w:
                out |= {g.group_id for g in w.request(ApiKey.LIST_GROUPS, 4,
                                                      states_filter=[]).groups}
        return out
    added(cluster, "--allow-principal", "User:*", "--operation", "All", "--group", hidden)
    added(cluster, "--deny-principal", "User:ANONYMOUS", "--operation", "Describe",
          "--group", hidden)
    wait_every_broker(cluster, "group", hidden, 2)

    with WireClient(cluster.brokers[0].port) as w:
        found = w.request(ApiKey.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=[hidden])
    assert [(c.key, c.error_code, c.node_id) for c in found.coordinators] == [
        (hidden, GROUP_AUTH, -1)]
    offsets = api(ApiKey.OFFSET_FETCH).request.structs["OffsetFetchRequestGroup"]
    with WireClient(coordinator_port(cluster, shown)) as w:
        described = w.request(ApiKey.DESCRIBE_GROUPS, 5, groups=[hidden, shown],
                              include_authorized_operations=True)
        fetched = w.request(ApiKey.OFFSET_FETCH, 8, require_stable=False, groups=[
            offsets.new(group_id=hidden, topics=None)])
    assert [(g.group_id, g.error_code) for g in described.groups][0] == (hidden, GROUP_AUTH)
    assert [(g.group_id, g.error_code, g.topics) for g in fetched.groups] == [
        (hidden, GROUP_AUTH, [])]
    # ListGroups: DESCRIBE on the cluster (here: no cluster ACL, so allowed) lists every
    # group; without it only the groups the caller may DESCRIBE
    assert {hidden, shown} <= listed()
    added(cluster, "--allow-principal", "User:*", "--operation", "All", "--cluster")
    added(cluster, "--deny-principal", "User:ANONYMOUS", "--operation", "Describe", "--cluster")
    try:
        wait_for("ListGroups without the hidden group", lambda: hidden not in listed())
        assert shown in listed()
    finally:   # DeleteAcls needs ALTER on the cluster, which ALLOW All still gives
        assert tool(cluster, "--remove", "--force", "--cluster")[0] == 0
        wait_every_broker(cluster, "cluster", "kafka-cluster", 0)


def test_offset_commit_needs_read_on_each_topic(cluster: Cluster) -> None:
    readable, secret = new_topic(cluster), new_topic(cluster)
    added(cluster, "--allow-principal", "User:*", "--operation", "All", "--topic", secret)
    added(cluster, "--deny-principal", "User:ANONYMOUS", "--operation", "Read", "--topic", secret)
    wait_every_broker(cluster, "topic", secret, 2)
    group = f"commit-{uuid.uuid4().hex[:6]}"
    errors = commit(coordinator_port(cluster, group), group, {(readable, 0): 1, (secret, 0): 1})
    assert errors == {(readable, 0): 0, (secret, 0): TOPIC_AUTH}


# ---- inter-broker APIs without CLUSTER_ACTION ------------------------------------------------

@pytest.fixture(scope="module")
def locked(make_cluster: MakeCluster) -> Cluster:
    return start(make_cluster, "locked", 2, allow_everyone_if_no_acl_found="true")


def test_brokers_without_cluster_action_are_refused(locked: Cluster) -> None:
    topic = new_topic(locked, partitions=1, replication=2)
    added(locked, "--allow-principal", "User:*", "--operation", "All", "--cluster")
    added(locked, "--deny-principal", "User:ANONYMOUS", "--operation", "ClusterAction",
          "--cluster")
    wait_every_broker(locked, "cluster", "kafka-cluster", 2)

    leader, port = leader_port(locked, topic)
    follower = next(b.broker_id for b in locked.brokers if b.broker_id != leader)
    # the follower's own fetches are refused: the leader logs the denials (before any
    # request of this test could)
    wait_for("a logged CLUSTER_ACTION denial", lambda: "is Denied Operation = CLUSTER_ACTION"
             in locked.broker(leader).log_text())
    fetch = api(ApiKey.FETCH).request
    with WireClient(port) as w:
        as_follower = w.request(ApiKey.FETCH, 12, fetch.new(
            replica_id=follower, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
            isolation_level=0, session_id=0, session_epoch=-1, topics=[
                fetch.structs["FetchTopic"].new(topic=topic, partitions=[
                    fetch.structs["FetchPartition"].new(partition=0, fetch_offset=0,
                                                        partition_max_bytes=1 << 20)])]))
        assert as_follower.error_code == 0
        assert [p.error_code for r in as_follower.responses for p in r.partitions] == [TOPIC_AUTH]
        error, _hw, _records = w.fetch_batches(topic, 0, 0)    # a consumer still reads
        assert error == 0
        epoch = api(ApiKey.OFFSET_FOR_LEADER_EPOCH).request.structs
        ofle = w.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, replica_id=follower, topics=[
            epoch["OffsetForLeaderTopic"].new(topic=topic, partitions=[
                epoch["OffsetForLeaderPartition"].new(partition=0, current_leader_epoch=-1,
                                                      leader_epoch=0)])])
        assert ofle.topics[0].partitions[0].error_code == 0       # DESCRIBE on the topic

    lai = api(ApiKey.LEADER_AND_ISR).request.structs
    for b in locked.brokers:
        with WireClient(b.port) as w:
            r = w.request(ApiKey.LEADER_AND_ISR, 7, controller_id=leader, controller_epoch=1,
                          broker_epoch=-1, topic_states=[lai["LeaderAndIsrTopicState"].new(
                              topic_name=topic, topic_id=uuid.uuid4(), partition_states=[
                                  lai["LeaderAndIsrPartitionState"].new(
                                      topic_name=topic, partition_index=0, controller_epoch=1,
                                      leader=b.broker_id, leader_epoch=99, isr=[b.broker_id],
                                      partition_epoch=99, replicas=[b.broker_id])])],
                          live_leaders=[])
            assert r.error_code == CLUSTER_AUTH
            assert [p.error_code for t in r.topics for p in t.partition_errors] == [CLUSTER_AUTH]
            um = w.request(ApiKey.UPDATE_METADATA, 8, controller_id=leader, controller_epoch=1,
                           broker_epoch=-1, topic_states=[], live_brokers=[])
            assert um.error_code == CLUSTER_AUTH
            sr = w.request(ApiKey.STOP_REPLICA, 3, controller_id=leader, controller_epoch=1,
                           broker_epoch=-1, topic_states=[])
            assert sr.error_code == CLUSTER_AUTH
            cs = w.request(ApiKey.CONTROLLED_SHUTDOWN, 3, broker_id=b.broker_id, broker_epoch=-1)
            assert cs.error_code == CLUSTER_AUTH
            ap = w.request(ApiKey.ALTER_PARTITION, 3, broker_id=b.broker_id, broker_epoch=-1,
                           topics=[])
            assert ap.error_code == CLUSTER_AUTH


# ---- super users ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def superuser(make_cluster: MakeCluster) -> Cluster:
    return start(make_cluster, "superuser", 1,
                 allow_everyone_if_no_acl_found="false", super_users="User:ANONYMOUS")


def test_deny_acls_do_not_bind_a_super_user(superuser: Cluster) -> None:
    topic = new_topic(superuser)
    added(superuser, "--deny-principal", "User:ANONYMOUS", "--operation", "All", "--topic", topic)
    added(superuser, "--deny-principal", "User:ANONYMOUS", "--operation", "All", "--cluster")
    wait_every_broker(superuser, "cluster", "kafka-cluster", 1)
    produce(superuser, topic, 1)
    with WireClient(superuser.brokers[0].port) as w:
        # authorized, so the (stale) controller epoch is what refuses it
        r = w.request(ApiKey.UPDATE_METADATA, 8, controller_id=0, controller_epoch=0,
                      broker_epoch=-1, topic_states=[], live_brokers=[])
        assert r.error_code == STALE_CONTROLLER_EPOCH
