"""Issue 16, item 5 ("coming back by itself"), with real processes and ZooKeeper.

A broker started again at once after kill -9 finds its dead session's
/brokers/ids/<id> (and /controller, if it was the controller) still in
ZooKeeper. It waits for ZooKeeper to expire that session instead of exiting,
then registers and rejoins the ISRs. The restart here is BrokerProcess.spawn
right after the kill, not Cluster.restart (which waits for the unregistration).

One 3-broker cluster (zookeeper.session.timeout.ms=6000), four scenes in order:
a follower-and-leader broker, the controller, SIGTERM during the wait, and a
second process with a live broker's id (it gives up after the wait, exit 1).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest

from protocol.api_keys import ApiKey
from protocol.records import build_batch
from protocol.spec import api
from tests.integration.cluster import (CLEAN_SHUTDOWN_SKIP_LINE, DEFAULT_OVERRIDES,
                                       BrokerProcess, Cluster, WireClient)
from tests.integration.multi import metadata, until
from tests.integration.zookeeper import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SESSION_TIMEOUT_S = int(DEFAULT_OVERRIDES["zookeeper.session.timeout.ms"]) / 1000
WAITING_LINE = "is still registered in ZooKeeper by session"
WENT_AWAY_LINE = "went away after"
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
def cluster(zookeeper: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(zookeeper, tmp_path_factory.mktemp("restart"), 3, overrides={
        "leader.imbalance.check.interval.seconds": "3600",
        "auto.create.topics.enable": "false"})
    c.start()
    try:
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
        yield c
    finally:
        c.stop()


def assert_replicating(c: Cluster, asked: BrokerProcess) -> None:
    """Every partition of TOPIC has its full ISR again, and an acks=all produce to
    each (which needs every ISR member to fetch it) succeeds."""
    full = until(lambda: (lambda m: m if len(m) == 3 and all(
        leader >= 0 and isr == [0, 1, 2] for leader, isr in m.values()) else None)(
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


def assert_waited(b: BrokerProcess) -> None:
    log = b.log_text()
    assert WAITING_LINE in log and WENT_AWAY_LINE in log, log[-4000:]
    assert log.count(WAITING_LINE) == 1
    assert "already registered by another session" not in log


def test_broker_restarted_right_after_kill9_waits_and_rejoins(cluster: Cluster) -> None:
    c = cluster
    ctl = until(lambda: controller_id(c), 20, "a controller")
    victim = next(b for b in c.brokers if b.broker_id != ctl)
    took = kill_and_start_at_once(c, victim)
    print(f"broker {victim.broker_id} ready {took:.1f}s after kill -9 "
          f"(session timeout {SESSION_TIMEOUT_S:g}s)")
    assert took < SESSION_TIMEOUT_S + 5
    assert_waited(victim)
    assert_replicating(c, c.broker(ctl))


def test_controller_restarted_right_after_kill9_waits_and_rejoins(cluster: Cluster) -> None:
    c = cluster
    ctl = until(lambda: controller_id(c), 20, "a controller")
    victim = c.broker(ctl)
    took = kill_and_start_at_once(c, victim)
    print(f"controller {ctl} ready {took:.1f}s after kill -9 "
          f"(session timeout {SESSION_TIMEOUT_S:g}s)")
    assert took < SESSION_TIMEOUT_S + 5
    assert_waited(victim)
    until(lambda: controller_id(c) is not None, 15, "one live controller everybody names")
    assert_replicating(c, victim)


def test_sigterm_during_the_wait_exits_cleanly(cluster: Cluster) -> None:
    c = cluster
    ctl = until(lambda: controller_id(c), 20, "a controller")
    victim = next(b for b in c.brokers if b.broker_id != ctl)
    c.kill9(victim)
    victim.spawn()
    until(lambda: WAITING_LINE in victim.log_text(), 15, "the waiting line")
    t0 = time.monotonic()
    assert victim.proc is not None
    victim.proc.send_signal(signal.SIGTERM)
    assert victim.stop(15, already_signalled=True) == 0
    took = time.monotonic() - t0
    log = victim.log_text()
    assert "stopped before registering in ZooKeeper; shutting down" in log, log[-4000:]
    assert "shut down completed" in log and "Traceback" not in log, log[-4000:]
    print(f"SIGTERM during the wait: exited 0 after {took:.1f}s")
    assert took < 10
    victim.start(SESSION_TIMEOUT_S + 10)    # back again (waiting out the rest if need be)
    assert CLEAN_SHUTDOWN_SKIP_LINE in victim.log_text()   # that shutdown was a clean one
    assert_replicating(c, victim)


def test_id_held_by_a_live_broker_exits_with_the_error_after_the_wait(
        cluster: Cluster) -> None:
    """A second process with a running broker's id waits the session timeout out
    (the registration might be a dead session's), then exits 1 with the error,
    after a clean shutdown of what it had started."""
    c = cluster
    live = c.brokers[2]
    impostor = BrokerProcess(live.broker_id, free_port(), c.base_dir / "impostor",
                             c.zk_connect, dict(live.overrides))
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
