"""Issue 16, item 5 ("coming back by itself"), with real processes and ZooKeeper.

A broker started again at once after kill -9 finds its dead session's
/brokers/ids/<id> (and /controller, if it was the controller) still in
ZooKeeper. The registration names the endpoints the new process has just bound:
it replaces it at once (before ZooKeeper expires the dead session), the
controller handles a restarted broker in one step, so it never leaves the
cluster's metadata, and it rejoins the ISRs. The restart here is
BrokerProcess.spawn right after the kill, not Cluster.restart (which waits for
the unregistration).

One 3-broker cluster (zookeeper.session.timeout.ms=6000), four scenes in order:
a follower-and-leader broker, the controller (its dead session holds /controller
until the expiry; the next controller sees the restart from the zxids), and a
second process with a live broker's id (other endpoints: it waits, and a SIGTERM
during the wait exits cleanly; without one it gives up after the wait, exit 1).
"""

from __future__ import annotations

import signal
import time

import pytest

from protocol.api_keys import ApiKey
from protocol.records import build_batch
from protocol.spec import api
from tests.integration.cluster import (DEFAULT_OVERRIDES, BrokerProcess, Cluster, MakeCluster,
                                      WireClient)
from tests.integration.multi import led_in_sync, metadata, until
from tests.integration.zookeeper import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SESSION_TIMEOUT_S = int(DEFAULT_OVERRIDES["zookeeper.session.timeout.ms"]) / 1000
WAITING_LINE = "is still registered in ZooKeeper by session"
REPLACED_LINE = "with our own endpoints"
TOPIC = "rf3"


def partitions(b: BrokerProcess) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, isr) of TOPIC, as ``b`` sees it."""
    return {p.partition_index: (p.leader_id, sorted(p.isr_nodes))
            for t in metadata(b, [TOPIC]).topics for p in t.partitions}


def controller_id(c: Cluster) -> int | None:
    """The controller every running broker names, once they agree on a live one."""
    ids = {metadata(b, []).controller_id for b in c.brokers if b.running}
    (ctl,) = ids if len(ids) == 1 else (None,)
    return ctl if ctl in {b.broker_id for b in c.brokers if b.running} else None


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    c = make_cluster("restart", 3, overrides={
        "leader.imbalance.check.interval.seconds": "3600",
        "auto.create.topics.enable": "false"})
    ctl = until(lambda: controller_id(c), 20, "a controller")
    spec = api(ApiKey.CREATE_TOPICS).request
    topic = spec.structs["CreatableTopic"].new(
        name=TOPIC, num_partitions=-1, replication_factor=-1,
        assignments=[spec.structs["CreatableReplicaAssignment"].new(
            partition_index=p, broker_ids=[p, (p + 1) % 3, (p + 2) % 3]) for p in range(3)])
    with WireClient(c.broker(ctl).port, timeout=20) as w:
        resp = w.request(ApiKey.CREATE_TOPICS, 5, spec.new(topics=[topic], timeout_ms=15000))
    assert resp.topics[0].error_code == 0, resp.topics[0]
    assert_replicating(c, c.brokers[0])
    return c


def assert_replicating(c: Cluster, asked: BrokerProcess) -> None:
    """Every partition of TOPIC has its full ISR again, and an acks=all produce to
    each (which needs every ISR member to fetch it) succeeds. The leader's own
    metadata must say so too (multi.led_in_sync): ``asked``'s can be ahead of the
    leader's LeaderAndIsr, and the raw Produce would then be refused."""
    full = until(lambda: (lambda m: m if len(m) == 3 and all(
        leader >= 0 and isr == [0, 1, 2] for leader, isr in m.values()) and all(
        led_in_sync(c.brokers, asked.port, TOPIC, p, 3) for p in m) else None)(
        partitions(asked)), 25, "full ISRs for " + TOPIC)
    for p, (leader, _isr) in full.items():
        with WireClient(c.broker(leader).port, timeout=15) as w:
            r = w.produce(TOPIC, p, build_batch([(b"k", b"v%d" % p, int(time.time() * 1000))]),
                          acks=-1)
        assert r.error_code == 0, (p, leader, r)


def kill_and_start_at_once(c: Cluster, b: BrokerProcess) -> float:
    """kill -9 ``b``, spawn it again straight away; -> seconds from the kill until
    it is ready (it answers and Metadata lists it, i.e. it registered)."""
    t0 = time.monotonic()
    c.kill9(b)
    b.spawn()
    b.wait_ready(SESSION_TIMEOUT_S + 5)
    return time.monotonic() - t0


def assert_replaced(b: BrokerProcess, c: Cluster) -> None:
    """``b`` replaced its dead session's registration (no wait), and the controller
    saw it restart in one step: joined and left together, never left alone."""
    log = b.log_text()
    assert log.count(REPLACED_LINE) == 1 and WAITING_LINE not in log, log[-4000:]
    assert "already registered by another session" not in log
    changes = [line for other in c.brokers for line in other.log_text().splitlines()
               if "brokers joined" in line and f"{b.broker_id}]" in line]
    assert changes, "no controller logged the restart"
    alone = [line for line in changes if f"left [{b.broker_id}]" in line
             and f"joined [{b.broker_id}]" not in line]
    assert not alone, alone


def test_broker_restarted_right_after_kill9_replaces_its_registration_and_rejoins(
        cluster: Cluster) -> None:
    c = cluster
    ctl = until(lambda: controller_id(c), 20, "a controller")
    victim = next(b for b in c.brokers if b.broker_id != ctl)
    took = kill_and_start_at_once(c, victim)
    print(f"broker {victim.broker_id} ready {took:.1f}s after kill -9 "
          f"(session timeout {SESSION_TIMEOUT_S:g}s)")
    assert took < SESSION_TIMEOUT_S          # registered before the dead session expired
    assert_replicating(c, c.broker(ctl))
    assert_replaced(victim, c)


def test_controller_restarted_right_after_kill9_replaces_its_registration_and_rejoins(
        cluster: Cluster) -> None:
    """Its dead session also holds /controller (until the expiry): nobody sees the
    restart when it happens; the next controller finds it (the partitions it led
    have a state older than its registration) and moves their leadership."""
    c = cluster
    ctl = until(lambda: controller_id(c), 20, "a controller")
    victim = c.broker(ctl)
    took = kill_and_start_at_once(c, victim)
    print(f"controller {ctl} ready {took:.1f}s after kill -9 "
          f"(session timeout {SESSION_TIMEOUT_S:g}s)")
    # registered at once, but Metadata names it only once a controller sends
    # UpdateMetadata: /controller goes with the dead session, then one is elected
    assert took < SESSION_TIMEOUT_S + 5
    log = victim.log_text()
    assert log.count(REPLACED_LINE) == 1 and WAITING_LINE not in log, log[-4000:]
    until(lambda: controller_id(c) is not None, 15, "one live controller everybody names")
    assert_replicating(c, victim)


def impostor_of(c: Cluster, live: BrokerProcess) -> BrokerProcess:
    """A second process with ``live``'s broker id (its own port and dirs)."""
    return BrokerProcess(live.broker_id, free_port(), c.base_dir / f"impostor-{time.time_ns()}",
                         c.zk_connect, dict(live.overrides))


def test_sigterm_during_the_wait_exits_cleanly(cluster: Cluster) -> None:
    c = cluster
    live = c.brokers[1]
    impostor = impostor_of(c, live)
    impostor.spawn()
    try:
        until(lambda: WAITING_LINE in impostor.log_text(), 15, "the waiting line")
        t0 = time.monotonic()
        assert impostor.proc is not None
        impostor.proc.send_signal(signal.SIGTERM)
        assert impostor.stop(15, already_signalled=True) == 0
    finally:
        impostor.stop()
    took = time.monotonic() - t0
    log = impostor.log_text()
    assert "stopped before registering in ZooKeeper; shutting down" in log, log[-4000:]
    assert "shut down completed" in log and "Traceback" not in log, log[-4000:]
    print(f"SIGTERM during the wait: exited 0 after {took:.1f}s")
    assert took < 10
    assert live.running and live.broker_id in {b.node_id for b in metadata(live, []).brokers}
    assert_replicating(c, live)


def test_id_held_by_a_live_broker_exits_with_the_error_after_the_wait(
        cluster: Cluster) -> None:
    """A second process with a running broker's id waits the session timeout out
    (the registration might be a dead session's), then exits 1 with the error,
    after a clean shutdown of what it had started."""
    c = cluster
    live = c.brokers[2]
    impostor = impostor_of(c, live)
    t0 = time.monotonic()
    impostor.spawn()
    try:
        assert impostor.proc is not None
        rc = impostor.proc.wait(SESSION_TIMEOUT_S + 3 + 10)
    finally:
        impostor.stop()
    took = time.monotonic() - t0
    log = impostor.log_text()
    print(f"id {live.broker_id} held by a live broker: exit {rc} after {took:.1f}s")
    assert rc == 1, log[-4000:]
    assert "not our endpoints" in log and WAITING_LINE in log, log[-4000:]
    assert f"ERROR broker id {live.broker_id} is already registered by another session" in log
    assert "still after waiting" in log and "shut down completed" in log, log[-4000:]
    assert "Traceback" not in log, log[-4000:]
    assert live.running and live.broker_id in {b.node_id for b in metadata(live, []).brokers}
