"""The operators' tools against a real 2-broker cluster (real ZooKeeper), on data
written and read by a stock client (confluent-kafka = librdkafka):

* get-offsets: latest = records produced, earliest, max-timestamp, by timestamp,
  and after delete-records the earliest is the deleted-to offset;
* delete-records: low watermarks printed, the records really gone for librdkafka;
  an offset past the high watermark and a bad JSON file are errors;
* log-dirs: every replica of the topic listed once per broker holding it, size > 0;
* producer-perf-test: N records (read back by librdkafka), Kafka's final line;
* consumer-perf-test: exactly --messages records, Kafka's header and data line;
* verifiable-producer / verifiable-consumer: the producer's acknowledged
  offsets hold its values for librdkafka; two consumers in one group split the
  partitions and consume every record exactly once, also after one of them
  leaves (the other is given its partitions and goes on from its commits).
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.integration.cluster import REPO, Cluster, MakeCluster
from tests.integration.multi import wait_until
from tools import consumer_perf, delete_records, get_offsets, log_dirs, producer_perf, \
    verifiable_producer

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_PARTITION = 30
BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("op-tools", size=2,
                        overrides={"group.initial.rebalance.delay.ms": "1500",
                                   "transaction.state.log.replication.factor": "1",
                                   "transaction.state.log.min.isr": "1",
                                   "transaction.state.log.num.partitions": "2"})


def call(tool: object, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = tool.main(list(argv), stdout=out, stderr=err)  # type: ignore[attr-defined]
    return rc, out.getvalue(), err.getvalue()


def create_topic(cluster: Cluster, partitions: int = PARTITIONS, rf: int = 2) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic
    name = f"op-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, rf)])[name].result(30)
    return name


def read_all(cluster: Cluster, topic: str, expected: int, timeout: float = 30.0) -> list:
    """Every record of ``topic`` from the earliest offsets, with librdkafka."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"rd-{uuid.uuid4().hex}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < expected and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m)
        end = time.monotonic() + 1.0          # nothing more than expected arrives
        while time.monotonic() < end:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m)
    finally:
        c.close()
    return got


def test_get_offsets_delete_records_log_dirs(cluster: Cluster, tmp_path: Path) -> None:
    from confluent_kafka import Producer
    topic = create_topic(cluster)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    for part in range(PARTITIONS):
        for i in range(PER_PARTITION):
            p.produce(topic, value=b"v%d" % i, partition=part, timestamp=BASE_TS + 1000 * i)
    assert p.flush(30) == 0
    boot = ("--bootstrap-server", cluster.bootstrap)

    rc, out, err = call(get_offsets, *boot, "--topic", topic)
    assert rc == 0, err
    assert out.splitlines() == [f"{topic}:{q}:{PER_PARTITION}" for q in range(PARTITIONS)]
    rc, out, _ = call(get_offsets, *boot, "--topic-partitions", f"{topic}:1-", "--time", "-2")
    assert out.splitlines() == [f"{topic}:1:0", f"{topic}:2:0"]
    rc, out, _ = call(get_offsets, *boot, "--topic", topic, "--partitions", "0",
                      "--time", "max-timestamp")
    assert rc == 0 and out.splitlines() == [f"{topic}:0:{PER_PARTITION - 1}"]
    rc, out, _ = call(get_offsets, *boot, "--topic", topic, "--partitions", "2",
                      "--time", str(BASE_TS + 10_500))
    assert out.splitlines() == [f"{topic}:2:11"]     # the first record at or after the time
    rc, out, err = call(get_offsets, *boot, "--topic", "no-such-topic-.*")
    assert rc == 1 and "Could not match any topic-partitions" in err

    # log-dirs before anything is deleted: every replica once, with its bytes
    wait_until(lambda: _replica_count(cluster, topic) == PARTITIONS * 2, 20, "both replicas")
    rc, out, err = call(log_dirs, *boot, "--describe", "--topic-list", topic)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == "Querying brokers for log directories information"
    assert lines[1] == "Received log directory information from brokers 0,1"
    doc = json.loads(lines[2])
    assert doc["version"] == 1 and [b["broker"] for b in doc["brokers"]] == [0, 1]
    seen = []
    for b in doc["brokers"]:
        for d in b["logDirs"]:
            assert d["error"] is None and os.path.isabs(d["logDir"])
            for rep in d["partitions"]:
                assert rep["size"] > 0 and rep["offsetLag"] == 0 and rep["isFuture"] is False
                seen.append((b["broker"], rep["partition"]))
    assert sorted(x[1] for x in seen) == sorted(f"{topic}-{q}" for q in range(PARTITIONS)
                                                for _ in range(2))
    assert len(set(seen)) == len(seen)
    rc, _, err = call(log_dirs, *boot, "--describe", "--broker-list", "0,7")
    assert rc == 1 and "do not exist from --broker-list: 7" in err

    # delete-records: p0 up to 12, p1 everything (-1 = high watermark)
    spec = tmp_path / "offsets.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "offset": 12},
        {"topic": topic, "partition": 1, "offset": -1}]}))
    rc, out, err = call(delete_records, *boot, "--offset-json-file", str(spec))
    assert rc == 0, out + err
    assert out.splitlines() == ["Executing records delete operation",
                                "Records delete operation completed:",
                                f"partition: {topic}-0\tlow_watermark: 12",
                                f"partition: {topic}-1\tlow_watermark: {PER_PARTITION}"]
    rc, out, _ = call(get_offsets, *boot, "--topic", topic, "--time", "earliest")
    assert out.splitlines() == [f"{topic}:0:12", f"{topic}:1:{PER_PARTITION}", f"{topic}:2:0"]
    left = read_all(cluster, topic, 2 * PER_PARTITION - 12)
    assert sorted((m.partition(), m.offset()) for m in left) == sorted(
        [(0, o) for o in range(12, PER_PARTITION)] + [(2, o) for o in range(PER_PARTITION)])

    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 2, "offset": PER_PARTITION + 5}]}))
    rc, out, _ = call(delete_records, *boot, "--offset-json-file", str(spec))
    assert rc == 1 and f"partition: {topic}-2\terror: OFFSET_OUT_OF_RANGE" in out
    spec.write_text('{"partitions": [{"topic": "x", "partition": 0, "offset": 1}, '
                    '{"topic": "x", "partition": 0, "offset": 2}]}')
    rc, out, err = call(delete_records, *boot, "--offset-json-file", str(spec))
    assert rc == 1 and "duplicate topic partitions: x-0" in err and out == ""


def _replica_count(cluster: Cluster, topic: str) -> int:
    _, out, _ = call(log_dirs, "--bootstrap-server", cluster.bootstrap, "--describe",
                     "--topic-list", topic)
    doc = json.loads(out.splitlines()[2])
    return sum(len(d["partitions"]) for b in doc["brokers"] for d in b["logDirs"])


FINAL = re.compile(r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg "
                   r"latency, [\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, "
                   r"\d+ ms 99\.9th\.$")


def test_producer_perf_test_then_consume(cluster: Cluster) -> None:
    topic = create_topic(cluster, partitions=2, rf=1)
    n = 3000
    rc, out, err = call(producer_perf, "--topic", topic, "--num-records", str(n),
                        "--record-size", "100", "--throughput", "-1", "--producer-props",
                        f"bootstrap.servers={cluster.bootstrap}", "acks=all",
                        "batch.size=8192")
    assert rc == 0, err
    m = FINAL.match(out.splitlines()[-1])
    assert m and int(m.group(1)) == n, out
    got = read_all(cluster, topic, n)
    assert len(got) == n
    assert all(len(x.value()) == 100 and x.value().isalpha() and x.value().isupper()
               for x in got)
    assert {x.partition() for x in got} == {0, 1}           # sticky, moving per batch

    started = time.monotonic()                               # throttled: 40 at 100/s
    rc, out, _ = call(producer_perf, "--topic", topic, "--num-records", "40",
                      "--payload-monotonic", "--throughput", "100",
                      "--bootstrap-server", cluster.bootstrap)
    assert rc == 0 and FINAL.match(out.splitlines()[-1])
    assert time.monotonic() - started >= 0.35


def test_producer_perf_test_transactional(cluster: Cluster) -> None:
    from confluent_kafka import Consumer
    topic = create_topic(cluster, partitions=2, rf=1)
    rc, out, err = call(producer_perf, "--topic", topic, "--num-records", "400",
                        "--record-size", "20", "--throughput", "1000",
                        "--transaction-duration-ms", "100", "--bootstrap-server",
                        cluster.bootstrap)
    assert rc == 0, err
    m = FINAL.match(out.splitlines()[-1])
    assert m and int(m.group(1)) == 400, out
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"rc-{uuid.uuid4().hex}",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 30
    try:
        while got < 400 and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and not msg.error():
                got += 1
    finally:
        c.close()
    assert got == 400                    # every transaction committed, markers and all


HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
          "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")


def test_consumer_perf_test_reads_exactly_messages(cluster: Cluster) -> None:
    from confluent_kafka import Producer
    topic = create_topic(cluster, partitions=2, rf=1)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    for i in range(1200):
        p.produce(topic, key=b"k", value=b"x" * 50, partition=i % 2)
    assert p.flush(30) == 0
    rc, out, err = call(consumer_perf, "--bootstrap-server", cluster.bootstrap, "--topic", topic,
                        "--messages", "1000", "--timeout", "15000", "--group", "perf-g")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == HEADER and len(lines) == 2, out
    cols = [c.strip() for c in lines[1].split(",")]
    assert len(cols) == 10
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}", cols[0])
    assert int(cols[4]) == 1000
    assert float(cols[2]) == pytest.approx(1000 * 51 / 1024 / 1024, abs=1e-4)
    assert int(cols[6]) >= 0 and int(cols[7]) >= 0


def _events(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def _current_assignment(events: list[dict]) -> set[int] | None:
    current: set[int] | None = None
    for e in events:
        if e["name"] == "partitions_assigned":
            current = {p["partition"] for p in e["partitions"]}
        elif e["name"] == "partitions_revoked":
            current = None
    return current


def test_verifiable_producer_and_two_verifiable_consumers(cluster: Cluster,
                                                          tmp_path: Path) -> None:
    topic = create_topic(cluster, partitions=PARTITIONS, rf=2)
    group = f"vc-{uuid.uuid4().hex[:6]}"
    outputs = [tmp_path / f"consumer-{i}.out" for i in range(2)]
    procs = []
    for path in outputs:
        with open(path, "w") as f:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "broker.cli", "verifiable-consumer",
                 "--bootstrap-server", cluster.bootstrap, "--topic", topic, "--group-id", group,
                 "--session-timeout", "10000", "--assignment-strategy",
                 "org.apache.kafka.clients.consumer.RoundRobinAssignor"],
                cwd=REPO, stdout=f, stderr=subprocess.STDOUT))
    try:
        def stable() -> bool:
            a, b = (_current_assignment(_events(p)) for p in outputs)
            return bool(a) and bool(b) and not (a & b) and (a | b) == set(range(PARTITIONS))
        wait_until(stable, 45, "both consumers assigned, partitions split")

        n = 600
        rc, out, err = call(verifiable_producer, "--bootstrap-server", cluster.bootstrap,
                            "--topic", topic, "--max-messages", str(n), "--value-prefix", "7",
                            "--repeating-keys", "5")
        assert rc == 0, err
        events = [json.loads(line) for line in out.splitlines()]
        assert events[0]["name"] == "startup_complete"
        assert [e["name"] for e in events[-2:]] == ["shutdown_complete", "tool_data"]
        sent = [e for e in events if e["name"] == "producer_send_success"]
        assert len(sent) == n and events[-1]["acked"] == n and events[-1]["sent"] == n
        assert {e["value"] for e in sent} == {f"7.{i}" for i in range(n)}
        by_place = {(e["partition"], e["offset"]): (e["key"], e["value"]) for e in sent}
        stock = read_all(cluster, topic, n)
        assert {(m.partition(), m.offset()): (m.key().decode(), m.value().decode())
                for m in stock} == by_place

        def consumed() -> int:
            return sum(e["count"] for p in outputs for e in _events(p)
                       if e["name"] == "records_consumed")
        wait_until(lambda: consumed() >= n, 30, "the consumers to read every record")

        # one member leaves: the other is given every partition, goes on from the
        # commits the leaver made, and reads what comes next
        procs[1].send_signal(signal.SIGTERM)
        assert procs[1].wait(20) == 0
        wait_until(lambda: _current_assignment(_events(outputs[0])) == set(range(PARTITIONS)),
                   30, "the remaining consumer to get every partition")
        rc, out, err = call(verifiable_producer, "--bootstrap-server", cluster.bootstrap,
                            "--topic", topic, "--max-messages", "300", "--value-prefix", "8")
        assert rc == 0, err
        for e in map(json.loads, out.splitlines()):
            if e["name"] == "producer_send_success":
                by_place[(e["partition"], e["offset"])] = (e["key"], e["value"])
        assert len(by_place) == n + 300
        wait_until(lambda: consumed() >= n + 300, 30, "the remaining consumer to read on")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    per_consumer = [_events(p) for p in outputs]
    places: list[tuple[int, int]] = []
    for events in per_consumer:
        assert events[0]["name"] == "startup_complete"
        assert events[-1]["name"] == "shutdown_complete", events[-3:]
        for e in events:
            if e["name"] == "records_consumed":
                for s in e["partitions"]:
                    assert s["count"] == s["maxOffset"] - s["minOffset"] + 1
                    places.extend((s["partition"], o)
                                  for o in range(s["minOffset"], s["maxOffset"] + 1))
            if e["name"] == "offsets_committed":
                assert e["success"] is True, e
        assert any(e["name"] == "records_consumed" for e in events)
    assert sorted(places) == sorted(by_place)                 # every record exactly once
