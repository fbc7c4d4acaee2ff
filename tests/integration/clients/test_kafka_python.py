"""kafka-python 3 (idempotent producer by default): admin, every codec,
assign+seek read-back, offsets by timestamp, delete."""

from __future__ import annotations

import time

import pytest

from tests.integration.clients.common import (PARTITIONS, Rec, all_planned, check_read_back,
                                              timestamp_probes, wait_topic_gone,
                                              wait_topic_ready)

kafka = pytest.importorskip("kafka")
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.integration


def produce_all(bootstrap: str, topic: str, **extra: object) -> list[Rec]:
    produced: list[Rec] = []
    for codec, recs in all_planned().items():
        p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5,
                          compression_type=None if codec == "none" else codec, **extra)
        try:
            futs = [(r, p.send(topic, value=r.value, key=r.key, partition=r.partition,
                               headers=list(r.headers), timestamp_ms=r.timestamp))
                    for r in recs]
            for r, f in futs:
                md = f.get(timeout=30)
                assert md.partition == r.partition
                produced.append(Rec(r.partition, r.key, r.value, r.headers, r.timestamp,
                                    md.offset))
        finally:
            p.close(timeout=10)
    return produced


def read_all(bootstrap: str, topic: str) -> list[Rec]:
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        end = c.end_offsets(tps)
        out: list[Rec] = []
        deadline = time.monotonic() + 30
        while any(c.position(tp) < end[tp] for tp in tps) and time.monotonic() < deadline:
            for tp, msgs in c.poll(timeout_ms=500).items():
                for m in msgs:
                    out.append(Rec(m.partition, m.key, m.value or b"",
                                   tuple(m.headers or ()), m.timestamp, m.offset))
        assert all(c.position(tp) >= end[tp] for tp in tps), \
            f"read {len(out)} records, positions behind end offsets {end}"
        out.sort(key=lambda r: (r.partition, r.offset))  # poll may interleave partitions
        return out
    finally:
        c.close()


def test_kafka_python_round_trip(bootstrap: str, port: int, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)], timeout_ms=20000)
        wait_topic_ready(port, topic, PARTITIONS)

        produced = produce_all(bootstrap, topic)  # enable_idempotence defaults to True
        check_read_back(produced, read_all(bootstrap, topic))

        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
        try:
            probes = timestamp_probes(produced)
            for p, ts, want in probes:
                tp = TopicPartition(topic, p)
                got = c.offsets_for_times({tp: ts})[tp]
                assert (None if got is None else got.offset) == want, \
                    f"offsets_for_times partition {p} ts {ts}: got {got}, want {want}"
        finally:
            c.close()

        admin.delete_topics([topic], timeout_ms=20000)
        wait_topic_gone(port, topic)
    finally:
        admin.close()


def test_kafka_python_not_idempotent_acks1(bootstrap: str, port: int, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)], timeout_ms=20000)
        wait_topic_ready(port, topic, PARTITIONS)
        produced = produce_all(bootstrap, topic, enable_idempotence=False, acks=1)
        check_read_back(produced, read_all(bootstrap, topic))
        admin.delete_topics([topic], timeout_ms=20000)
        wait_topic_gone(port, topic)
    finally:
        admin.close()
