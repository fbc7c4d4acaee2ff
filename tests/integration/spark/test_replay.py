"""Bulk replay (spark_jobs.replay) against segments written by a real broker.

A 3-partition topic with small segments is filled by confluent-kafka with gzip
batches (keys, null keys, tombstones, headers, explicit timestamps); a
confluent-kafka consumer reads it back as the truth. The broker's log dir is
copied once its replication-offset-checkpoint holds every partition's high
watermark, and then more batches are appended straight into the copy's active
segments: the copy's log end offsets are above its checkpointed high
watermarks, and none of those records may be exported.
"""

from __future__ import annotations

import random
import shutil
from collections import Counter
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from client.partitioner import partition_for_key
from protocol import records
from spark_jobs import replay
from storage import checkpoints, filenames
from storage.config import LogConfig
from storage.log import PartitionLog
from tests.integration.cluster import REPO, Cluster, MakeCluster

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "orders"
PARTITIONS = 3
PER_PARTITION = 240
BASE_TS = 1_710_000_000_000
EXTRA_PER_PARTITION = 25   # appended above the high watermark in the copy

Row = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int]


def _record(p: int, i: int, rng: random.Random) -> tuple[bytes | None, bytes | None, list, int]:
    key = None if i % 7 == 3 else f"key-{p}-{i}".encode()
    value = None if i % 11 == 5 else rng.randbytes(120) + f"value-{p}-{i}".encode() * 4
    headers = [("i", str(i).encode()), ("empty", None)] if i % 2 else []
    return key, value, headers, BASE_TS + 1000 * i + p


def _create_topic(bootstrap: str, name: str, partitions: int, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(name, partitions, 1, config=config)]).values():
        fut.result(30)


def _consume(bootstrap: str, topic: str, partitions: int, expected: int) -> list[Row]:
    """Every record of ``topic`` as (partition, offset, key, value, headers, timestamp)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time_ns()}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[Row] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < expected and time.monotonic() < deadline:
            for m in c.consume(500, 1.0):
                assert m.error() is None, m.error()
                got.append((m.partition(), m.offset(), m.key(), m.value(),
                            tuple(m.headers() or ()), m.timestamp()[1]))
    finally:
        c.close()
    assert len(got) == expected
    return sorted(got)


def _wait_checkpoint(log_dir: Path, want: dict[tuple[str, int], int]) -> None:
    path = log_dir / filenames.REPLICATION_CHECKPOINT
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        hws = checkpoints.read_offsets(str(path)) if path.exists() else {}
        if all(hws.get(tp) == hw for tp, hw in want.items()):
            return
        time.sleep(0.5)
    raise AssertionError(f"high watermarks {want} never checkpointed")


def _append_above_hw(log_dir: Path) -> None:
    """Batches written straight into each partition's active segment, not checkpointed."""
    for p in range(PARTITIONS):
        log = PartitionLog.open(str(log_dir / f"{TOPIC}-{p}"), LogConfig(segment_bytes=1 << 30),
                                clean_shutdown=True)
        try:
            batch = records.build_batch(
                [(b"above-hw", b"uncommitted", BASE_TS, [("x", b"y")])] * EXTRA_PER_PARTITION,
                codec=1)
            log.append(batch, leader_epoch=0)
            log.flush()
        finally:
            log.close()


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("replay", overrides={"auto.create.topics.enable": "false"})


@pytest.fixture(scope="module")
def produced(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Path, list[Row]]:
    """(copied log dir with records above its HW, what a consumer reads)."""
    _create_topic(cluster.bootstrap, TOPIC, PARTITIONS, **{"segment.bytes": "16384"})
    rng = random.Random(6)
    prod = Producer({"bootstrap.servers": cluster.bootstrap, "compression.type": "gzip",
                     "linger.ms": 20, "batch.num.messages": 40, "acks": "all"})
    for i in range(PER_PARTITION):
        for p in range(PARTITIONS):
            key, value, headers, ts = _record(p, i, rng)
            prod.produce(TOPIC, value=value, key=key, partition=p, headers=headers,
                         timestamp=ts)
        prod.poll(0)
    assert prod.flush(30) == 0
    truth = _consume(cluster.bootstrap, TOPIC, PARTITIONS, PARTITIONS * PER_PARTITION)
    log_dir = cluster.brokers[0].log_dir
    _wait_checkpoint(log_dir, {(TOPIC, p): PER_PARTITION for p in range(PARTITIONS)})
    copy = tmp_path_factory.mktemp("copy") / "logs"
    # the broker still runs: a checkpoint's <name>.tmp (written every few seconds, then
    # renamed) may be listed and gone before it is copied, which fails the copy
    shutil.copytree(log_dir, copy, ignore=shutil.ignore_patterns("*.tmp"))
    _append_above_hw(copy)
    return copy, truth


def _rows_of(frame: Any) -> list[Row]:
    out = []
    for r in frame.collect():
        hdrs = tuple((h["key"], None if h["value"] is None else bytes(h["value"]))
                     for h in r["headers"])
        out.append((r["partition"], r["offset"], None if r["key"] is None else bytes(r["key"]),
                    None if r["value"] is None else bytes(r["value"]), hdrs,
                    round(r["timestamp"].timestamp() * 1000)))
    return sorted(out)


def test_copy_has_records_above_its_high_watermark(produced: tuple[Path, list[Row]]) -> None:
    copy, _ = produced
    for p in range(PARTITIONS):
        log = PartitionLog.open(str(copy / f"{TOPIC}-{p}"), clean_shutdown=True)
        try:
            assert log.log_end_offset == PER_PARTITION + EXTRA_PER_PARTITION
            assert len(log.segments) > 1  # several segment tasks per partition
        finally:
            log.close()


def test_parquet_equals_what_a_consumer_reads(produced: tuple[Path, list[Row]], spark: Any,
                                              tmp_path: Path) -> None:
    copy, truth = produced
    tasks = replay.plan([str(copy)], {TOPIC}, replay.Bounds())
    assert len(tasks) > PARTITIONS and all(t.end <= PER_PARTITION for t in tasks)
    out = str(tmp_path / "out")
    assert replay.export_parquet(spark, tasks, replay.Bounds(), out) == len(truth)
    assert sorted(p.name for p in (tmp_path / "out" / f"topic={TOPIC}").iterdir()) == \
        [f"partition={p}" for p in range(PARTITIONS)]
    frame = spark.read.parquet(out)
    assert dict(frame.dtypes) == {"key": "binary", "value": "binary", "topic": "string",
                                  "partition": "int", "offset": "bigint",
                                  "timestamp": "timestamp", "timestampType": "int",
                                  "headers": "array<struct<key:string,value:binary>>"}
    got = _rows_of(frame)
    assert got == truth
    assert not any(r[2] == b"above-hw" for r in got)
    assert {r["timestampType"] for r in frame.select("timestampType").collect()} == {0}


def test_offset_and_timestamp_bounds(produced: tuple[Path, list[Row]], spark: Any,
                                     tmp_path: Path) -> None:
    copy, truth = produced
    bounds = replay.make_bounds("50", "130")
    got = _rows_of(replay.segments_frame(spark, replay.plan([str(copy)], None, bounds), bounds))
    assert got == [r for r in truth if 50 <= r[1] < 130]
    # --to past the high watermark still stops at it
    bounds = replay.make_bounds("230", "100000")
    got = _rows_of(replay.segments_frame(spark, replay.plan([str(copy)], None, bounds), bounds))
    assert got == [r for r in truth if r[1] >= 230]
    lo, hi = BASE_TS + 1000 * 40, BASE_TS + 1000 * 60 + 2   # p0 and p1 of i=60 are in
    bounds = replay.make_bounds(f"ts:{lo}", f"ts:{hi}")
    got = _rows_of(replay.segments_frame(spark, replay.plan([str(copy)], None, bounds), bounds))
    assert got == [r for r in truth if lo <= r[5] < hi]
    assert len(got) == 20 * PARTITIONS + 2


def test_parse_bound() -> None:
    assert replay.parse_bound("42") == ("offset", 42)
    assert replay.parse_bound("ts:1700000000000") == ("timestamp", 1_700_000_000_000)
    assert replay.parse_bound("2023-11-14T22:13:20Z") == ("timestamp", 1_700_000_000_000)
    assert replay.parse_bound("2023-11-14T23:13:20+01:00") == ("timestamp", 1_700_000_000_000)
    assert replay.parse_bound("2023-11-14 22:13:20.5") == ("timestamp", 1_700_000_000_500)
    with pytest.raises(Exception):
        replay.parse_bound("yesterday")


def test_replay_into_topics_round_trips(produced: tuple[Path, list[Row]], cluster: Cluster,
                                        spark: Any) -> None:
    copy, truth = produced
    tasks = replay.plan([str(copy)], {TOPIC}, replay.Bounds())
    _create_topic(cluster.bootstrap, "replayed", PARTITIONS)
    assert replay.replay_to_topic(spark, tasks, replay.Bounds(), "replayed",
                                  cluster.bootstrap, codec=1) == len(truth)
    # same partitions, same order: offsets too come out the same
    assert _consume(cluster.bootstrap, "replayed", PARTITIONS, len(truth)) == truth
    # fewer partitions: 0 and 1 kept, partition 2's records by murmur2(key) (null key: 2 % 2)
    _create_topic(cluster.bootstrap, "narrow", 2)
    assert replay.replay_to_topic(spark, tasks, replay.Bounds(), "narrow",
                                  cluster.bootstrap, codec=0) == len(truth)
    got = _consume(cluster.bootstrap, "narrow", 2, len(truth))
    want = Counter((r[0] if r[0] < 2 else (0 if r[2] is None else partition_for_key(r[2], 2)),
                    r[2], r[3], r[4], r[5]) for r in truth)
    assert Counter((g[0], g[2], g[3], g[4], g[5]) for g in got) == want
    assert sum(1 for g in got if g[0] == 1) > PER_PARTITION  # partition 2's keys spread


def test_command_line_prints_a_summary(produced: tuple[Path, list[Row]], spark: Any,
                                      tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``main`` as ``python -m spark_jobs.replay`` runs it (in this session, which it leaves up)."""
    copy, truth = produced
    out = tmp_path / "cli"
    assert replay.main(["--log-dirs", str(copy), "--topics", TOPIC, "--output", str(out),
                        "--from", "10", "--master", "local[2]"]) == 0
    want = sum(1 for r in truth if r[1] >= 10)
    printed = capsys.readouterr().out
    assert f"replay: {want} records" in printed and "MB/s" in printed
    assert len(list(out.glob(f"topic={TOPIC}/partition=*/*.parquet"))) >= PARTITIONS
    assert spark.range(3).count() == 3  # still up
    assert replay.main(["--log-dirs", str(copy), "--to-topic", "t"]) == 2  # no bootstrap


def test_module_runs_as_a_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "spark_jobs.replay", "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--to-topic" in proc.stdout and "--master" in proc.stdout
