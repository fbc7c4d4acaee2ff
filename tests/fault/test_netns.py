"""A real cluster on virtual hosts (tests/fault/netns.py): ZooKeeper and three brokers,
each in its own network namespace on one bridge, a client namespace for the test's
requests and its confluent-kafka producer. The fault primitives are proven with plain
TCP connects (and UDP for the one-way drop), then a partition leader is isolated:
the survivors elect new leaders within the ZooKeeper session timeout plus a few
seconds, and after the heal the isolated broker rejoins every ISR with no
acknowledged record lost.

Needs root (``ip netns``), iproute2 and Java 17 with ZooKeeper's jars; skipped
otherwise. Nothing is created in the root namespace, and the module checks that
nothing with the run's prefix is left once it is done.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fault import checker
from tests.fault.cluster_faults import FAULT_OVERRIDES, wait_for
from tests.fault.netns import VirtualNetwork, leftovers, root_sockets_toward, unavailable_reason
from tests.fault.netns_cluster import NetFaultCluster, skip_reason, virtual_cluster
from tests.fault.workload import LoadProducer, final_check

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "netns"
PARTS = [0, 1, 2]
BROKERS = ["b0", "b1", "b2"]
SESSION_S = int(FAULT_OVERRIDES["zookeeper.session.timeout.ms"]) / 1000
PORT = 9092


@dataclass
class Env:
    net: VirtualNetwork
    fc: NetFaultCluster


def _skip_unless_netns() -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with virtual_cluster(tmp_path_factory.mktemp("netns"), BROKERS) as (net, fc):
        fc.create_topic(TOPIC, partitions=len(PARTS), rf=3)
        yield Env(net, fc)


@pytest.fixture(autouse=True)
def healed(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each cluster test: every fault healed, full ISRs again, and no socket of
    the root namespace ever aimed at the test network."""
    yield
    if "env" not in request.fixturenames:
        return
    e: Env = request.getfixturevalue("env")
    e.net.heal()
    e.fc.wait_isr_full(TOPIC, len(PARTS), 40)
    assert root_sockets_toward(e.net.subnet) == []


@contextlib.contextmanager
def _producer(fc: NetFaultCluster, history: checker.History, **kw: Any
              ) -> Iterator[LoadProducer]:
    """A confluent-kafka idempotent acks=all producer whose threads live in the client
    host; closed on the way out, so that none of its threads stays there."""
    load = fc.in_client(lambda: LoadProducer(fc.bootstrap, TOPIC, PARTS, history,
                                             **kw).start())
    try:
        yield load
    finally:
        load.close()
        load.producer.close()


# --------------------------------------------------------------------------------------
# the network alone


def test_cleanup_on_interrupt_leaves_nothing() -> None:
    _skip_unless_netns()
    with pytest.raises(KeyboardInterrupt):
        with VirtualNetwork(["a", "b"]) as net:
            sleeper = net.popen("a", ["sleep", "60"])
            net.partition(["a"], ["b"])
            assert len(leftovers(net.prefix)) == 3        # sw, a, b
            raise KeyboardInterrupt
    assert sleeper.poll() is not None
    assert leftovers(net.prefix) == []


# --------------------------------------------------------------------------------------
# the cluster


def test_produce_and_consume_from_the_client_host(env: Env) -> None:
    fc, history = env.fc, checker.History()
    with _producer(fc, history, rate=None, max_records=300) as producer:
        assert producer.drain(30) == 0
    assert history.acked_count() == 300 and not history.failed
    final = {p: fc.read_partition(TOPIC, p) for p in PARTS}    # Fetch from the client host
    report = checker.check(history, final)
    assert report.ok and report.read >= 300, report.summary()
    assert fc.zk_registered() == {0, 1, 2}                     # kazoo from the client host


def test_two_way_partition_between_brokers(env: Env) -> None:
    net = env.net
    fault = net.partition(["b1"], ["b2"])
    assert net.tcp_probe("b1", "b2", PORT) != "ok"
    assert net.tcp_probe("b2", "b1", PORT) != "ok"
    for src, dst in [("b1", "b0"), ("b2", "b0"), ("b0", "b1"), ("b0", "b2"),
                     ("client", "b1"), ("client", "b2"), ("b1", "zk"), ("b2", "zk")]:
        assert net.tcp_probe(src, dst, PORT if dst != "zk" else 2181) == "ok", (src, dst)
    fault.heal()
    assert net.tcp_probe("b1", "b2", PORT) == "ok"
    assert net.tcp_probe("b2", "b1", PORT) == "ok"
    assert [(e.action, e.kind) for e in net.log[-2:]] == [("apply", "partition"),
                                                           ("heal", "partition")]


def test_one_way_drop(env: Env) -> None:
    net = env.net
    net.drop("b0", "b2")
    assert net.tcp_probe("b0", "b2", PORT) == "EINVAL"       # b0's own route refuses at once
    assert not net.udp_reaches("b0", "b2")
    assert net.udp_reaches("b2", "b0")                       # the other direction still flows,
    assert net.tcp_probe("b2", "b0", PORT) == "timeout"      # but b0's SYN-ACK is dropped
    for src, dst in [("b0", "b1"), ("b1", "b2"), ("b2", "b1"), ("client", "b0")]:
        assert net.tcp_probe(src, dst, PORT) == "ok", (src, dst)
    net.heal()
    assert net.tcp_probe("b0", "b2", PORT) == "ok"
    assert net.tcp_probe("b2", "b0", PORT) == "ok"
    assert net.udp_reaches("b0", "b2")


def test_bridge_and_link_down(env: Env) -> None:
    net = env.net
    bridge = net.bridge(["b0"], "b1", ["b2"])
    assert net.tcp_probe("b0", "b2", PORT) != "ok"
    assert net.tcp_probe("b2", "b0", PORT) != "ok"
    for src, dst in [("b0", "b1"), ("b1", "b0"), ("b1", "b2"), ("b2", "b1")]:
        assert net.tcp_probe(src, dst, PORT) == "ok", (src, dst)
    bridge.heal()
    net.link_down("b2")
    assert net.tcp_probe("client", "b2", PORT, timeout=0.5) != "ok"
    assert net.tcp_probe("client", "b1", PORT) == "ok"
    net.link_up("b2")
    wait_for("b2 reachable after link_up",
             lambda: net.tcp_probe("client", "b2", PORT, timeout=0.5) == "ok", 5.0)
    assert not net.active_faults()


def test_isolated_leader_is_replaced_then_rejoins(env: Env) -> None:
    net, fc, history = env.net, env.fc, checker.History()
    with _producer(fc, history, rate=200) as producer:
        _isolate_and_rejoin(net, fc, history, producer)
    res = final_check(fc, TOPIC, PARTS, history, compare_logs=False)
    assert res.ok, res.summary()
    kinds = [(e.action, e.kind) for e in net.log]
    assert ("apply", "isolate") in kinds and ("heal", "isolate") in kinds


def _isolate_and_rejoin(net: VirtualNetwork, fc: NetFaultCluster, history: checker.History,
                        producer: LoadProducer) -> None:
    wait_for("first acks", lambda: history.acked_count() >= 100, 20)
    md = fc.metadata(TOPIC)
    victim = md[0].leader
    led = [p for p in PARTS if md[p].leader == victim]
    survivors = {0, 1, 2} - {victim}

    t0 = time.monotonic()
    fault = net.isolate(fc.host_of(victim))

    def new_leaders() -> bool:
        seen = fc.metadata(TOPIC, min(survivors))              # a surviving broker's view
        return all(seen[p].error == 0 and seen[p].leader in survivors for p in led)
    wait_for(f"leaders of {led} moved off isolated broker {victim}", new_leaders,
             SESSION_S + 8, 0.1)
    elected_after = time.monotonic() - t0
    assert elected_after < SESSION_S + 8
    wait_for("ZooKeeper dropped the isolated broker", lambda: fc.zk_registered() == survivors, 10)
    acked = history.acked_count()
    wait_for("acks while isolated", lambda: history.acked_count() >= acked + 200, 20)

    fault.heal()
    fc.wait_isr_full(TOPIC, len(PARTS), 40)                    # the victim is back in every ISR
    assert all(victim in pi.isr for pi in fc.metadata(TOPIC, victim).values())
    assert producer.stop(30) == 0 and not history.fatal
