"""Producer-state snapshots on a real broker: an idempotent confluent-kafka producer
keeps producing across a clean restart (the broker writes ``<offset>.snapshot`` at
shutdown and at every segment roll, and reopens from it) and across a kill -9 (the
newest roll snapshot plus the tail); no record is lost or duplicated."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from storage import producer_snapshot
from tests.integration.cluster import Cluster, MakeCluster
from tests.integration.multi import create_topic

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("snap", overrides={"log.segment.bytes": str(64 * 1024)})


def produce(producer: object, topic: str, start: int, n: int) -> None:
    failed: list[object] = []
    for i in range(start, start + n):
        producer.produce(topic, value=b"v-%06d" % i + b"." * 200,  # type: ignore[attr-defined]
                         on_delivery=lambda e, _m: e is not None and failed.append(e))
    assert producer.flush(60) == 0 and not failed, failed  # type: ignore[attr-defined]


def read_values(cluster: Cluster, topic: str, expected: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"snap-{topic}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < expected and time.monotonic() < deadline:
            got += [m.value()[:8] for m in c.consume(1000, 0.5) if not m.error()]
    finally:
        c.close()
    return got


def test_idempotent_producer_across_clean_and_unclean_restarts(cluster: Cluster) -> None:
    from confluent_kafka import Producer
    topic = "snapshots"
    assert create_topic(cluster.brokers[0].port, topic, 1, 1) == 0
    broker = cluster.brokers[0]
    part = Path(broker.log_dir) / f"{topic}-0"
    p = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True,
                  "linger.ms": 2, "batch.size": 16384})
    produce(p, topic, 0, 2000)
    assert producer_snapshot.offsets(str(part))             # written at the rolls
    broker.stop()                                           # clean: one more at the log end
    snaps = producer_snapshot.offsets(str(part))
    leo = 2000
    assert snaps[-1] == leo
    entries = producer_snapshot.read(producer_snapshot.snapshot_file(str(part), leo))
    assert len(entries) == 1 and entries[0].last_offset == leo - 1
    cluster.restart(broker)
    produce(p, topic, 2000, 1000)                           # same producer id, sequences go on
    cluster.kill9(broker)
    cluster.restart(broker)
    produce(p, topic, 3000, 1000)
    values = read_values(cluster, topic, 4000)
    assert values == [b"v-%06d" % i for i in range(4000)]
