"""Issue 4's control plane with real broker processes and a real ZooKeeper:
killing the controller, controlled shutdown moving leaderships, reassignment
with the ``pybroker reassign-partitions`` tool and ``leader-election``.

Each test runs its own 3-broker cluster (ZooKeeper session timeout 6 s, so a
SIGKILLed broker's ephemeral znodes go within ~6 s)."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from protocol.api_keys import ApiKey
from protocol.records import build_batch
from protocol.spec import api
from tests.integration.cluster import BrokerProcess, Cluster, MakeCluster, WireClient
from tests.integration.multi import led_in_sync, metadata, until

pytestmark = pytest.mark.integration

MOVED_WITHIN_S = 5.0    # controlled shutdown: leaderships moved, below the session timeout


def leaders(b: BrokerProcess, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """partition -> (leader, replicas, isr), as broker ``b`` sees it."""
    md = metadata(b, [topic])
    return {p.partition_index: (p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
            for t in md.topics for p in t.partitions}


def every_partition(b: BrokerProcess, topic: str, want: Iterable[int],
                    holds: Callable[[tuple[int, list[int], list[int]]], bool],
                    ) -> dict[int, tuple[int, list[int], list[int]]] | None:
    """``leaders(b, topic)`` once it has exactly the partitions ``want`` and each
    holds; None before (a topic ``b`` does not know yet has no partitions, and all()
    of nothing would be True)."""
    m = leaders(b, topic)
    return m if set(m) == set(want) and all(holds(v) for v in m.values()) else None


def leading(c: Cluster, b: BrokerProcess, topic: str, partitions: Iterable[int],
            isr: int) -> bool:
    """Each partition's leader, as ``b`` names it, has it with an ISR of ``isr`` brokers
    in its own metadata (multi.led_in_sync): ``b``'s metadata can be ahead of the
    leader's LeaderAndIsr, and a raw Produce sent then is refused."""
    return all(led_in_sync(c.brokers, b.port, topic, p, isr) is not None for p in partitions)


def reassigned(c: Cluster, b: BrokerProcess, topic: str, targets: dict[int, list[int]]
               ) -> dict[int, tuple[int, list[int], list[int]]] | None:
    """``leaders(b, topic)`` once each partition has exactly its ``targets`` replicas,
    all in its ISR, and its leader is in charge in its own metadata (``led_in_sync``);
    None before. The tool's --verify asked one broker (any connection): the controller's
    UpdateMetadata reaches ``b`` in its own time."""
    m = leaders(b, topic)
    if set(m) != set(targets) or any(m[p][1] != r or sorted(m[p][2]) != sorted(r)
                                     for p, r in targets.items()):
        return None
    return m if all(led_in_sync(c.brokers, b.port, topic, p, len(r)) is not None
                    for p, r in targets.items()) else None


def create_topic(cluster: Cluster, name: str, assignment: dict[int, list[int]],
                 configs: dict[str, str] | None = None) -> None:
    """CreateTopics with an explicit assignment, sent to the controller (found through
    the cluster's first broker)."""
    spec = api(ApiKey.CREATE_TOPICS).request
    s = spec.structs
    topic = s["CreatableTopic"].new(
        name=name, num_partitions=-1, replication_factor=-1,
        assignments=[s["CreatableReplicaAssignment"].new(partition_index=p, broker_ids=r)
                     for p, r in sorted(assignment.items())],
        configs=[s["CreatableTopicConfig"].new(name=k, value=v)
                 for k, v in (configs or {}).items()])
    b = cluster.brokers[0]
    ctl = metadata(b, []).controller_id
    target = next(x for x in cluster.brokers if x.broker_id == ctl) if ctl >= 0 else b
    with WireClient(target.port, timeout=20) as c:
        resp = c.request(ApiKey.CREATE_TOPICS, 5, spec.new(topics=[topic], timeout_ms=15000))
    assert resp.topics[0].error_code == 0, resp.topics[0]


def produce_ok(cluster: Cluster, topic: str, partition: int, leader: int) -> int:
    b = cluster.broker(leader)
    with WireClient(b.port, timeout=10) as c:
        r = c.produce(topic, partition, build_batch([(b"k", b"v", int(time.time() * 1000))]),
                      acks=1)
    return int(r.error_code)


@pytest.fixture
def cluster3(make_fresh_cluster: MakeCluster) -> Cluster:
    """Each test kills or moves brokers: a cluster of its own."""
    return make_fresh_cluster("failover", 3,
                              overrides={"leader.imbalance.check.interval.seconds": "3600"})


def test_kill_controller_new_controller_within_seconds_and_leaders_keep_serving(
        cluster3: Cluster) -> None:
    c = cluster3
    create_topic(c, "f", {p: [p % 3, (p + 1) % 3, (p + 2) % 3] for p in range(6)})
    until(lambda: every_partition(c.brokers[0], "f", range(6), lambda v: v[0] >= 0), 20,
          "leaders for f")
    old = metadata(c.brokers[0], []).controller_id
    assert old in (0, 1, 2)
    survivors = [b for b in c.brokers if b.broker_id != old]
    t0 = time.monotonic()
    c.kill9(c.broker(old))
    new = until(lambda: (lambda i: i if i in {b.broker_id for b in survivors} else None)(
        metadata(survivors[0], []).controller_id), 20, "a new controller")
    took = time.monotonic() - t0
    print(f"new controller {new} after {took:.1f}s (zookeeper.session.timeout.ms=6000)")
    assert took < 15
    # everybody agrees, once the new controller's UpdateMetadata has reached them all
    until(lambda: metadata(survivors[1], []).controller_id == new, 10, "everybody agrees")
    live = {b.broker_id for b in survivors}
    final = until(lambda: leading(c, survivors[1], "f", range(6), 2) and every_partition(
        survivors[1], "f", range(6), lambda v: v[0] in live and old not in v[2]), 15,
        "every partition led by a survivor, ISRs shrunk")
    for p, (leader, _replicas, isr) in final.items():
        assert old not in isr
        assert produce_ok(c, "f", p, leader) == 0
    # the dead broker comes back: it is told its partitions and rejoins
    c.restart(c.broker(old))
    until(lambda: old in {b.node_id for b in metadata(survivors[0], []).brokers}, 20,
          "the old controller registered again")
    until(lambda: metadata(c.broker(old), []).controller_id == new, 10,
          "the old controller told of the new one")


def test_controlled_shutdown_moves_leaderships_first(cluster3: Cluster) -> None:
    c = cluster3
    create_topic(c, "cs", {p: [1, 2, 0] if p % 2 else [1, 0, 2] for p in range(8)})
    until(lambda: every_partition(c.brokers[0], "cs", range(8), lambda v: v[0] == 1), 20,
          "broker 1 leads every partition")
    t0 = time.monotonic()
    assert c.broker(1).stop() == 0                        # SIGTERM: controlled shutdown
    took = time.monotonic() - t0
    log = c.broker(1).log_text()
    assert "controlled shutdown succeeded" in log, log[-3000:]
    # the others lead, well within the ZooKeeper session timeout (6 s); the controller
    # answered the ControlledShutdown before its UpdateMetadata reached broker 0
    after = until(lambda: every_partition(c.brokers[0], "cs", range(8),
                                          lambda v: v[0] in (0, 2) and 1 not in v[2]),
                  MOVED_WITHIN_S, "broker 0's metadata: the others lead, 1 out of the ISRs")
    assert all(v[0] in (0, 2) for v in after.values()), after
    assert all(1 not in v[2] for v in after.values()), after      # shrunk out of the ISRs
    print(f"controlled shutdown of a broker leading 8 partitions: {took:.2f}s")
    until(lambda: leading(c, c.brokers[0], "cs", after, 2), 10, "the new leaders in charge")
    for p, (leader, _r, _i) in after.items():
        assert produce_ok(c, "cs", p, leader) == 0


def _reassign(c: Cluster, plan: Path, targets: dict[tuple[str, int], list[int]]) -> str:
    from tools import reassign_partitions
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for (t, p), r in targets.items()]}))
    out, err = io.StringIO(), io.StringIO()
    rc = reassign_partitions.main(["--bootstrap-server", c.bootstrap, "--execute",
                                   "--reassignment-json-file", str(plan)],
                                  stdout=out, stderr=err)
    assert rc == 0, err.getvalue()

    def verified() -> bool:
        return reassign_partitions.main(["--bootstrap-server", c.bootstrap, "--verify",
                                         "--reassignment-json-file", str(plan)],
                                        stdout=io.StringIO(), stderr=io.StringIO()) == 0
    until(verified, 40, "reassignment completed")
    return out.getvalue()


def test_reassignment_tool_and_preferred_election(cluster3: Cluster, tmp_path: Path) -> None:
    from tools import leader_election, reassign_partitions
    c = cluster3
    create_topic(c, "mv", {0: [0, 1, 2], 1: [0, 1, 2]})
    until(lambda: [v[0] for v in leaders(c.brokers[0], "mv").values()] == [0, 0], 20,
          "mv leaders")
    # the leader's replica leaves (the target is in the ISR already: done at once)
    out = _reassign(c, tmp_path / "plan.json", {("mv", 0): [2, 1], ("mv", 1): [1, 2]})
    assert "Successfully started partition reassignments for mv-0,mv-1" in out
    assert '"replicas":[0,1,2]' in out            # the rollback plan
    final = until(lambda: reassigned(c, c.brokers[1], "mv", {0: [2, 1], 1: [1, 2]}), 10,
                  "broker 1's metadata with the reassignment")
    assert final[0][1] == [2, 1] and final[1][1] == [1, 2]
    assert all(v[0] in (1, 2) and 0 not in v[2] for v in final.values()), final
    listing = io.StringIO()
    assert reassign_partitions.main(["--bootstrap-server", c.bootstrap, "--list"],
                                    stdout=listing) == 0
    assert listing.getvalue() == "No partition reassignments found.\n"
    # preferred leaders: 2 for mv-0, 1 for mv-1
    out_ = io.StringIO()
    rc = leader_election.main(["--bootstrap-server", c.bootstrap, "--election-type",
                               "preferred", "--all-topic-partitions"], stdout=out_)
    assert rc == 0, out_.getvalue()
    until(lambda: [v[0] for v in leaders(c.brokers[0], "mv").values()] == [2, 1]
          and leading(c, c.brokers[0], "mv", (0, 1), 2), 10, "preferred leaders")
    out_ = io.StringIO()
    assert leader_election.main(["--bootstrap-server", c.bootstrap, "--election-type",
                                 "PREFERRED", "--topic", "mv", "--partition", "0"],
                                stdout=out_) == 0
    assert out_.getvalue() == "Valid replica already elected for partitions mv-0\n"
    for p, leader in ((0, 2), (1, 1)):
        assert produce_ok(c, "mv", p, leader) == 0


def test_reassignment_onto_a_new_broker_completes(cluster3: Cluster, tmp_path: Path) -> None:
    c = cluster3
    create_topic(c, "mv2", {0: [0, 1]})
    until(lambda: leaders(c.brokers[0], "mv2").get(0, (-1,))[0] == 0, 20, "mv2 leader")
    for _ in range(5):
        assert produce_ok(c, "mv2", 0, 0) == 0
    _reassign(c, tmp_path / "plan2.json", {("mv2", 0): [1, 2]})   # 2 must catch up first
    leader, replicas, isr = until(lambda: reassigned(c, c.brokers[1], "mv2", {0: [1, 2]}), 10,
                                  "broker 1's metadata with the reassignment")[0]
    assert replicas == [1, 2] and leader in (1, 2) and sorted(isr) == [1, 2]
    with WireClient(c.broker(leader).port) as w:
        err, hw, _ = w.fetch_batches("mv2", 0, 0)
    assert (err, hw) == (0, 5)                 # nothing lost on the way
    # StopReplica(delete) on 0: sent by the controller, applied by 0 in its own time
    until(lambda: not (c.broker(0).log_dir / "mv2-0").exists() or None, 10,
          "mv2-0 deleted on broker 0")


def test_admin_reassignment_and_election_verbs_report_per_partition(cluster3: Cluster) -> None:
    """KafkaAdmin's AlterPartitionReassignments / ListPartitionReassignments /
    ElectLeaders straight (the tools above print what these return)."""
    import asyncio

    from client import KafkaAdmin
    from protocol.errors import ErrorCode
    c = cluster3
    create_topic(c, "verbs", {0: [0, 1], 1: [1, 2]})
    until(lambda: every_partition(c.brokers[0], "verbs", (0, 1), lambda v: v[0] >= 0), 20,
          "verbs leaders")

    async def body() -> None:
        async with KafkaAdmin(c.bootstrap, timeout=10) as admin:
            top, results = await admin.alter_partition_reassignments(
                {("verbs", 0): None, ("verbs", 1): [1, 2, 99], ("ghost", 0): [0]})
            assert top == (0, None)
            assert {tp: code for tp, (code, _) in results.items()} == {
                ("verbs", 0): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                ("verbs", 1): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                ("ghost", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            top, running = await admin.list_partition_reassignments([("verbs", 0)])
            assert top == (0, None) and running == {}
            code, elected = await admin.elect_leaders([("verbs", 1), ("ghost", 3)])
            assert code == 0
            assert {tp: e for tp, (e, _) in elected.items()} == {
                ("verbs", 1): ErrorCode.ELECTION_NOT_NEEDED,
                ("ghost", 3): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    asyncio.run(body())
