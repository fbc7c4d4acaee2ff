"""Transactions end to end on a real 3-broker cluster (real ZooKeeper) with
confluent-kafka (librdkafka), the Java client (JavaTransactions.java) and aiokafka
(aiokafka_transactions.py): commits and aborts across partitions led by different
brokers, read_committed against read_uncommitted consumers, the .txnindex on every
replica, fencing of an older producer with the same transactional id, and a
producer killed mid-transaction, aborted by the coordinator after its timeout so
that the last stable offset moves on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from storage.txn_index import TxnIndex
from tests.integration.clients.test_java_client import java_classpath  # noqa: F401
from tests.integration.cluster import REPO, Cluster, MakeCluster
from tests.integration.multi import create_topic, wait_until

pytestmark = pytest.mark.integration

JAVA_PROGRAM = Path(__file__).with_name("JavaTransactions.java")
AIOKAFKA_PROGRAM = Path(__file__).with_name("aiokafka_transactions.py")

OVERRIDES = {"transaction.state.log.replication.factor": "3",
             "transaction.state.log.min.isr": "2",
             "transaction.state.log.num.partitions": "3",
             "offsets.topic.replication.factor": "3",
             "offsets.topic.num.partitions": "3",
             "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("txn", size=3, overrides=OVERRIDES)


def topic(cluster: Cluster, name: str, partitions: int = 3) -> str:
    assert create_topic(cluster.brokers[0].port, name, partitions, 3,
                        {"min.insync.replicas": "2"}) == 0
    return name


def producer(cluster: Cluster, tid: str, **extra: Any) -> Any:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid,
                  "transaction.timeout.ms": 10000, **extra})
    p.init_transactions(30)
    return p


def consume_all(cluster: Cluster, name: str, isolation: str, expected: int,
                timeout: float = 30.0) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record a fresh consumer reads."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{name}-{isolation}",
                  "auto.offset.reset": "earliest", "isolation.level": isolation,
                  "enable.auto.commit": False})
    c.subscribe([name])
    got: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + timeout
    quiet_until = None
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                if len(got) >= expected:
                    quiet_until = quiet_until or time.monotonic() + 1.0
                    if time.monotonic() > quiet_until:
                        break
                continue
            assert not m.error(), m.error()
            got.append((m.partition(), m.offset(), m.value()))
    finally:
        c.close()
    return got


def test_read_committed_sees_exactly_the_committed_records(cluster: Cluster) -> None:
    name = topic(cluster, "txn-commit-abort")
    p = producer(cluster, "tx-commit-abort")
    plan = [("c1", True), ("a1", False), ("c2", True), ("a2", False), ("c3", True)]
    for label, commit in plan:
        p.begin_transaction()
        for i in range(12):
            p.produce(name, value=f"{label}-{i}".encode(), partition=i % 3)
        if commit:
            p.commit_transaction(30)
        else:
            p.flush(30)
            p.abort_transaction(30)
    committed = consume_all(cluster, name, "read_committed", 36)
    values = sorted(v.decode() for _, _, v in committed)
    assert values == sorted(f"{lab}-{i}" for lab, c in plan if c for i in range(12))
    for part in range(3):
        offsets = [o for pa, o, _ in committed if pa == part]
        assert offsets == sorted(offsets)
    everything = consume_all(cluster, name, "read_uncommitted", 60)
    assert len(everything) == 60                     # every data record, markers skipped
    # each replica of each partition indexed both aborts
    for b in cluster.brokers:
        for part in range(3):
            d = Path(b.log_dir) / f"{name}-{part}"
            entries = [e for f in sorted(d.glob("*.txnindex"))
                       for e in TxnIndex(str(f), 0).entries()]
            assert len(entries) == 2, (b.broker_id, part, entries)


def test_an_older_producer_is_fenced_and_its_writes_never_show(cluster: Cluster) -> None:
    from confluent_kafka import KafkaException
    name = topic(cluster, "txn-fencing")
    old = producer(cluster, "tx-fence")
    old.begin_transaction()
    old.produce(name, value=b"zombie-1", partition=0)
    old.flush(30)
    new = producer(cluster, "tx-fence")             # fences `old`, aborts its transaction
    new.begin_transaction()
    new.produce(name, value=b"fresh", partition=0)
    new.commit_transaction(30)
    with pytest.raises(KafkaException) as e:
        old.produce(name, value=b"zombie-2", partition=1)
        old.commit_transaction(30)
    assert e.value.args[0].fatal() or "fenced" in str(e.value).lower()
    values = [v for _, _, v in consume_all(cluster, name, "read_committed", 1)]
    assert values == [b"fresh"]


CHILD = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[2],
                  "transaction.timeout.ms": 3000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(sys.argv[3], value=b"orphan", partition=0)
    p.flush(30)
    print("ready", flush=True)
    time.sleep(600)
""")


def test_a_producer_killed_mid_transaction_is_aborted_after_its_timeout(
        cluster: Cluster, tmp_path: Path) -> None:
    name = topic(cluster, "txn-orphan", partitions=1)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen([sys.executable, str(script), cluster.bootstrap, "tx-orphan", name],
                             stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    # another producer commits behind the orphan's open transaction
    p = producer(cluster, "tx-after-orphan")
    p.begin_transaction()
    p.produce(name, value=b"behind", partition=0)
    p.commit_transaction(30)
    # held back by the open transaction, until the coordinator aborts it (3 s timeout)
    values = wait_until(lambda: [v for _, _, v in consume_all(cluster, name, "read_committed", 1,
                                                                 timeout=3)],
                        40, "the orphaned transaction to be aborted")
    assert values == [b"behind"]


def expected_values(labels: dict[str, bool]) -> list[str]:
    return sorted(f"{label}-{i}" for label, commit in labels.items() if commit for i in range(12))


def test_java_client_transactions(cluster: Cluster, java_classpath: str) -> None:  # noqa: F811
    name = topic(cluster, "txn-java")
    res = subprocess.run(["java", "-cp", java_classpath, str(JAVA_PROGRAM), cluster.bootstrap,
                          name, "tx-java"], capture_output=True, text=True, timeout=240,
                         cwd=REPO)
    assert res.returncode == 0 and "DONE" in res.stdout, (res.stdout[-3000:],
                                                           res.stderr[-5000:])
    got = sorted(v.decode() for _, _, v in consume_all(cluster, name, "read_committed", 24))
    assert got == expected_values({"j1": True, "ja": False, "j2": True})
    assert len(consume_all(cluster, name, "read_uncommitted", 36)) == 36


def test_aiokafka_transactions(cluster: Cluster) -> None:
    name = topic(cluster, "txn-aiokafka")
    res = subprocess.run([sys.executable, str(AIOKAFKA_PROGRAM), cluster.bootstrap, name,
                          "tx-aiokafka"], capture_output=True, text=True, timeout=240, cwd=REPO)
    assert res.returncode == 0, res.stderr[-5000:]
    read = json.loads(res.stdout.strip().splitlines()[-1])["values"]
    want = expected_values({"k1": True, "ka": False, "k2": True})
    assert sorted(read) == want                      # aiokafka's own read_committed consumer
    got = sorted(v.decode() for _, _, v in consume_all(cluster, name, "read_committed", 24))
    assert got == want


def test_consume_transform_produce_commits_offsets_in_the_transaction(cluster: Cluster) -> None:
    """read_committed input, output and the group's offsets in one transaction; one
    aborted round is rewound and redone: the output holds every input exactly once."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    source, sink = topic(cluster, "ctp-in", 2), topic(cluster, "ctp-out", 2)
    plain = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(200):
        plain.produce(source, value=b"%d" % i, partition=i % 2)
    plain.flush(30)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "ctp",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(source, 0), TopicPartition(source, 1)])
    p = producer(cluster, "tx-ctp")
    done, rounds, aborted = 0, 0, 0
    try:
        while done < 200 and rounds < 200:
            rounds += 1
            msgs = [m for m in consumer.consume(50, 2) if not m.error()]
            if not msgs:
                continue
            p.begin_transaction()
            for m in msgs:
                p.produce(sink, value=b"out-" + m.value(), partition=m.partition())
            p.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                          consumer.consumer_group_metadata(), 30)
            if not aborted and done:                        # one round aborted, then redone
                aborted = len(msgs)
                p.abort_transaction(30)
                committed = consumer.committed(consumer.assignment(), 30)
                for tp in committed:
                    consumer.seek(TopicPartition(tp.topic, tp.partition,
                                                 tp.offset if tp.offset >= 0 else 0))
                continue
            p.commit_transaction(30)
            done += len(msgs)
        committed = consumer.committed(consumer.assignment(), 30)
    finally:
        consumer.close()
    assert aborted and sorted(tp.offset for tp in committed) == [100, 100]
    out = sorted(v for _, _, v in consume_all(cluster, sink, "read_committed", 200))
    assert out == sorted(b"out-%d" % i for i in range(200))
