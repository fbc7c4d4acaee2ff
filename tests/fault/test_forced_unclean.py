"""Kafka's classic acks=1 loss, forced on virtual hosts, and seen by the queue checker
(issue 16, item 3's proof); then the same fault with safe settings, where nothing is lost.

The fault (``_cut_off_leader``), on a one-partition RF-3 topic whose leader is also the
controller (so its ISR shrink, an AlterPartition to itself, still commits):

1. partition the leader from the other brokers (the client and ZooKeeper still reach
   it): the followers stop fetching and after replica.lag.time.max.ms the leader shrinks
   the ISR to itself. It goes on taking writes (acks=1; with min.insync.replicas=2 and
   acks=all it refuses them with NOT_ENOUGH_REPLICAS).
2. partition it from ZooKeeper too, still not from the client. Its followers are out
   of the ISR, so our leader fence (broker/replication/leader_fence.py) has nobody to
   miss and lets acks=1 writes on, as Kafka does. Once its session expires the other
   brokers elect a controller, which finds the partition's only ISR member gone: with
   unclean.leader.election.enable it makes an out-of-sync follower leader; without it
   the partition stays offline. The producer does not move: it talks only to the old
   leader, whose Metadata still names itself (nobody can tell it otherwise).
3. heal: the old leader learns of the new leader and truncates its log to it. Every
   acks=1 write it acknowledged since step 1 is gone.

The third test is the 2013 case itself, with our leader fence (issue 16, item 6): the
leader is cut off from ZooKeeper *and* its followers at once (the client still reaches
it), so the ISR stays full and no unclean election is needed. acks=1 writes it takes
before its fence is up are lost when the new leader is elected (as in Kafka: acks=1),
but from the fence on it acknowledges nothing, so the checker finds no lost write
acknowledged after the fence's bound (ZooKeeper connection given up after 2/3 of the
session, then a follower quiet for max(1 s, session/6)).

The live consumer is stopped before the fault and a fresh one reads after the heal:
records it read from the old leader during the fault would count as read (the checker
then names the loss inconsistent-offsets rather than lost-write).

Needs root, iproute2, Java 17 and ZooKeeper's jars, as tests/fault/test_netns.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fault import queue_checker
from tests.fault.cluster_faults import FAULT_OVERRIDES, wait_for
from tests.fault.netns import VirtualNetwork
from tests.fault.netns_cluster import NetFaultCluster, skip_reason, virtual_cluster
from tests.fault.queue_history import QueueHistory
from tests.fault.queue_workload import QueueConsumer, QueueProducer, final_reads

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BROKERS = ["b0", "b1", "b2"]
SESSION_S = int(FAULT_OVERRIDES["zookeeper.session.timeout.ms"]) / 1000
LAG_S = int(FAULT_OVERRIDES["replica.lag.time.max.ms"]) / 1000
ACK_SLACK_S = 0.5       # an acks=1 write acked just before step 1 may not be replicated yet


@dataclass
class Env:
    net: VirtualNetwork
    fc: NetFaultCluster


@dataclass
class Window:
    leader: int           # the old leader (and controller)
    start: float          # step 1 applied (monotonic)
    isolated: float       # step 2 applied
    healed: float
    rejoined: float       # the old leader back in the ISR: it has truncated by then
    new_leader: int       # -1: the partition stayed offline
    new_leo: int          # the new leader's log end when it was elected


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with virtual_cluster(tmp_path_factory.mktemp("unclean"), BROKERS) as (net, fc):
        yield Env(net, fc)


def _topic_led_by_controller(fc: NetFaultCluster, name: str, configs: dict[str, str]) -> int:
    """One partition, RF 3, preferred leader = the controller -> that broker."""
    ctl = wait_for("a controller", fc.zk_controller, 20)
    others = [b.broker_id for b in fc.brokers if b.broker_id != ctl]
    fc.create_topic(name, configs=configs, assignment=[[ctl, *others]])
    assert fc.leader(name, 0) == ctl
    return ctl


def _acked(history: QueueHistory) -> int:
    return sum(1 for op in history.snapshot() if op.kind == "send" and op.type == "ok")


def _cut_off_leader(net: VirtualNetwork, fc: NetFaultCluster, topic: str, leader: int,
                    history: QueueHistory, expect_new_leader: bool) -> Window:
    """Steps 1-3 of the module docstring; -> the window's times."""
    host = fc.host_of(leader)
    others = [fc.host_of(b.broker_id) for b in fc.brokers if b.broker_id != leader]

    start = time.monotonic()
    net.partition([host], others)                                           # step 1
    wait_for("ISR shrunk to the leader", lambda: fc.zk_partition_state(topic, 0)["isr"]
             == [leader], LAG_S * 3 + 5, 0.2)
    n = _acked(history)
    if expect_new_leader:
        wait_for("acks=1 writes with the ISR shrunk", lambda: _acked(history) >= n + 100, 15)
    isolated = time.monotonic()
    net.partition([host], ["zk"])                                           # step 2
    new_leader, new_leo = -1, -1
    if expect_new_leader:
        new_leader = wait_for("another leader elected", lambda: next(
            (s["leader"] for s in [fc.zk_partition_state(topic, 0)]
             if s["leader"] not in (leader, -1)), None), SESSION_S + 15, 0.2)
        new_leo = fc.disk_leo(new_leader, topic, 0)
        # The producer only talks to the old leader, which hears of no election and
        # answers its Metadata with itself: it keeps acking until the heal.
        n = _acked(history)
        wait_for("old leader acks after the election", lambda: _acked(history) >= n + 100, 20)
    else:
        wait_for("the old leader's session expired",
                 lambda: leader not in fc.zk_registered(), SESSION_S + 10, 0.2)
        time.sleep(2)                   # the controller had time to elect, if it would
        now = fc.zk_partition_state(topic, 0)["leader"]
        new_leader = now if now not in (leader, -1) else -1
    net.heal()                                                              # step 3
    healed = time.monotonic()
    fc.wait_isr_full(topic, 1, 40)
    return Window(leader, start, isolated, healed, time.monotonic(), new_leader, new_leo)


def _read_after_heal(fc: NetFaultCluster, topic: str, history: QueueHistory) -> None:
    """A fresh consumer reads the partition to its end, then the final read."""
    end = fc.list_offset(fc.leader(topic, 0), topic, 0)[1]
    reader = fc.in_client(lambda: QueueConsumer(fc.bootstrap, topic, [0], history,
                                                 "reader").start())
    try:
        wait_for(f"the reader at offset {end}", lambda: reader.high.get(0, 0) >= end, 30)
    finally:
        reader.stop()
    final_reads(fc, topic, [0], history)


def _check(history: QueueHistory, tmp_path: Path) -> queue_checker.QueueReport:
    history.save(tmp_path / "history.jsonl")
    report = queue_checker.check(history)
    print(report.summary())
    return report


def _lost(report: queue_checker.QueueReport) -> list[queue_checker.Case]:
    """The checker's cases of acknowledged writes no final read holds."""
    return report["lost-write"] + report["unseen"]


def _acked_outside(cases: list[queue_checker.Case], start: float,
                   end: float) -> list[queue_checker.Case]:
    """The cases whose acknowledged write has no time or one outside [start, end]."""
    return [c for c in cases if c.records[0].time is None
            or not start <= c.records[0].time <= end]


def test_acks1_writes_to_a_cut_off_leader_are_lost(env: Env, tmp_path: Path) -> None:
    net, fc, history = env.net, env.fc, QueueHistory()
    topic = "unclean"
    leader = _topic_led_by_controller(fc, topic, {"unclean.leader.election.enable": "true",
                                                  "min.insync.replicas": "1"})
    producer = fc.in_client(lambda: QueueProducer(fc.bootstrap, topic, [0], history,
                                                  acks="1", idempotent=False).start())
    consumer = fc.in_client(lambda: QueueConsumer(fc.bootstrap, topic, [0], history).start())
    try:
        wait_for("the consumer reads", lambda: consumer.count >= 100, 20)
        consumer.stop()
        w = _cut_off_leader(net, fc, topic, leader, history, expect_new_leader=True)
        assert producer.stop(30) == 0 and producer.fatal is None
    finally:
        producer.close()
        consumer.stop()
        net.heal()
    _read_after_heal(fc, topic, history)
    report = _check(history, tmp_path)
    lost = _lost(report)
    assert lost, report.summary()
    for case in lost:
        acked = case.records[0]
        assert acked.how == "acked" and acked.partition == 0, (str(case), report.summary())
    outside = _acked_outside(lost, w.start - ACK_SLACK_S, w.rejoined)
    assert not outside, ("\n".join(map(str, outside[:5])), w)
    low = w.new_leo                 # what the old leader wrote alone starts here
    assert all(c.records[0].offset is not None and c.records[0].offset >= low
               for c in lost), f"lost below the new leader's log end {low}"
    print(f"{len(lost)} acked writes lost (offsets >= {low}); leader {w.leader} -> "
          f"{w.new_leader}; window {w.healed - w.start:.1f}s (isolated from ZooKeeper "
          f"after {w.isolated - w.start:.1f}s)")


def test_safe_settings_lose_nothing_under_the_same_fault(env: Env, tmp_path: Path) -> None:
    net, fc, history = env.net, env.fc, QueueHistory()
    topic = "clean"
    leader = _topic_led_by_controller(fc, topic, {"min.insync.replicas": "2"})
    producer = fc.in_client(lambda: QueueProducer(fc.bootstrap, topic, [0], history,
                                                  acks="all", idempotent=True).start())
    consumer = fc.in_client(lambda: QueueConsumer(fc.bootstrap, topic, [0], history).start())
    try:
        wait_for("the consumer reads", lambda: consumer.count >= 100, 20)
        w = _cut_off_leader(net, fc, topic, leader, history, expect_new_leader=False)
        assert w.new_leader == -1, f"broker {w.new_leader} elected uncleanly"
        assert fc.leader(topic, 0) == leader          # offline until the old leader came back
        n = _acked(history)
        wait_for("acks after the heal", lambda: _acked(history) >= n + 100, 30)
        assert producer.stop(60) == 0 and producer.fatal is None
        consumer.stop()
    finally:
        producer.close()
        consumer.stop()
        net.heal()
    _read_after_heal(fc, topic, history)
    report = _check(history, tmp_path)
    assert report.ok, report.summary()
    assert report.acked >= 200
    print(f"window {w.healed - w.start:.1f}s (isolated from ZooKeeper after "
          f"{w.isolated - w.start:.1f}s); no leader elected meanwhile; leader {leader} again")


def test_acks1_writes_after_the_fence_is_up_are_not_lost(env: Env, tmp_path: Path) -> None:
    net, fc, history = env.net, env.fc, QueueHistory()
    topic = "fenced"
    leader = _topic_led_by_controller(fc, topic, {"min.insync.replicas": "1"})
    host = fc.host_of(leader)
    others = [fc.host_of(b.broker_id) for b in fc.brokers if b.broker_id != leader]
    producer = fc.in_client(lambda: QueueProducer(fc.bootstrap, topic, [0], history,
                                                  acks="1", idempotent=False).start())
    consumer = fc.in_client(lambda: QueueConsumer(fc.bootstrap, topic, [0], history).start())
    fence_bound = SESSION_S * 2 / 3 + max(1.0, SESSION_S / 6) + 1.0   # + 1 s of slack
    try:
        wait_for("the consumer reads", lambda: consumer.count >= 100, 20)
        consumer.stop()
        cut = time.monotonic()
        net.partition([host], [*others, "zk"])                 # clients still reach it
        new_leader = wait_for("another leader elected", lambda: next(
            (s["leader"] for s in [fc.zk_partition_state(topic, 0)]
             if s["leader"] not in (leader, -1)), None), SESSION_S + 15, 0.2)
        time.sleep(3)       # the fenced old leader refuses; a client that asks only it
        net.heal()          # (librdkafka's sparse connections) finds the new one after the heal
        n = _acked(history)
        wait_for("acks after the heal", lambda: _acked(history) >= n + 100, 30)
        fc.wait_isr_full(topic, 1, 40)
        assert producer.stop(30) == 0 and producer.fatal is None
    finally:
        producer.close()
        consumer.stop()
        net.heal()
    _read_after_heal(fc, topic, history)
    report = _check(history, tmp_path)
    lost = _lost(report)
    late = _acked_outside(lost, float("-inf"), cut + fence_bound)
    assert not late, "\n".join(map(str, late[:5])) + "\n" + report.summary()
    # the lost writes' offsets were given again by the new leader: inconsistent-offsets
    # and nonmonotonic-send follow from them, each naming a write acked before the fence
    follow = ("inconsistent-offsets", "nonmonotonic-send")
    for c in (c for a in follow for c in report[a]):
        first = min(r.time for r in c.records if r.time is not None)
        assert first <= cut + fence_bound, f"{c}\n{report.summary()}"
    others_found = [a for a in report.found() if a not in ("lost-write", "unseen", *follow)]
    assert not others_found, report.summary()
    print(f"leader {leader} -> {new_leader}; {len(lost)} acks=1 writes lost, all "
          f"acknowledged within {fence_bound:.1f}s of the cut (before the fence)")
