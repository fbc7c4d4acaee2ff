"""The leader fence with real processes (issue 16, item 6; broker/replication/leader_fence.py):
ZooKeeper paused (SIGSTOP) and the partition's only follower paused too — the
leader is cut off from ZooKeeper and from its follower, the 2013 case. Once its
ZooKeeper client gives the connection up, an acks=1 write to it is refused with
NOT_LEADER_OR_FOLLOWER instead of being acknowledged; with ZooKeeper back within
the session (SIGCONT) writes are taken again. With ZooKeeper paused but the
follower fetching, writes go on."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.integration.cluster import BrokerProcess, Cluster, MakeCluster
from tests.integration.multi import create_topic, led_in_sync, paused, produce, wait_until
from tests.integration.zookeeper import PIDS

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SESSION_MS = 9000


@pytest.fixture
def cluster(make_fresh_cluster: MakeCluster) -> Cluster:
    """Each test pauses ZooKeeper or a broker: a cluster of its own."""
    return make_fresh_cluster("fence", 2, overrides={
        "zookeeper.session.timeout.ms": str(SESSION_MS),
        "replica.lag.time.max.ms": "60000"})          # the ISR keeps the paused follower


def acks1(port: int) -> int:
    return produce(port, "fenced", 0, build_batch([(None, b"v", int(time.time() * 1000))]),
                   acks=1, timeout_ms=3000)[0]


@contextmanager
def zk_paused(zookeeper: str) -> Iterator[None]:
    """SIGSTOP the ZooKeeper server; SIGCONT when the block ends (even on error)."""
    pid = PIDS[zookeeper.split("/")[0]]
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def led_by(cluster: Cluster) -> BrokerProcess:
    """Create the topic (one partition on both brokers); -> its leader once the leader
    itself has the partition with a full ISR (multi.led_in_sync)."""
    assert create_topic(cluster.brokers[0].port, "fenced", 1, 2) == 0
    st = wait_until(lambda: led_in_sync(cluster.brokers, cluster.brokers[0].port, "fenced", 0, 2),
                    20, "the leader in charge with the ISR full")
    return cluster.broker(st.leader)


def test_cut_off_from_zookeeper_and_follower_refuses_acks1(cluster: Cluster,
                                                            zookeeper: str) -> None:
    leader = led_by(cluster)
    follower = next(b for b in cluster.brokers if b is not leader)
    assert acks1(leader.port) == ErrorCode.NONE
    started = time.monotonic()
    with paused(follower):
        with zk_paused(zookeeper):
            # the client gives ZooKeeper up after 2/3 of the session; we resume before
            # the full session timeout so the session survives
            wait_until(lambda: acks1(leader.port) == ErrorCode.NOT_LEADER_OR_FOLLOWER,
                       SESSION_MS / 1000 * 0.85, "the leader fenced")
            fenced_after = time.monotonic() - started
        assert "ZooKeeper connection lost" in leader.log_text()
        wait_until(lambda: acks1(leader.port) == ErrorCode.NONE, 20,
                   "writes taken again with ZooKeeper back")
    assert fenced_after < SESSION_MS / 1000


def test_zookeeper_paused_with_the_follower_fetching_writes_go_on(cluster: Cluster,
                                                                 zookeeper: str) -> None:
    leader = led_by(cluster)
    with zk_paused(zookeeper):
        deadline = time.monotonic() + SESSION_MS / 1000 * 0.8
        while time.monotonic() < deadline:
            assert acks1(leader.port) == ErrorCode.NONE
            time.sleep(0.2)
