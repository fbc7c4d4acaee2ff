"""Coordinator failover: kill -9 the broker coordinating a group mid-run (3 brokers,
__consumer_offsets with replication factor 3, min.insync.replicas=2).

1. Two confluent-kafka members (tests/integration/groups/member.py) consume and commit
   everything written so far; the committed offsets equal the log ends.
2. kill -9 the coordinator's broker. FindCoordinator moves to the new leader of the group's
   __consumer_offsets partition (as Metadata names it), which answers OffsetFetch with the
   same committed offsets (they were replicated with acks=all, then reloaded).
3. Records written after the kill are all consumed by the surviving members, and none of
   the records committed before the kill comes again.
4. All members leave; new members resume exactly after the committed offsets.
"""

from __future__ import annotations

import time
import uuid

import pytest

from coordinator.group.classic import partition_for_group
from protocol.api_keys import ApiKey
from tests.integration.cluster import Cluster, MakeCluster, WireClient
from tests.integration.multi import create_topic, partition_state, wait_until
from tests.integration.test_groups import Member, flatten, produce

pytestmark = pytest.mark.integration

PARTITIONS = 6
OFFSETS_PARTITIONS = 4
OVERRIDES = {"offsets.topic.replication.factor": "3",
             "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
             "min.insync.replicas": "2", "default.replication.factor": "3"}


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("group-failover", size=3, overrides=OVERRIDES)


def find_coordinator(port: int, group: str) -> tuple[int, int]:
    """FindCoordinator v3 at one broker -> (error, node id)."""
    with WireClient(port, timeout=5) as c:
        r = c.request(ApiKey.FIND_COORDINATOR, 3, key=group, key_type=0)
    return int(r.error_code), int(r.node_id)


def committed(port: int, group: str) -> dict[tuple[str, int], int] | None:
    """OffsetFetch v7 (all partitions) at one broker; None on a group-level error."""
    with WireClient(port, timeout=5) as c:
        r = c.request(ApiKey.OFFSET_FETCH, 7, group_id=group, topics=None,
                      require_stable=False)
    if r.error_code:
        return None
    return {(t.name, p.partition_index): int(p.committed_offset)
            for t in r.topics for p in t.partitions if p.committed_offset >= 0}


def log_ends(cluster: Cluster, topic: str) -> dict[tuple[str, int], int]:
    """ListOffsets(latest) at each partition's leader."""
    out = {}
    for p in range(PARTITIONS):
        state = partition_state(cluster.brokers[0].port, topic, p)
        assert state is not None and state.leader >= 0
        with WireClient(cluster.broker(state.leader).port, timeout=5) as c:
            err, out[(topic, p)] = c.list_offset(topic, p)
        assert err == 0
    return out


def test_coordinator_kill9_moves_the_group(cluster: Cluster) -> None:
    topic, group = f"gfo-{uuid.uuid4().hex[:6]}", f"gfo-g-{uuid.uuid4().hex[:6]}"
    assert create_topic(cluster.brokers[0].port, topic, PARTITIONS, 3) == 0
    wait_until(lambda: all(partition_state(b.port, topic, p) and
                           partition_state(b.port, topic, p).leader >= 0  # type: ignore[union-attr]
                           for b in cluster.brokers for p in range(PARTITIONS)),
               30, "the topic's leaders everywhere")
    expected = flatten(produce(cluster.bootstrap, topic, 300, 0))
    members = [Member("confluent", cluster.bootstrap, topic, group, "eager") for _ in range(2)]
    everyone = list(members)
    seen = lambda: {r for m in everyone for r in m.records}  # noqa: E731
    try:
        wait_until(lambda: expected <= seen(), 60, "every record of phase 1")
        port0 = cluster.brokers[0].port
        ends = log_ends(cluster, topic)
        coordinator = wait_until(lambda: (lambda e, n: [n] if e == 0 else None)(
            *find_coordinator(port0, group)), 20, "the coordinator")[0]
        wait_until(lambda: committed(cluster.broker(coordinator).port, group) == ends, 30,
                   "commits up to the log ends")
        before_kill = set(seen())
        marks = [len(m.records) for m in members]

        cluster.kill9(cluster.broker(coordinator))
        killed_at = time.monotonic()
        alive = [b for b in cluster.brokers if b.broker_id != coordinator]
        offsets_partition = partition_for_group(group, OFFSETS_PARTITIONS)

        def moved() -> list[int] | None:
            err, node = find_coordinator(alive[0].port, group)
            state = partition_state(alive[0].port, "__consumer_offsets", offsets_partition)
            if err or node == coordinator or state is None or state.leader != node:
                return None
            return [node]
        new = wait_until(moved, 40, "the coordinator to move to the new leader")[0]
        assert new != coordinator and new in {b.broker_id for b in alive}
        assert wait_until(lambda: committed(cluster.broker(new).port, group), 20,
                          "the new coordinator's offsets") == ends
        moved_after = time.monotonic() - killed_at

        expected |= flatten(produce(",".join(b.bootstrap for b in alive), topic, 300, 300))
        wait_until(lambda: expected <= seen(), 90, "every record written after the kill")
        after_kill = {r for m, mark in zip(members, marks) for r in m.records[mark:]}
        assert not after_kill & before_kill, "records committed before the kill came again"
        for m in members:
            m.leave()

        fresh = flatten(produce(",".join(b.bootstrap for b in alive), topic, 60, 600))
        restarted = [Member("confluent", ",".join(b.bootstrap for b in alive), topic, group,
                            "eager") for _ in range(2)]
        everyone.extend(restarted)
        wait_until(lambda: fresh <= {r for m in restarted for r in m.records}, 60,
                   "the records written after the restart")
        time.sleep(1)
        assert {r for m in restarted for r in m.records} == fresh
        for m in restarted:
            m.leave()
        print(f"coordinator {coordinator} -> {new} in {moved_after:.1f}s after kill -9")
    finally:
        for m in everyone:
            m.stop()
