"""The mixed queue load (tests/fault/queue_load.py) on a loopback 3-broker cluster
through broker faults, judged by the queue checker (issue 16, item 3).

A 6-partition RF-3 topic with min.insync.replicas=2; three producers (two idempotent,
one not, all acks=all), an assigned consumer and a group of two committing consumers.
Meanwhile: the leader of partition 0 is killed (SIGKILL) and restarted, another broker
is stopped (SIGTERM) and restarted, a group consumer is restarted. Then the load stops,
every partition is read whole, and the history must show no anomaly, acknowledged sends
of every producer on every partition, and rebalances and commits of each group member.

Needs Java 17 and ZooKeeper's jars, as tests/fault/test_failover.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.fault import batch_evidence
from tests.fault.cluster_faults import FAULT_OVERRIDES, FaultCluster, wait_for
from tests.fault.queue_checker import check
from tests.fault.queue_history import QueueHistory
from tests.fault.queue_load import QueueLoad

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SESSION_S = int(FAULT_OVERRIDES["zookeeper.session.timeout.ms"]) / 1000
TOPIC = "mixed"
PARTS = list(range(6))
HOLD_S = 3.0              # load goes on this long with a broker down


def _writable_again(load: QueueLoad, since: float, what: str) -> float:
    """Until every partition acknowledged a send invoked after ``since`` -> seconds."""
    def every_partition() -> dict[int, float] | None:
        acks = load.acked_since(since)
        return acks if len(acks) == len(PARTS) else None
    acks = wait_for(f"every partition writable after {what}", every_partition,
                    SESSION_S + 20, 0.1)
    return max(acks.values()) - since


def _group_reads_again(load: QueueLoad, timeout: float = 30.0) -> None:
    """Until the group's members hold every partition between them and have read on."""
    counts = [g.count for g in load.group_consumers]

    def settled() -> bool:
        held = [p for g in load.group_consumers for p in g.assignment]
        return (sorted(held) == PARTS and all(
            g.count > n for g, n in zip(load.group_consumers, counts, strict=True)
            if g.assignment))
    wait_for("the group to hold every partition and read", settled, timeout, 0.1)


def test_mixed_load_through_broker_and_consumer_restarts(zk: str, tmp_path: Path) -> None:
    fc = FaultCluster(zk, tmp_path / "cluster", 3).start()
    try:
        fc.create_topic(TOPIC, len(PARTS), 3, {"min.insync.replicas": "2"})
        history = QueueHistory()
        load = QueueLoad(fc.bootstrap, TOPIC, PARTS, history, rate=150, seed=7)
        fc.cleanups.append(load.close)
        load.start()
        _writable_again(load, time.monotonic(), "the start")
        _group_reads_again(load)

        victim = fc.broker(fc.leader(TOPIC, 0))                     # kill -9 a leader
        t = time.monotonic()
        fc.sigkill(victim)
        fc.wait_leaders(TOPIC, PARTS, avoid={victim.broker_id}, timeout=SESSION_S + 15)
        took = _writable_again(load, t, f"SIGKILL of broker {victim.broker_id}")
        print(f"SIGKILL {victim.broker_id}: every partition acked after {took:.2f}s")
        time.sleep(HOLD_S)
        fc.restart(victim)
        fc.wait_isr_full(TOPIC, len(PARTS), 45)

        other = next(b for b in fc.brokers if b.broker_id != victim.broker_id)
        t = time.monotonic()
        code, secs = fc.sigterm(other)                              # controlled shutdown
        took = _writable_again(load, t, f"SIGTERM of broker {other.broker_id}")
        print(f"SIGTERM {other.broker_id}: exit {code} after {secs:.2f}s; every "
              f"partition acked after {took:.2f}s")
        time.sleep(HOLD_S)
        fc.restart(other)
        fc.wait_isr_full(TOPIC, len(PARTS), 45)

        restarted = load.restart_consumer()
        _group_reads_again(load)
        _writable_again(load, time.monotonic(), "the consumer restart")

        undelivered = load.stop()
        load.final_reads(fc)
        report = load.check()
        load.save(tmp_path / "history.jsonl")
        print(report.summary(), load.summary(), f"undelivered {undelivered}", sep="\n")
        evidence = batch_evidence.duplicates(
            report, [(b.broker_id, b.log_dir) for b in fc.brokers], TOPIC)
    finally:
        fc.stop()

    assert report.ok, f"{report.summary()}\n{evidence}\n{load.client_logs()}"
    assert all(p.fatal is None for p in load.producers), load.summary()
    acked = load.acked()
    assert sorted(acked) == ["producer-0", "producer-1", "producer-2"]
    for producer, by_part in acked.items():
        assert sorted(p for p, n in by_part.items() if n > 0) == PARTS, (producer, by_part)
    ops = history.snapshot()
    for g in load.group_consumers:
        kinds = {op.kind for op in ops if op.process == g.process}
        assert {"open", "subscribe", "rebalance", "poll", "commit"} <= kinds, (g.process,
                                                                              kinds)
    assert sum(op.kind == "open" for op in ops if op.process == restarted) == 2
    loaded = QueueHistory.load(tmp_path / "history.jsonl")
    assert len(loaded.ops) == len(ops) and check(loaded).ok
