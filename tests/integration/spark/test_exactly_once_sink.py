"""The ``pybroker`` sink's exactly-once mode (spark_jobs/sink_exactly_once.py): a
streaming query (exactly_once_query.py, its own process group) copying an input
topic to an output topic is killed -9 mid-run twice and restarted from its
checkpoint each time (once with a transaction held open, once just after one committed); the
output read read_committed holds each input record exactly once. A second test replays a
batch id the way a re-run batch meets it; a third shows that a task's write commits
nothing itself (the driver does), so a task whose input a crash cut cannot mark its
batch written; a fourth that the driver ends every task's transaction before one that
failed fails the batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.integration.cluster import Cluster, MakeCluster
from tests.integration.multi import SINGLE_BROKER_TXN_OVERRIDES, create_topic

pytestmark = pytest.mark.integration

QUERY = Path(__file__).with_name("exactly_once_query.py")
RECORDS = 1500
PAD = b"." * 20000                 # 20 KB values: a task's transaction lasts a while
OVERRIDES = {**SINGLE_BROKER_TXN_OVERRIDES,
             "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
             "log.level": "WARNING"}


@pytest.fixture(scope="module")
def txn_broker(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("eos", overrides=OVERRIDES)


def end_offsets(bootstrap: str, topic: str, partitions: int) -> int:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-watch"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                   for p in range(partitions))
    finally:
        c.close()


def read_values(bootstrap: str, topic: str, isolation: str, timeout: float = 60) -> list[bytes]:
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"eos-{isolation}",
                  "auto.offset.reset": "earliest", "isolation.level": isolation,
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.subscribe([topic])
    got: list[bytes] = []
    eof: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(eof) < 2 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:      # _PARTITION_EOF
                    eof.add(m.partition())
                    continue
                raise AssertionError(m.error())
            eof.discard(m.partition())
            got.append(m.value())
    finally:
        c.close()
    return got


def open_transaction(boot: str, topic: str, partitions: int) -> bool:
    """Does a partition of ``topic`` have an open transaction (LSO below the HW)?"""
    import asyncio

    from client.admin import KafkaAdmin

    async def ask() -> bool:
        admin = KafkaAdmin(boot)
        try:
            tps = {(topic, p): -1 for p in range(partitions)}
            hw = await admin.list_offsets(tps, isolation_level=0)
            lso = await admin.list_offsets(tps, isolation_level=1)
            return any(lso[tp].offset < hw[tp].offset for tp in tps)
        finally:
            await admin.close()

    return asyncio.run(ask())


def start_query(boot: str, out: str, checkpoint: Path, log: Any, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(QUERY), boot, "eos-in", out, str(checkpoint),
                             *extra], stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)        # its own group: driver + JVM


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)


def wait_for(condition: Callable[[], bool], proc: subprocess.Popen, log_path: Path) -> None:
    """Poll ``condition`` while the query runs (its log's tail if it ends, or in 120 s)."""
    deadline = time.monotonic() + 120
    while not condition():
        assert proc.poll() is None, log_path.read_text()[-3000:]
        assert time.monotonic() < deadline, log_path.read_text()[-3000:]


def test_killed_and_restarted_query_writes_each_row_once(txn_broker: Cluster,
                                                         tmp_path: Path) -> None:
    from confluent_kafka import Producer
    boot = txn_broker.bootstrap
    assert create_topic(txn_broker.brokers[0].port, "eos-in", 2, 1) == 0
    assert create_topic(txn_broker.brokers[0].port, "eos-out", 2, 1) == 0
    p = Producer({"bootstrap.servers": boot, "enable.idempotence": True})
    for i in range(RECORDS):
        p.produce("eos-in", value=f"v-{i}".encode() + PAD, partition=i % 2)
    assert p.flush(30) == 0
    checkpoint = tmp_path / "checkpoint"
    log_path = tmp_path / "query.log"
    hold = tmp_path / "hold"
    with open(log_path, "ab") as log:
        # the first kill: inside a transaction with records written (the query's hold
        # stops each task of the first micro-batch there, so the kill cannot land
        # after the commit); the second: just after a transaction committed (Spark may
        # not have logged the batch yet: the re-run must skip it)
        hold.touch()
        proc = start_query(boot, "eos-out", checkpoint, log, f"hold={hold}")
        try:
            wait_for(lambda: open_transaction(boot, "eos-out", 2), proc, log_path)
        finally:
            kill_group(proc)
        hold.unlink()
        assert open_transaction(boot, "eos-out", 2), "the kill closed the held transaction"
        proc = start_query(boot, "eos-out", checkpoint, log)
        try:
            # past the abort markers of the held transactions (at most one per task
            # and partition, 2 x 2: this query's init_transactions, or the transaction
            # timeout, may write them after ``start``): new records, none of them in
            # an open transaction
            start = end_offsets(boot, "eos-out", 2)
            wait_for(lambda: end_offsets(boot, "eos-out", 2) > start + 4
                     and not open_transaction(boot, "eos-out", 2), proc, log_path)
        finally:
            kill_group(proc)
        proc = start_query(boot, "eos-out", checkpoint, log, "available-now")
        try:
            assert proc.wait(240) == 0, log_path.read_text()[-3000:]
        finally:
            kill_group(proc)
    committed = read_values(boot, "eos-out", "read_committed")
    counts = Counter(v[:-len(PAD)] for v in committed)
    assert sorted(counts) == sorted(f"v-{i}".encode() for i in range(RECORDS))
    assert [v for v, n in counts.items() if n > 1] == []


def test_a_batch_written_before_is_not_written_again(spark: Any, txn_broker: Cluster) -> None:
    """What a re-run batch meets (a driver killed after the tasks committed but before
    Spark's commit log): the same query id and batch id again -> nothing written; the
    next batch id -> written. Set as the local properties Spark's stream execution sets."""
    boot = txn_broker.bootstrap
    assert create_topic(txn_broker.brokers[0].port, "eos-rerun", 2, 1) == 0
    sc = spark.sparkContext
    frame = spark.createDataFrame([(f"r-{i}",) for i in range(20)], "value string").repartition(2)

    def write_batch(batch_id: int) -> None:
        sc.setLocalProperty("sql.streaming.queryId", "rerun-query")
        sc.setLocalProperty("streaming.sql.batchId", str(batch_id))
        try:
            (frame.write.format("pybroker").option("kafka.bootstrap.servers", boot)
             .option("topic", "eos-rerun").option("exactlyOnce", "true").mode("append").save())
        finally:
            sc.setLocalProperty("sql.streaming.queryId", None)
            sc.setLocalProperty("streaming.sql.batchId", None)

    write_batch(3)
    assert sorted(read_values(boot, "eos-rerun", "read_committed")) == \
        sorted(f"r-{i}".encode() for i in range(20))
    write_batch(3)                                   # the re-run: skipped by every task
    write_batch(2)                                   # an older batch: skipped too
    assert len(read_values(boot, "eos-rerun", "read_committed")) == 20
    write_batch(4)                                   # the next batch is written
    assert len(read_values(boot, "eos-rerun", "read_committed")) == 40


def test_a_task_commits_nothing_itself_the_driver_does(txn_broker: Cluster,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A task's write leaves its transaction open: nothing is visible read_committed
    until the driver's commit (Spark calls it once every task succeeded). A task
    whose input was cut by a crash cannot tell it from the input's end; if it
    committed, its batch marker would skip the re-run and the rest of its rows would
    be lost. Here a cut task's transaction is never committed: the re-run's
    init_transactions aborts it and the batch is written whole, once. The Spark task
    context is given (task_identity), the broker is real."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    from spark_jobs import sink_exactly_once
    from spark_jobs.source_write import end_writes, parse_write, write_rows
    boot = txn_broker.bootstrap
    assert create_topic(txn_broker.brokers[0].port, "eos-open", 2, 1) == 0
    opts = parse_write({"kafka.bootstrap.servers": boot, "topic": "eos-open",
                        "exactlyOnce": "true"},
                       StructType([StructField("value", BinaryType())]))
    batch = {"id": 7}
    monkeypatch.setattr(sink_exactly_once, "task_identity",
                        lambda write_id: ("open-query", batch["id"], 0))

    def rows(*values: str) -> Any:
        return iter([(v.encode(),) for v in values])

    first = write_rows(opts, rows("a", "b"))
    assert first.records == 2 and first.transaction is not None
    assert read_values(boot, "eos-open", "read_committed") == []      # open until the driver
    end_writes(opts, [first], commit=True)
    assert sorted(read_values(boot, "eos-open", "read_committed")) == [b"a", b"b"]

    batch["id"] = 8
    cut = write_rows(opts, rows("c"))              # its input cut: "d" never came
    assert cut.transaction is not None             # and no driver commit follows
    redone = write_rows(opts, rows("c", "d"))      # fences the cut attempt, aborting it
    assert redone.records == 2
    end_writes(opts, [redone], commit=True)
    assert sorted(read_values(boot, "eos-open", "read_committed")) == [b"a", b"b", b"c", b"d"]
    again = write_rows(opts, rows("c", "d"))       # batch 8 once more: marked written
    assert again.records == 0 and again.transaction is None


def test_the_driver_ends_every_task_transaction_before_a_failed_one_raises(
        txn_broker: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver's commit ends the batch's transactions all at once: one of them
    fenced meanwhile (its task was written again by a later attempt) fails the
    commit, but only after the others are committed, so the re-run of the batch finds
    their markers and writes just the failed task's rows."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    from client.errors import ProducerFenced
    from spark_jobs import sink_exactly_once
    from spark_jobs.source_write import end_writes, parse_write, write_rows
    boot = txn_broker.bootstrap
    assert create_topic(txn_broker.brokers[0].port, "eos-ends", 2, 1) == 0
    opts = parse_write({"kafka.bootstrap.servers": boot, "topic": "eos-ends",
                        "exactlyOnce": "true"},
                       StructType([StructField("value", BinaryType())]))
    task = {"partition": 0}
    monkeypatch.setattr(sink_exactly_once, "task_identity",
                        lambda write_id: ("ends-query", 3, task["partition"]))

    def rows(*values: str) -> Any:
        return iter([(v.encode(),) for v in values])

    first = write_rows(opts, rows("a", "b"))
    task["partition"] = 1
    stale = write_rows(opts, rows("c"))
    newer = write_rows(opts, rows("c", "d"))          # fences (and aborts) the stale attempt
    assert newer.transaction is not None and stale.transaction is not None
    with pytest.raises(ProducerFenced):
        end_writes(opts, [stale, first], commit=True)  # the fenced one first in the list
    assert sorted(read_values(boot, "eos-ends", "read_committed")) == [b"a", b"b"]
    task["partition"] = 0
    assert write_rows(opts, rows("a", "b")).records == 0    # task 0 is marked written
    end_writes(opts, [newer], commit=True)
    assert sorted(read_values(boot, "eos-ends", "read_committed")) == [b"a", b"b", b"c", b"d"]
