"""Replication quotas with real processes: a throttled reassignment is held near
its rate and does not starve clients; without the throttle it goes faster.

A real ZooKeeper and 3 broker processes (ids 0-2). Topic ``big`` (1 partition,
RF 1 on broker 0) holds ~24 MB written by a confluent_kafka producer. Topic
``live`` (RF 1, also led by broker 0, the broker that serves the moves) carries
a confluent_kafka producer and consumer for the whole test; their end-to-end
latency is measured.

1. ``pybroker reassign-partitions --execute --throttle 3000000`` moves big-0 from
   broker 0 to broker 1; ``--verify`` is polled until done, and then removes the
   throttle (both rates gone from every broker, both replica lists from the
   topic). The move rate (the partition's bytes over the time from --execute to
   a completed --verify) is held near 3 MB/s.
2. The same move (1 -> 2) without --throttle is several times faster.
3. All along, every live message arrived, with bounded latency.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import statistics
import threading
import time
from pathlib import Path

import pytest

from tests.integration.cluster import Cluster, MakeCluster
from tests.integration.multi import wait_until

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, ConfigResource  # noqa: E402

from client import KafkaAdmin  # noqa: E402
from client.admin import NewTopic  # noqa: E402

from tools import reassign_partitions  # noqa: E402

pytestmark = pytest.mark.integration

BIG, LIVE = "big", "live"
VALUE = 100_000
COUNT = 240                             # ~24 MB in big-0
THROTTLE = 3_000_000                    # bytes/s
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    c = make_cluster("replication-quota", size=3, first_id=0,
                     overrides={"replica.lag.time.max.ms": "10000"})
    asyncio.run(_create_topics(c.bootstrap))
    return c


async def _create_topics(bootstrap: str) -> None:
    """Both topics with one replica on broker 0 (our client: librdkafka 2.16's
    NewTopic refuses a replica assignment with its default partition count)."""
    async with KafkaAdmin(bootstrap) as admin:
        done = await admin.create_topics([NewTopic(t, assignment={0: [0]}) for t in (BIG, LIVE)])
        assert all(code == 0 for code, _ in done.values()), done


def _fill(c: Cluster) -> None:
    p = ck.Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 5, "acks": "1",
                     "message.max.bytes": 1_000_000, "batch.size": 1_000_000})
    payload = os.urandom(VALUE)
    for i in range(COUNT):
        p.produce(BIG, payload, key=b"%d" % i, partition=0)
        p.poll(0)
    assert p.flush(60) == 0


def _partition_bytes(c: Cluster, broker_id: int, topic: str, partition: int) -> int:
    d = c.broker(broker_id).log_dir / f"{topic}-{partition}"
    return sum(f.stat().st_size for f in d.glob("*.log"))


class LiveTraffic:
    """A producer and a consumer on ``live`` in a thread: each message carries its
    send time; the consumer's latencies are kept."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.sent = 0
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LiveTraffic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        producer = ck.Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0,
                                "acks": "all"})
        consumer = ck.Consumer({"bootstrap.servers": self.bootstrap, "group.id": "live-reader",
                                "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50})
        _low, high = consumer.get_watermark_offsets(ck.TopicPartition(LIVE, 0), timeout=10)
        consumer.assign([ck.TopicPartition(LIVE, 0, high)])    # from what we send on
        try:
            while not self._stop.is_set():
                producer.produce(LIVE, b"%.6f" % time.monotonic(), partition=0,
                                 on_delivery=self._delivered)
                self.sent += 1
                producer.poll(0)
                deadline = time.monotonic() + 0.05
                while time.monotonic() < deadline:
                    m = consumer.poll(0.02)
                    if m is not None and not m.error():
                        self.latencies.append(time.monotonic() - float(m.value()))
            producer.flush(10)
            end = time.monotonic() + 10
            while len(self.latencies) < self.sent and time.monotonic() < end:
                m = consumer.poll(0.1)
                if m is not None and not m.error():
                    self.latencies.append(time.monotonic() - float(m.value()))
        finally:
            consumer.close()

    def _delivered(self, err: object, _msg: object) -> None:
        if err is not None:
            self.errors.append(str(err))


def _tool(c: Cluster, *args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = reassign_partitions.main(["--bootstrap-server", c.bootstrap, *args],
                                    stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue()


def _move(c: Cluster, tmp: Path, source: int, target: int, throttle: int | None
          ) -> tuple[float, str]:
    """Move big-0 from ``source`` to ``target``; -> (seconds from --execute to a completed --verify,
    the last --verify's output)."""
    plan = tmp / f"plan-{target}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": BIG, "partition": 0, "replicas": [target]}]}))
    extra = ["--throttle", str(throttle)] if throttle is not None else []
    start = time.monotonic()
    code, text = _tool(c, "--execute", "--reassignment-json-file", str(plan), *extra)
    assert code == 0, text
    if throttle is not None:
        assert f"The inter-broker throttle limit was set to {throttle} B/s" in text
        # in force while it moves: the rates on both brokers of the move, the lists
        for b in (source, target):
            assert _broker_config(c, b) == {LEADER_RATE: (str(throttle), 2),
                                            FOLLOWER_RATE: (str(throttle), 2)}
        assert _topic_config(c, BIG) == {"leader.replication.throttled.replicas": f"0:{source}",
                                         "follower.replication.throttled.replicas": f"0:{target}"}
    while True:
        code, text = _tool(c, "--verify", "--reassignment-json-file", str(plan))
        if code == 0:
            return time.monotonic() - start, text
        assert time.monotonic() - start < 40, text
        time.sleep(0.2)


def _broker_config(c: Cluster, broker_id: int) -> dict[str, tuple[str, int]]:
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    res = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
    entries = admin.describe_configs([res])[res].result(10)
    return {k: (e.value, int(e.source)) for k, e in entries.items()
            if k in (LEADER_RATE, FOLLOWER_RATE)}


def _topic_config(c: Cluster, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([res])[res].result(10)
    return {k: e.value for k, e in entries.items() if k.endswith("throttled.replicas")}


def test_throttled_reassignment_is_held_to_the_rate_and_clients_keep_going(
        cluster: Cluster, tmp_path: Path) -> None:
    c = cluster
    _fill(c)
    size = _partition_bytes(c, 0, BIG, 0)
    assert size > 20_000_000
    with LiveTraffic(c.bootstrap) as live:
        wait_until(lambda: len(live.latencies) > 5, 20, "live traffic flowing")
        throttled_s, verify_text = _move(c, tmp_path, 0, 1, THROTTLE)
        assert "Clearing broker-level throttles on brokers 0,1,2" in verify_text
        assert "Clearing topic-level throttles on topic(s) big" in verify_text
        wait_until(lambda: _partition_bytes(c, 1, BIG, 0) >= size, 10, "a full copy on 1")
        free_s, _ = _move(c, tmp_path, 1, 2, None)
        wait_until(lambda: _partition_bytes(c, 2, BIG, 0) >= size, 10, "a full copy on 2")
        time.sleep(0.5)
    throttled_rate = size / throttled_s
    free_rate = size / free_s
    lat = sorted(live.latencies)
    p99 = lat[int(len(lat) * 0.99) - 1]
    print(f"\nreplication quota: {size / 1e6:.1f} MB moved at {throttled_rate / 1e6:.2f} MB/s "
          f"with a {THROTTLE / 1e6:.1f} MB/s throttle ({throttled_s:.1f} s, "
          f"{throttled_rate / THROTTLE:.2f} x the throttle); without it "
          f"{free_rate / 1e6:.2f} MB/s ({free_s:.1f} s): {free_rate / throttled_rate:.1f} x "
          f"faster. live: {live.sent} sent, {len(lat)} received, latency median "
          f"{statistics.median(lat) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
          f"max {lat[-1] * 1000:.0f} ms")
    # the throttled move was held near the rate (the first window's burst and the
    # --verify polling only add a little either way)
    assert 0.6 * THROTTLE <= throttled_rate <= 1.4 * THROTTLE
    assert free_rate >= 2.5 * throttled_rate
    # the throttle is gone everywhere after --verify
    for b in (0, 1, 2):
        rates = _broker_config(c, b)
        assert all(source != 2 for _v, source in rates.values()), (b, rates)
    assert not any(_topic_config(c, BIG).values())
    # clients kept going: every live message arrived, none late
    assert not live.errors
    assert live.sent > 50 and len(lat) == live.sent
    assert p99 < 0.5 and lat[-1] < 3.0
