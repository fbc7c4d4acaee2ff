"""confluent-kafka (librdkafka 2.x): admin, produce (idempotent and not, every
codec), assign+seek read-back, offsets by timestamp, delete."""

from __future__ import annotations

import time

import pytest

from tests.integration.clients.common import (PARTITIONS, Rec, all_planned,
                                              check_read_back, timestamp_probes,
                                              wait_topic_gone, wait_topic_ready)

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.integration


def produce_all(bootstrap: str, topic: str, idempotent: bool) -> list[Rec]:
    produced: list[Rec] = []
    for codec, recs in all_planned().items():
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec,
                      "linger.ms": 5, "enable.idempotence": idempotent,
                      "acks": "all" if idempotent else "1"})
        errors: list[str] = []
        for r in recs:
            def report(err, msg, r=r):  # type: ignore[no-untyped-def]
                if err is not None:
                    errors.append(f"{r}: {err}")
                else:
                    assert msg.partition() == r.partition
                    produced.append(Rec(r.partition, r.key, r.value, r.headers, r.timestamp,
                                        msg.offset()))
            p.produce(topic, value=r.value, key=r.key, partition=r.partition,
                      headers=list(r.headers), timestamp=r.timestamp, on_delivery=report)
        assert p.flush(30) == 0, "undelivered records after 30 s"
        assert not errors, errors
    return produced


def read_all(bootstrap: str, topic: str) -> list[Rec]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-no-commit",
                  "enable.auto.commit": False, "auto.offset.reset": "error",
                  "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])  # offset 0 = seek
        out: list[Rec] = []
        eof: set[int] = set()
        deadline = time.monotonic() + 30
        while len(eof) < PARTITIONS and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == ck.KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                    continue
                raise AssertionError(f"consume error: {m.error()}")
            eof.discard(m.partition())
            headers = tuple((k, v) for k, v in (m.headers() or []))
            out.append(Rec(m.partition(), m.key(), m.value() or b"", headers,
                           m.timestamp()[1], m.offset()))
        assert len(eof) == PARTITIONS, f"no EOF on all partitions in 30 s (got {len(out)} records)"
        return out
    finally:
        c.close()


def test_confluent_kafka_round_trip(bootstrap: str, port: int, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futs = admin.create_topics([NewTopic(topic, PARTITIONS, 1)], operation_timeout=20)
    futs[topic].result(30)
    wait_topic_ready(port, topic, PARTITIONS)

    produced = produce_all(bootstrap, topic, idempotent=False)
    assert len(produced) == sum(len(v) for v in all_planned().values())
    check_read_back(produced, read_all(bootstrap, topic))

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-no-commit"})
    try:
        for p, ts, want in timestamp_probes(produced):  # one partition once per request
            [tp] = c.offsets_for_times([TopicPartition(topic, p, ts)], 20)
            assert tp.error is None, f"partition {p} ts {ts}: {tp.error}"
            assert tp.offset == (-1 if want is None else want), \
                f"offsets_for_times partition {p} ts {ts}: got {tp.offset}, want {want}"
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), 20)
        assert (lo, hi) == (0, sum(1 for r in produced if r.partition == 0))
    finally:
        c.close()

    admin.delete_topics([topic], operation_timeout=20)[topic].result(30)
    wait_topic_gone(port, topic)


def test_confluent_kafka_idempotent(bootstrap: str, port: int, topic: str) -> None:
    """enable.idempotence=true: InitProducerId, sequenced batches, acks=all."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    wait_topic_ready(port, topic, PARTITIONS)
    produced = produce_all(bootstrap, topic, idempotent=True)
    check_read_back(produced, read_all(bootstrap, topic))
    admin.delete_topics([topic])[topic].result(30)
    wait_topic_gone(port, topic)

