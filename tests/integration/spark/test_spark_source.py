"""The ``pybroker`` Spark data source against a real broker, with stock clients.

* a streaming query over a topic being produced to (a background
  confluent-kafka producer, bounded in count and time): every record exactly
  once, in order per partition; stopped and restarted from its checkpoint with
  no gap and no repeat; a partition added meanwhile is read from offset 0;
* batch reads by offsets (JSON, -2/-1), by timestamps, with assign and
  minPartitions;
* failOnDataLoss both ways after DeleteRecords, batch and streaming;
* the sink: what Spark writes (batch and streaming) is what a confluent-kafka
  consumer reads (assign + seek), keyed records on Kafka's murmur2 partition;
* every compression codec a producer may use is decoded.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.kafka_io import ClientConfig, KafkaIO

pytestmark = pytest.mark.integration

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # noqa: E402


# -- helpers -----------------------------------------------------------------------------

def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)
    with KafkaIO(ClientConfig(bootstrap)) as io:   # wait until every partition has a leader
        deadline = time.monotonic() + 20
        while len(io.partitions([name]).get(name, [])) < partitions:
            assert time.monotonic() < deadline, f"topic {name} not ready"
            time.sleep(0.1)
        io.latest([(name, p) for p in range(partitions)])


def produce(bootstrap: str, topic: str, items: list[dict[str, Any]],
            **config: Any) -> list[tuple[int, int, bytes | None, bytes]]:
    """Produce ``items`` (kwargs of Producer.produce); -> delivered
    (partition, offset, key, value) in delivery order."""
    delivered: list[tuple[int, int, bytes | None, bytes]] = []

    def on_delivery(err: Any, msg: Any) -> None:
        assert err is None, err
        delivered.append((msg.partition(), msg.offset(), msg.key(), msg.value()))

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    for item in items:
        p.produce(topic, on_delivery=on_delivery, **item)
        p.poll(0)
    assert p.flush(30) == 0
    assert len(delivered) == len(items)
    return delivered


def consume_all(bootstrap: str, tps: list[tuple[str, int]], expect: int,
                timeout: float = 20.0) -> list[Any]:
    """Read ``expect`` records from the start of ``tps`` (assign + seek)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-test-check",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(t, p, 0) for t, p in tps])
    for t, p in tps:
        c.seek(TopicPartition(t, p, 0))
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(out) < expect and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is not None:
            assert msg.error() is None, msg.error()
            out.append(msg)
    c.close()
    return out


def reader(spark: Any, bootstrap: str, **options: str) -> Any:
    r = spark.read.format("pybroker").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def by_partition(rows: list[Any]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for r in rows:
        out[r["partition"]].append(r["offset"])
    return dict(out)


# -- streaming ---------------------------------------------------------------------------

class Sink:
    """foreachBatch target: rows per batch id (a re-run batch overwrites itself,
    and must bring exactly the same rows)."""

    def __init__(self) -> None:
        self.batches: dict[int, list[tuple[int, int, bytes]]] = {}
        self.reruns = 0
        self.lock = threading.Lock()

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = [(r["partition"], r["offset"], bytes(r["value"]))
                for r in df.select("partition", "offset", "value").collect()]
        with self.lock:
            if batch_id in self.batches:
                self.reruns += 1
                assert sorted(self.batches[batch_id]) == sorted(rows), \
                    f"batch {batch_id} re-ran with different rows"
            self.batches[batch_id] = rows

    def rows(self) -> list[tuple[int, int, bytes]]:
        with self.lock:
            return [r for b in sorted(self.batches) for r in self.batches[b]]


def background_producer(bootstrap: str, topic: str, count: int, seconds: float,
                        delivered: list[Any], stop: threading.Event) -> threading.Thread:
    """A thread producing ``count`` records over about ``seconds`` (bounded by both)."""
    def run() -> None:
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})

        def on_delivery(err: Any, msg: Any) -> None:
            assert err is None, err
            delivered.append((msg.partition(), msg.offset(), msg.value()))

        deadline = time.monotonic() + seconds * 3
        for i in range(count):
            if stop.is_set() or time.monotonic() > deadline:
                break
            p.produce(topic, key=str(i).encode(), value=f"value-{i}".encode(),
                      on_delivery=on_delivery)
            if i % 50 == 49:
                p.poll(0)
                time.sleep(seconds / (count / 50))
        p.flush(30)

    t = threading.Thread(target=run, name="bg-producer", daemon=True)
    t.start()
    return t


def start_stream(spark: Any, bootstrap: str, topic: str, checkpoint: Path, sink: Sink,
                 **options: str) -> Any:
    r = (spark.readStream.format("pybroker").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic).option("startingOffsets", "earliest"))
    for k, v in options.items():
        r = r.option(k, v)
    return (r.load().writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="500 milliseconds").start())


def wait_rows(sink: Sink, query: Any, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(sink.rows()) < count:
        if query.exception() is not None:
            raise AssertionError(f"query failed: {query.exception()}")
        assert time.monotonic() < deadline, f"{len(sink.rows())} of {count} rows after {timeout}s"
        time.sleep(0.2)


def test_stream_exactly_once_across_restart_and_new_partition(spark: Any, broker: Any,
                                                              tmp_path: Path) -> None:
    boot = broker.bootstrap
    create_topic(boot, "stream-in", 3)
    delivered: list[Any] = []
    stop = threading.Event()
    producer = background_producer(boot, "stream-in", 3000, 6.0, delivered, stop)
    sink = Sink()
    checkpoint = tmp_path / "checkpoint"
    try:
        q = start_stream(spark, boot, "stream-in", checkpoint, sink, maxOffsetsPerTrigger="400")
        wait_rows(sink, q, 1000, 60)
        q.stop()                                 # stop in the middle of production
        first_run = len(sink.rows())
        q = start_stream(spark, boot, "stream-in", checkpoint, sink, maxOffsetsPerTrigger="400")
        producer.join(40)
        assert not producer.is_alive()
        # a partition added while the query runs is read from its first offset
        admin = AdminClient({"bootstrap.servers": boot})
        admin.create_partitions([NewPartitions("stream-in", 4)])["stream-in"].result(20)
        with KafkaIO(ClientConfig(boot)) as io:
            deadline = time.monotonic() + 20
            while 3 not in io.partitions(["stream-in"]).get("stream-in", []):
                assert time.monotonic() < deadline
                time.sleep(0.1)
        extra = produce(boot, "stream-in", [{"value": f"p3-{i}".encode(), "partition": 3}
                                            for i in range(20)])
        delivered += [(p, o, v) for p, o, _k, v in extra]
        wait_rows(sink, q, len(delivered), 60)
        time.sleep(1.5)                          # a repeat would show up by now
        q.stop()
    finally:
        stop.set()
        for active in spark.streams.active:
            active.stop()
    rows = sink.rows()
    assert first_run < len(delivered) == 3020
    assert sorted(rows) == sorted(delivered)             # every record exactly once
    for part, offsets in by_partition([{"partition": p, "offset": o}
                                       for p, o, _v in rows]).items():
        assert offsets == list(range(len(offsets))), f"partition {part} out of order"
    assert len(by_partition([{"partition": p, "offset": o} for p, o, _ in rows])[3]) == 20


def test_stream_restart_resumes_exactly_where_it_stopped(spark: Any, broker: Any,
                                                         tmp_path: Path) -> None:
    boot = broker.bootstrap
    create_topic(boot, "resume", 2)
    produce(boot, "resume", [{"value": b"a%d" % i, "key": b"%d" % i} for i in range(200)])
    checkpoint = tmp_path / "cp"

    def run_available_now(sink: Sink) -> None:
        q = (spark.readStream.format("pybroker").option("kafka.bootstrap.servers", boot)
             .option("subscribe", "resume").option("startingOffsets", "earliest").load()
             .writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
        assert q.awaitTermination(60)
        assert q.exception() is None

    first, second = Sink(), Sink()
    run_available_now(first)
    produce(boot, "resume", [{"value": b"b%d" % i, "key": b"%d" % i} for i in range(100)])
    run_available_now(second)
    a, b = first.rows(), second.rows()
    assert len(a) == 200 and len(b) == 100
    assert not {(p, o) for p, o, _ in a} & {(p, o) for p, o, _ in b}
    assert all(v.startswith(b"b") for _p, _o, v in b)
    offsets = json.loads((checkpoint / "offsets" / str(max(
        int(f.name) for f in (checkpoint / "offsets").iterdir() if f.name.isdigit())))
        .read_text().splitlines()[-1])
    assert offsets == {"resume": {"0": sum(1 for p, _, _ in a + b if p == 0),
                                  "1": sum(1 for p, _, _ in a + b if p == 1)}}


# -- batch reads -------------------------------------------------------------------------

def test_batch_offsets_timestamps_assign_min_partitions(spark: Any, broker: Any) -> None:
    boot = broker.bootstrap
    create_topic(boot, "batch", 2)
    base = 1_700_000_000_000
    for part in (0, 1):
        produce(boot, "batch", [{"value": b"%d-%d" % (part, i), "partition": part,
                                 "timestamp": base + i * 1000,
                                 "headers": [("n", b"%d" % i)]} for i in range(100)])
    # offsets JSON with -2 (earliest) and -1 (latest)
    df = reader(spark, boot, subscribe="batch", startingOffsets='{"batch":{"0":10,"1":-2}}',
                endingOffsets='{"batch":{"0":20,"1":-1}}')
    got = by_partition(df.collect())
    assert sorted(got[0]) == list(range(10, 20)) and sorted(got[1]) == list(range(100))
    # timestamps: startingTimestamp for all, endingOffsetsByTimestamp per partition
    df = reader(spark, boot, subscribe="batch", startingTimestamp=str(base + 50_000),
                endingOffsetsByTimestamp=json.dumps(
                    {"batch": {"0": base + 60_000, "1": base + 10**9}}),
                includeHeaders="true")
    rows = df.collect()
    got = by_partition(rows)
    assert sorted(got[0]) == list(range(50, 60)) and sorted(got[1]) == list(range(50, 100))
    for r in rows:
        assert int(r["timestamp"].timestamp() * 1000) == base + r["offset"] * 1000
        assert r["timestampType"] == 0 and r["topic"] == "batch"
        assert r["headers"][0]["key"] == "n" and r["headers"][0]["value"] == b"%d" % r["offset"]
        assert r["value"] == b"%d-%d" % (r["partition"], r["offset"])
    # read_committed reads below the last stable offset: all of it (no open transactions)
    committed = reader(spark, boot, subscribe="batch", **{"kafka.isolation.level":
                                                           "read_committed"}).count()
    assert committed == 200
    # assign + minPartitions splits the one range into several tasks, losing nothing
    df = reader(spark, boot, assign='{"batch":[1]}', minPartitions="4")
    assert df.rdd.getNumPartitions() >= 4
    assert sorted(r["offset"] for r in df.collect()) == list(range(100))
    # a timestamp past every record fails by default, as Spark's strategy "error"
    with pytest.raises(Exception, match="No offset matched"):
        reader(spark, boot, subscribe="batch", startingTimestamp=str(base + 10**9)).collect()
    # batch queries cannot start at latest
    with pytest.raises(Exception, match="can't be latest"):
        reader(spark, boot, subscribe="batch", startingOffsets="latest").collect()


def test_fail_on_data_loss_after_delete_records(spark: Any, broker: Any,
                                                tmp_path: Path) -> None:
    boot = broker.bootstrap
    create_topic(boot, "lossy", 1)
    produce(boot, "lossy", [{"value": b"%d" % i} for i in range(100)])
    checkpoint = tmp_path / "cp"

    def stream_once(fail: str) -> tuple[Any, Sink]:
        sink = Sink()
        q = (spark.readStream.format("pybroker").option("kafka.bootstrap.servers", boot)
             .option("subscribe", "lossy").option("startingOffsets", "earliest")
             .option("failOnDataLoss", fail).load()
             .writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
        try:
            q.awaitTermination(60)
        except Exception:  # noqa: BLE001 - the failure is checked through q.exception()
            pass
        return q, sink

    q, sink = stream_once("true")
    assert q.exception() is None and len(sink.rows()) == 100
    produce(boot, "lossy", [{"value": b"%d" % i} for i in range(100, 200)])
    with KafkaIO(ClientConfig(boot)) as io:
        assert io.delete_records({("lossy", 0): 150}) == {("lossy", 0): (0, 150)}
    # batch, offsets 0.. of which 0..149 are gone
    explicit = reader(spark, boot, subscribe="lossy", startingOffsets='{"lossy":{"0":0}}')
    with pytest.raises(Exception, match="failOnDataLoss"):
        explicit.collect()
    rows = reader(spark, boot, subscribe="lossy", startingOffsets='{"lossy":{"0":0}}',
                  failOnDataLoss="false").collect()
    assert sorted(r["offset"] for r in rows) == list(range(150, 200))
    # streaming from the checkpoint (next offset 100): fails, then skips with false
    q, sink = stream_once("true")
    assert q.exception() is not None and "failOnDataLoss" in str(q.exception())
    assert sink.rows() == []
    q, sink = stream_once("false")
    assert q.exception() is None
    assert [o for _p, o, _v in sink.rows()] == list(range(150, 200))


def test_fail_on_data_loss_when_the_topic_is_deleted(spark: Any, broker: Any,
                                                     tmp_path: Path) -> None:
    boot = broker.bootstrap
    create_topic(boot, "doomed", 2)
    produce(boot, "doomed", [{"value": b"%d" % i} for i in range(50)])

    def stream_once(fail: str) -> tuple[Any, Sink]:
        sink = Sink()
        q = (spark.readStream.format("pybroker").option("kafka.bootstrap.servers", boot)
             .option("subscribe", "doomed").option("startingOffsets", "earliest")
             .option("failOnDataLoss", fail).load()
             .writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
        try:
            q.awaitTermination(60)
        except Exception:  # noqa: BLE001 - checked through q.exception()
            pass
        return q, sink

    q, sink = stream_once("true")
    assert q.exception() is None and len(sink.rows()) == 50
    admin = AdminClient({"bootstrap.servers": boot})
    admin.delete_topics(["doomed"])["doomed"].result(20)
    with KafkaIO(ClientConfig(boot)) as io:
        deadline = time.monotonic() + 20
        while io.partitions(["doomed"]):
            assert time.monotonic() < deadline, "topic still listed after deletion"
            time.sleep(0.2)
    q, sink = stream_once("true")
    assert q.exception() is not None
    assert "doomed-0, doomed-1 are gone" in str(q.exception())
    assert "failOnDataLoss" in str(q.exception())
    q, sink = stream_once("false")
    assert q.exception() is None and sink.rows() == []


# -- the sink ----------------------------------------------------------------------------

def test_sink_batch_and_streaming_as_consumers_read(spark: Any, broker: Any,
                                                    tmp_path: Path) -> None:
    from client.partitioner import partition_for_key

    boot = broker.bootstrap
    create_topic(boot, "sink-a", 3)
    create_topic(boot, "sink-b", 2)
    data = [(f"k{i}" if i % 5 else None, f"v{i}", "sink-a" if i % 2 else "sink-b",
             0 if i % 7 == 0 else None, [(f"h{i}", f"x{i}".encode())])
            for i in range(300)]
    df = spark.createDataFrame(
        data, "key string, value string, topic string, partition int, "
              "headers array<struct<key:string,value:binary>>")
    df.write.format("pybroker").option("kafka.bootstrap.servers", boot).mode("append").save()
    msgs = consume_all(boot, [("sink-a", p) for p in range(3)] + [("sink-b", 0), ("sink-b", 1)],
                       300)
    assert len(msgs) == 300
    got = {m.value().decode(): m for m in msgs}
    for key, value, topic, part, headers in data:
        m = got[value]
        assert m.topic() == topic
        assert (m.key().decode() if m.key() is not None else None) == key
        assert m.headers() == headers
        if part is not None:
            assert m.partition() == part
        elif key is not None:
            assert m.partition() == partition_for_key(key.encode(), 3 if topic == "sink-a" else 2)
    # murmur2 as a stock producer computes it (librdkafka's Java-compatible partitioner)
    check = produce(boot, "sink-a", [{"key": b"k%d" % i, "value": b"x"} for i in range(20)],
                    partitioner="murmur2_random")
    assert all(p == partition_for_key(k, 3) for p, _o, k, _v in check)

    # streaming: sink-b copied into a new topic, then read back by a consumer
    create_topic(boot, "sink-c", 1)
    q = (spark.readStream.format("pybroker").option("kafka.bootstrap.servers", boot)
         .option("subscribe", "sink-b").option("startingOffsets", "earliest").load()
         .selectExpr("key", "value", "0 AS partition")
         .writeStream.format("pybroker").option("kafka.bootstrap.servers", boot)
         .option("topic", "sink-c").option("kafka.compression.type", "zstd")
         .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    assert q.awaitTermination(60) and q.exception() is None
    want = sorted(v for _k, v, t, _p, _h in data if t == "sink-b")
    copied = consume_all(boot, [("sink-c", 0)], len(want))
    assert sorted(m.value().decode() for m in copied) == want


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_compression_is_decoded(spark: Any, broker: Any, codec: str) -> None:
    boot = broker.bootstrap
    topic = f"codec-{codec}"
    create_topic(boot, topic, 1)
    items = [{"key": b"k%d" % i, "value": (b"payload-%d-" % i) * 20,
              "headers": [("c", codec.encode())]} for i in range(500)]
    produce(boot, topic, items, **{"compression.type": codec, "linger.ms": 50})
    rows = reader(spark, boot, subscribe=topic, includeHeaders="true").collect()
    assert [(r["key"], r["value"]) for r in sorted(rows, key=lambda r: r["offset"])] == \
        [(it["key"], it["value"]) for it in items]
    assert all(r["headers"][0]["value"] == codec.encode() for r in rows)


def test_subscribe_pattern_reads_matching_topics_only(spark: Any, broker: Any) -> None:
    boot = broker.bootstrap
    for name in ("pat-a", "pat-b", "other-pat"):
        create_topic(boot, name, 1)
        produce(boot, name, [{"value": name.encode()}] * 10)
    rows = reader(spark, boot, subscribePattern="pat-.*").collect()
    assert sorted({r["topic"] for r in rows}) == ["pat-a", "pat-b"] and len(rows) == 20


# -- pure parts (no Spark job, no broker) ------------------------------------------------

def test_options_follow_the_kafka_source() -> None:
    from spark_jobs import source_options as so

    base = {"kafka.bootstrap.servers": "127.0.0.1:9"}
    with pytest.raises(ValueError, match="One of the following options"):
        so.parse(base, batch=True)
    with pytest.raises(ValueError, match="One of the following options"):
        so.parse({**base, "subscribe": "a", "assign": '{"a":[0]}'}, batch=True)
    with pytest.raises(ValueError, match="bootstrap.servers"):
        so.parse({"subscribe": "a"}, batch=True)
    with pytest.raises(ValueError, match="managed by the source"):
        so.parse({**base, "subscribe": "a", "kafka.auto.offset.reset": "latest"}, batch=True)
    with pytest.raises(ValueError, match="Ending offset not valid in streaming"):
        so.parse({**base, "subscribe": "a", "endingOffsets": "latest"}, batch=False)
    with pytest.raises(ValueError, match="can't be earliest"):
        so.parse({**base, "subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'}, batch=True)
    o = so.parse({**base, "assign": '{"a":[1,0],"b":[2]}', "startingTimestamp": "5",
                  "startingOffsets": "earliest", "failOnDataLoss": "False",
                  "maxOffsetsPerTrigger": "10", "kafka.client.id": "me",
                  "kafka.isolation.level": "read_committed"}, batch=False)
    assert o.subscription.assigned == (("a", 0), ("a", 1), ("b", 2))
    assert o.starting.kind == "timestamp" and o.starting.timestamp == 5   # takes precedence
    assert o.starting.kind != "earliest" and o.ending.kind == "latest"
    assert not o.fail_on_data_loss and o.max_offsets_per_trigger == 10
    assert o.client.client_id == "me" and o.client.isolation == 1
    assert so.parse({**base, "subscribe": "a"}, batch=False).starting.kind == "latest"
    assert so.parse({**base, "subscribe": "a"}, batch=True).starting.kind == "earliest"
    offsets = {("b", 10): 7, ("a", 2): -1, ("a", 0): 3}
    as_json = so.offsets_json(offsets)
    assert json.dumps(as_json) == '{"a": {"0": 3, "2": -1}, "b": {"10": 7}}'
    assert so.from_offsets_json(json.loads(json.dumps(as_json))) == offsets


def test_split_ranges_as_the_offset_range_calculator() -> None:
    from spark_jobs.source import KafkaRange, split_ranges

    ranges = [KafkaRange("t", 0, 0, 300), KafkaRange("t", 1, 10, 110), KafkaRange("t", 2, 5, 5)]
    assert [(r.partition, r.start, r.end) for r in split_ranges(ranges, None, None)] == \
        [(0, 0, 300), (1, 10, 110)]                      # empty ranges dropped
    parts = split_ranges(ranges, 8, None)               # 300/400*8 = 6 and 100/400*8 = 2
    assert [(r.partition, r.start, r.end) for r in parts] == [
        (0, 0, 50), (0, 50, 100), (0, 100, 150), (0, 150, 200), (0, 200, 250), (0, 250, 300),
        (1, 10, 60), (1, 60, 110)]
    capped = split_ranges(ranges, None, 120)
    assert [(r.start, r.end) for r in capped if r.partition == 0] == [(0, 100), (100, 200),
                                                                      (200, 300)]


def test_max_offsets_per_trigger_prorates_by_backlog() -> None:
    from spark_jobs import source_options as so
    from spark_jobs.source import PyBrokerStreamReader

    opts = so.parse({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t",
                     "maxOffsetsPerTrigger": "100"}, batch=False)
    r = PyBrokerStreamReader(opts)
    assert type(r.getDefaultReadLimit()).__name__ == "ReadMaxRows"
    begin = {("t", 0): 0, ("t", 1): 50, ("t", 2): 7}
    latest = {("t", 0): 300, ("t", 1): 150, ("t", 2): 8}   # backlogs 300, 100, 1
    got = r._rate_limit(begin, latest, 100)
    # shares 74.8 -> 74, 24.9 -> 24, 0.25 -> 1 (a share below 1 rounds up)
    assert got == {("t", 0): 74, ("t", 1): 74, ("t", 2): 8}
    assert r._rate_limit(begin, latest, 1000) == latest
