"""Replication between real broker processes: 3 brokers, RF 3, one ZooKeeper.

1. acks=all produces succeed and every replica's log file is byte-identical
   (the followers appended the leader's batches as they are).
2. A follower killed with SIGKILL misses writes (the ISR shrinks, acks=all
   goes on with min.insync.replicas=2), restarts, catches up byte for byte
   and rejoins the ISR.
3. A follower SIGSTOPped beyond replica.lag.time.max.ms leaves the ISR
   (AlterPartition through the controller), and rejoins after SIGCONT.
4. Large fetches go out with sendfile on these plaintext listeners
   (broker/network/frame_stream.py; ``fetch.zero.copy=true`` here, as these peers are
   on loopback, which the default ``auto`` answers with copies, as every other
   integration test): a follower catching up half a megabyte ends byte-identical, and
   one consumer Fetch of the whole log returns the leader's segment bytes exactly.
"""

from __future__ import annotations

import time

import pytest

from protocol.errors import ErrorCode
from protocol.records import build_batch

from tests.integration.cluster import Cluster, MakeCluster, WireClient
from tests.integration.multi import (PartitionState, controller_id, create_topic, led_in_sync,
                                     log_bytes, partition_state, paused, produce, wait_until)

pytestmark = pytest.mark.integration

LAG_MS = 1500
TOPIC = "replicated"


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    c = make_cluster("replication", size=3, first_id=1, overrides={
        "replica.lag.time.max.ms": str(LAG_MS),
        "min.insync.replicas": "2",
        "default.replication.factor": "3",
        "fetch.zero.copy": "true",
    })
    port = c.brokers[0].port
    assert create_topic(port, TOPIC, 1, 3) == ErrorCode.NONE
    wait_until(lambda: _all_in_sync(c), 20, "a leader and a full ISR")
    return c


def _all_in_sync(c: Cluster) -> bool:
    return led_in_sync(c.brokers, c.brokers[0].port, TOPIC, 0, 3) is not None


def _leader(c: Cluster) -> int:
    st = wait_until(lambda: partition_state(c.brokers[0].port, TOPIC, 0), 10, "metadata")
    return st.leader


def _send(c: Cluster, leader: int, n: int, tag: bytes, acks: int = -1,
          value_bytes: int = 200) -> list[int]:
    port = c.broker(leader).port
    offsets = []
    for i in range(n):
        batch = build_batch([(b"k%d" % i, tag + b"-%d-" % i + b"x" * value_bytes,
                              int(time.time() * 1000)) for _ in range(5)])
        error, base = produce(port, TOPIC, 0, batch, acks=acks)
        assert error == ErrorCode.NONE, (tag, i, ErrorCode.from_code(error).name)
        offsets.append(base)
    return offsets


def _shrunk_without(c: Cluster, leader: int, gone: int) -> PartitionState:
    """The partition's state once the leader's Metadata has ``gone`` out of the ISR. The
    leader applies the shrink when the controller accepts its AlterPartition (and the
    acks=all produce goes on), but its metadata cache learns it from the controller's
    UpdateMetadata, a moment later."""
    port = c.broker(leader).port
    return wait_until(
        lambda: (s := partition_state(port, TOPIC, 0)) and gone not in s.isr and s,
        LAG_MS / 1000 * 2 + 5, f"broker {gone} out of the ISR in the leader's metadata")


def _identical_logs(c: Cluster, ids: list[int]) -> bool:
    data = [log_bytes(c.broker(i), TOPIC, 0) for i in ids]
    return len(data[0]) > 0 and all(d == data[0] for d in data)


def test_acks_all_and_byte_identical_replicas(cluster: Cluster) -> None:
    leader = _leader(cluster)
    offsets = _send(cluster, leader, 20, b"first")
    assert offsets == list(range(0, 100, 5))
    ids = [b.broker_id for b in cluster.brokers]
    wait_until(lambda: _identical_logs(cluster, ids), 15, "identical logs on all replicas")
    assert len(log_bytes(cluster.broker(leader), TOPIC, 0)) > 20 * 1000


def test_follower_restart_catches_up(cluster: Cluster) -> None:
    leader = _leader(cluster)
    ctl = controller_id(cluster.broker(leader).port)
    follower = next(b for b in cluster.brokers if b.broker_id not in (leader, ctl))
    cluster.kill9(follower)
    # acks=all waits until the dead follower leaves the ISR, then goes on with 2
    _send(cluster, leader, 10, b"while-down")
    st = _shrunk_without(cluster, leader, follower.broker_id)
    assert st is not None and follower.broker_id not in st.isr
    cluster.restart(follower)
    others = [b.broker_id for b in cluster.brokers]
    wait_until(lambda: _identical_logs(cluster, others), 20, "the restarted follower to catch up")
    wait_until(lambda: _all_in_sync(cluster), 20, "the restarted follower back in the ISR")
    _send(cluster, leader, 3, b"after")


def test_isr_shrinks_on_sigstop_and_expands_after_sigcont(cluster: Cluster) -> None:
    leader = _leader(cluster)
    ctl = controller_id(cluster.broker(leader).port)
    follower = next(b for b in cluster.brokers if b.broker_id not in (leader, ctl))
    port = cluster.broker(leader).port
    with paused(follower):
        _send(cluster, leader, 3, b"stopped", acks=1)
        st = wait_until(
            lambda: (s := partition_state(port, TOPIC, 0)) and follower.broker_id not in s.isr and s,
            LAG_MS / 1000 * 2 + 5, "the stopped follower to leave the ISR")
        assert len(st.isr) == 2
        _send(cluster, leader, 3, b"shrunk")     # acks=all with the 2 left
    wait_until(lambda: _all_in_sync(cluster), 15, "the follower to rejoin the ISR")
    ids = [b.broker_id for b in cluster.brokers]
    wait_until(lambda: _identical_logs(cluster, ids), 15, "identical logs after SIGCONT")


def test_large_catch_up_and_fetch_are_byte_exact(cluster: Cluster) -> None:
    """Slices far above SENDFILE_MIN_BYTES (32 KiB): the follower's catch-up fetch of
    ~0.5 MB and a consumer's fetch of the whole log."""
    leader = _leader(cluster)
    ctl = controller_id(cluster.broker(leader).port)
    follower = next(b for b in cluster.brokers if b.broker_id not in (leader, ctl))
    cluster.kill9(follower)
    _send(cluster, leader, 100, b"large", value_bytes=1000)
    cluster.restart(follower)
    ids = [b.broker_id for b in cluster.brokers]
    wait_until(lambda: _identical_logs(cluster, ids), 30, "the follower to catch up 0.5 MB")
    wait_until(lambda: _all_in_sync(cluster), 20, "the follower back in the ISR")
    on_disk = log_bytes(cluster.broker(leader), TOPIC, 0)
    assert len(on_disk) > 500_000
    with WireClient(cluster.broker(leader).port) as w:
        error, _hw, records = w.fetch_batches(TOPIC, 0, 0)
    assert error == ErrorCode.NONE and records == on_disk
