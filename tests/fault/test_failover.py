"""Replication under real faults (short versions; tests/fault/campaign.py is the long one).

One ZooKeeper per module, three broker processes per test (own chroot), signals by
pid. Each test runs an idempotent acks=all confluent-kafka producer, a live consumer
and the invariant monitor while it breaks things, then ``final_check``: every
acknowledged record read back exactly once in order, HW invariants, replicas' files
byte-identical below the HW. The last test is the negative control: with unclean
leader election on and min.insync.replicas=1 the same checker must report loss.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol import records
from tests.fault import checker
from tests.fault.cluster_faults import FaultCluster, wait_for
from tests.fault.workload import LiveConsumer, LoadProducer, Monitor, final_check

SESSION_S = 4.0          # FAULT_OVERRIDES zookeeper.session.timeout.ms


@pytest.fixture
def make_cluster(zk: str, tmp_path: Path) -> Iterator[Callable[..., FaultCluster]]:
    made: list[FaultCluster] = []

    def make(size: int = 3, **overrides: str) -> FaultCluster:
        fc = FaultCluster(zk, tmp_path / f"c{len(made)}", size,
                          {k.replace("_", "."): v for k, v in overrides.items()})
        made.append(fc)
        return fc.start()
    yield make
    for fc in made:
        fc.stop()


class Load:
    """Producer + live consumer + monitor on one topic."""

    def __init__(self, fc: FaultCluster, topic: str, parts: list[int], rate: float = 300) -> None:
        self.fc, self.topic, self.parts = fc, topic, parts
        self.history = checker.History()
        self.producer = LoadProducer(fc.bootstrap, topic, parts, self.history, rate=rate).start()
        self.consumer = LiveConsumer(fc.bootstrap, topic, parts, self.history).start()
        self.monitor = Monitor(fc, topic, parts).start()
        fc.cleanups += [self.monitor.stop, self.consumer.stop, self.producer.close]

    def acked(self) -> int:
        return self.history.acked_count()

    def wait_acks(self, more: int, timeout: float = 30.0) -> None:
        target = self.acked() + more
        wait_for(f"{more} more acks (have {self.acked()})", lambda: self.acked() >= target,
                 timeout, 0.05)

    def finish(self, min_acked: int, **kw: Any) -> None:
        undelivered = self.producer.stop(60)
        self.consumer.stop()
        assert not self.history.fatal, f"producer fatal error: {self.history.fatal}"
        res = final_check(self.fc, self.topic, self.parts, self.history, self.monitor, **kw)
        print(res.summary(), f"producer errors {self.producer.errors}",
              f"undelivered {undelivered}", f"seen {self.consumer.count}",
              f"samples {self.monitor.inv.samples} skipped {self.monitor.skipped} "
              f"({self.monitor.last_error})", sep="\n")
        assert res.report.acked >= min_acked, res.summary()
        assert res.ok, res.summary()


def probe_produce(fc: FaultCluster, broker_id: int, topic: str, p: int, acks: int = 1) -> int:
    """One single-record Produce straight to ``broker_id``; -> the partition's error.
    (Its value is a checker value of producer "probe", so the final check accepts it.)"""
    batch = records.build_batch([(None, checker.make_value("probe", p, 0),
                                  int(time.time() * 1000))])
    with fc.client(broker_id, timeout=5.0) as c:
        return int(c.produce(topic, p, batch, version=8, acks=acks).error_code)


def test_leader_sigkill_under_acks_all_load(make_cluster: Callable[..., FaultCluster]) -> None:
    fc = make_cluster()
    parts = [0, 1, 2]
    fc.create_topic("kill", 3, 3, {"min.insync.replicas": "2"})
    load = Load(fc, "kill", parts)
    load.wait_acks(300)
    for _ in range(3):
        victim = fc.broker(fc.leader("kill", 0))
        fc.sigkill(victim)
        t0 = time.monotonic()
        fc.wait_leaders("kill", parts, avoid={victim.broker_id}, timeout=SESSION_S + 15)
        print(f"killed {victim.broker_id}: new leaders after {time.monotonic() - t0:.2f}s")
        load.wait_acks(200, timeout=30)
        fc.restart(victim)
        fc.wait_isr_full("kill", 3, timeout=45)
    load.finish(min_acked=1000)


def test_sigstop_leader_past_session_timeout(make_cluster: Callable[..., FaultCluster]) -> None:
    fc = make_cluster()
    parts = [0, 1]
    fc.create_topic("stop", 2, 3, {"min.insync.replicas": "2"})
    load = Load(fc, "stop", parts)
    load.wait_acks(300)
    victim = fc.broker(fc.leader("stop", 0))
    old_epoch = fc.metadata("stop")[0].leader_epoch
    fc.sigstop(victim)
    wait_for(f"broker {victim.broker_id}'s session to expire",
             lambda: victim.broker_id not in fc.zk_registered(), SESSION_S + 10, 0.1)
    md = fc.wait_leaders("stop", parts, avoid={victim.broker_id}, timeout=15)
    assert md[0].leader_epoch > old_epoch
    load.wait_acks(300, timeout=30)       # the new leaders take acks=all writes
    fc.sigcont(victim)
    wait_for(f"broker {victim.broker_id} to register again",
             lambda: victim.broker_id in fc.zk_registered(), 30, 0.2)
    fc.wait_isr_full("stop", 2, timeout=45)
    load.wait_acks(200, timeout=30)
    # The resumed broker must be fully usable again, as a leader too: kill p0's current
    # leader; the victim (first in p0's assignment, in the ISR) takes over and must get
    # the restarted broker back into the ISR through AlterPartition (with its new
    # broker epoch: its ZooKeeper session, and so its registration, is a new one).
    current = fc.broker(fc.leader("stop", 0))
    fc.sigkill(current)
    md = fc.wait_leaders("stop", parts, avoid={current.broker_id}, timeout=SESSION_S + 15)
    assert md[0].leader == victim.broker_id, md[0]
    fc.restart(current)
    fc.wait_isr_full("stop", 2, timeout=30)
    load.wait_acks(200, timeout=30)
    load.finish(min_acked=800)


def test_kill_controller(make_cluster: Callable[..., FaultCluster]) -> None:
    fc = make_cluster()
    parts = [0, 1, 2]
    fc.create_topic("ctl", 3, 3, {"min.insync.replicas": "2"})
    load = Load(fc, "ctl", parts)
    load.wait_acks(300)
    old = fc.controller_id()
    before = fc.metadata("ctl")
    others = [p for p in parts if before[p].leader != old]
    assert others, f"controller {old} leads every partition: {before}"
    fc.sigkill(fc.broker(old))
    t0 = time.monotonic()
    # while there is no controller, the other leaders still answer (acks=1)
    for p in others:
        assert probe_produce(fc, before[p].leader, "ctl", p) == 0
    new = wait_for("a new controller", lambda: (c := fc.zk_controller()) is not None and c != old
                   and c, SESSION_S + 10, 0.05)
    took = time.monotonic() - t0
    print(f"controller {old} killed; broker {new} took over after {took:.2f}s")
    assert took <= SESSION_S + 6
    md = fc.wait_leaders("ctl", parts, avoid={old}, timeout=15)
    for p in others:   # no needless elections for partitions whose leader lived (the epoch
        assert md[p].leader == before[p].leader   # may move: dropping old from the ISR bumps it)
    load.wait_acks(300, timeout=30)
    fc.restart(fc.broker(old))
    fc.wait_isr_full("ctl", 3, timeout=45)
    load.finish(min_acked=600)


def test_kip101_follower_restarts_after_ack_then_leader_dies(
        make_cluster: Callable[..., FaultCluster]) -> None:
    """KIP-101 scenario 1 with RF 2, min.insync.replicas=1: the follower B is killed
    right after an ack (its HW checkpoint is stale) and restarted; the moment it is
    back in the ISR, the leader A dies. B leads; A comes back and must truncate by
    leader epoch, not by its high watermark. Nothing acked may be lost."""
    fc = make_cluster()
    a, b = 0, 1
    fc.create_topic("k1", configs={"min.insync.replicas": "1"}, assignment=[[a, b]])
    load = Load(fc, "k1", [0])
    load.wait_acks(300)
    fc.sigkill(fc.broker(b))
    load.wait_acks(100, timeout=30)
    fc.restart(fc.broker(b))
    wait_for("B back in the ISR", lambda: b in fc.zk_partition_state("k1", 0)["isr"], 30, 0.02)
    fc.sigkill(fc.broker(a))
    md = fc.wait_leaders("k1", [0], avoid={a}, timeout=SESSION_S + 15)
    assert md[0].leader == b
    load.wait_acks(200, timeout=30)
    fc.restart(fc.broker(a))
    fc.wait_isr_full("k1", 1, timeout=45)
    load.finish(min_acked=600)


def test_kip101_all_replicas_crash_restart_in_different_orders(
        make_cluster: Callable[..., FaultCluster]) -> None:
    """KIP-101 scenario 2: every replica dies at once (mid-write, so their tails
    differ) and they come back in different orders; the first ones back write under
    a new epoch and the last must truncate its divergent tail."""
    fc = make_cluster()
    parts = [0, 1]
    fc.create_topic("k2", 2, 3, {"min.insync.replicas": "2"})
    load = Load(fc, "k2", parts)
    load.wait_acks(300)
    for round_no in range(2):
        lead = fc.leader("k2", 0)
        for br in fc.brokers:
            fc.sigkill(br)
        rest = [br for br in fc.brokers if br.broker_id != lead]
        order = rest + [fc.broker(lead)] if round_no == 0 else [fc.broker(lead)] + rest
        fc.cluster.wait_broker_unregistered(order[0].broker_id, 30)
        for i, br in enumerate(order):
            fc.restart(br)
            if i == 1:      # two back: acks=all writes resume under a new epoch
                fc.wait_leaders("k2", parts, avoid=set(), timeout=30)
                load.wait_acks(100, timeout=40)
        fc.wait_isr_full("k2", 2, timeout=45)
        load.wait_acks(100, timeout=30)
    load.finish(min_acked=500)


def test_checker_reports_loss_with_unclean_election(
        make_cluster: Callable[..., FaultCluster]) -> None:
    """Negative control, the Jepsen-2013 two-step fault. unclean.leader.election=true,
    min.insync.replicas=1, RF 3, leader A.
    1. SIGSTOP both followers past the session timeout: the ISR shrinks to {A}, and
       A alone acknowledges acks=all writes (W).
    2. SIGKILL A, SIGCONT the followers: one of them, not in the ISR, is elected
       uncleanly and takes new writes at W's offsets; A comes back and truncates.
    The checker must report W (and nothing else) lost."""
    fc = make_cluster(unclean_leader_election_enable="true", min_insync_replicas="1")
    a, b, c = 0, 1, 2
    fc.create_topic("unclean", configs={"min.insync.replicas": "1",
                                        "unclean.leader.election.enable": "true"},
                    assignment=[[a, b, c]])
    history = checker.History()
    base = LoadProducer(fc.bootstrap, "unclean", [0], history, tag="base", rate=None,
                        max_records=200).start()
    assert base.drain(30) == 0 and history.acked_count() == 200
    fc.sigstop(fc.broker(b))
    fc.sigstop(fc.broker(c))
    wait_for("ISR == [A] in ZooKeeper",
             lambda: fc.zk_partition_state("unclean", 0)["isr"] == [a], SESSION_S + 20, 0.2)
    lonely = LoadProducer(fc.bootstrap, "unclean", [0], history, tag="lonely", rate=None,
                          max_records=300).start()
    assert lonely.drain(30) == 0
    w = {v for v in history.acked if checker.parse_value(v)[0] == "lonely"}  # type: ignore[index]
    assert len(w) == 300, f"only {len(w)} of 300 acknowledged by A alone"
    fc.sigkill(fc.broker(a))
    fc.sigcont(fc.broker(b))
    fc.sigcont(fc.broker(c))
    md = fc.wait_leaders("unclean", [0], avoid={a}, timeout=40)
    after = LoadProducer(fc.bootstrap, "unclean", [0], history, tag="after", rate=None,
                         max_records=400).start()
    assert after.drain(30) == 0
    fc.restart(fc.broker(a))
    # Only leaders are awaited (not a full ISR): this test is about the checker, not
    # about how fast the cluster heals after an unclean election.
    res = final_check(fc, "unclean", [0], history, None, compare_logs=False,
                      require_full_isr=False)
    print(f"unclean leader {md[0].leader}", res.summary(), sep="\n")
    assert not res.report.ok
    assert res.report.lost, "the checker did not notice the acknowledged writes that were lost"
    assert set(res.report.lost_values) <= w


def test_controlled_shutdown_of_the_controller(make_cluster: Callable[..., FaultCluster]) -> None:
    """SIGTERM the active controller (which also leads partitions) under acks=all load:
    its leaderships move first, it exits cleanly within seconds, nothing acked is lost."""
    fc = make_cluster()
    parts = [0, 1, 2]
    fc.create_topic("cs", 3, 3, {"min.insync.replicas": "2"})
    load = Load(fc, "cs", parts)
    load.wait_acks(300)
    ctl = fc.broker(fc.controller_id())
    code, took = fc.sigterm(ctl, timeout=20)
    print(f"controller {ctl.broker_id} exited with {code} after {took:.2f}s")
    assert code == 0 and took < 15, f"exit code {code} after {took:.1f}s\n{ctl.tail(30)}"
    fc.wait_leaders("cs", parts, avoid={ctl.broker_id}, timeout=15)
    load.wait_acks(200, timeout=30)
    fc.restart(ctl)
    fc.wait_isr_full("cs", 3, timeout=45)
    load.finish(min_acked=500)
