"""Bulk replay into a topic: a segment task's records produced with our client.

``python -m spark_jobs.replay ... --to-topic T --bootstrap-server HOST:PORT``
(``spark_jobs.replay`` wires it): one Spark task per source partition sends
that partition's segments one after the other in offset order (so order
within a partition is kept), with ``client.producer.send_batches``, keeping
keys, headers and timestamps (CreateTime). A record goes to the same
partition when the target has enough partitions, else to murmur2(key)
(``client.partitioner``; records without a key: source partition modulo the
count). Records are batched per target partition up to ``MAX_BATCH_BYTES``
(uncompressed) with ``protocol.records.BatchBuilder`` in the chosen codec.

Delivery is at least once: a retried Spark task sends its partition's records
again. A non-retriable produce error, or retries running out, raises
RuntimeError (failing the Spark task).

TLS and SASL: ``security`` holds Kafka client properties (``security.protocol``,
``ssl.*``, ``sasl.*``; ``spark_jobs.kafka_requests.security_options`` turns
Spark-style ``kafka.*`` options into them). They are checked on the driver and
shipped as plain strings (an SSLContext cannot be pickled); each task builds its
``ClientSecurity`` from them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from client import KafkaAdmin
from client.partitioner import partition_for_key
from client.producer import send_batches
from client.security import ClientSecurity
from protocol import records
from protocol.errors import ErrorCode
from spark_jobs.segments import Bounds, Segment, segment_records

MAX_BATCH_BYTES = 512 * 1024   # uncompressed record bytes per produced batch (< max.message.bytes)
PRODUCE_RETRIES = 8            # attempts per batch (and metadata look-ups for the target)
PRODUCE_TIMEOUT_MS = 30000


def _target_partition(seg: Segment, key: bytes | None, count: int) -> int:
    if seg.partition < count:
        return seg.partition
    if key is None:
        return seg.partition % count
    return partition_for_key(key, count)


def produce_segment(seg: Segment, bounds: Bounds, topic: str, servers: str,
                    codec: int, security: Mapping[str, str] | None = None) -> tuple[int, int]:
    """Send the segment's records to ``topic``; -> (records, segment bytes scanned)."""
    return asyncio.run(_produce_segment(seg, bounds, topic, servers, codec,
                                        ClientSecurity.from_config(security or {})))


async def _produce_segment(seg: Segment, bounds: Bounds, topic: str, servers: str,
                           codec: int, security: ClientSecurity | None = None
                           ) -> tuple[int, int]:
    async with KafkaAdmin(servers, security=security) as admin:
        count = await _partition_count(admin, topic)
        pending: dict[int, records.BatchBuilder] = {}
        sizes: dict[int, int] = {}
        sent = 0
        for _header, recs in segment_records(seg, bounds):
            for r in recs:
                p = _target_partition(seg, r.key, count)
                builder = pending.setdefault(p, records.BatchBuilder(codec=codec))
                builder.append(r.key, r.value, r.timestamp, r.headers)
                sizes[p] = sizes.get(p, 0) + len(r.key or b"") + len(r.value or b"") + 16
                if sizes[p] >= MAX_BATCH_BYTES:
                    sent += await _send(admin, topic, {p: pending.pop(p)})
                    sizes[p] = 0
        if pending:
            sent += await _send(admin, topic, pending)
    return sent, seg.size


async def _partition_count(admin: KafkaAdmin, topic: str) -> int:
    for attempt in range(PRODUCE_RETRIES):
        cluster = await admin.metadata([topic])
        info = cluster.topics.get(topic)
        if info is not None and info.error == 0 and info.partitions:
            return len(info.partitions)
        await asyncio.sleep(min(0.1 * 2 ** attempt, 2.0))
    raise RuntimeError(f"target topic {topic!r} does not exist or has no partitions")


async def _send(admin: KafkaAdmin, topic: str, builders: dict[int, records.BatchBuilder]) -> int:
    """Produce one batch per partition (acks=all), retrying retriable errors; -> records sent.
    RuntimeError on a non-retriable error or when a partition still fails after the retries."""
    counts = {p: len(b) for p, b in builders.items()}
    results = await send_batches(admin, {(topic, p): b.build() for p, b in builders.items()},
                                 acks=-1, timeout_ms=PRODUCE_TIMEOUT_MS,
                                 retries=PRODUCE_RETRIES - 1, backoff=0.1, max_backoff=2.0)
    failing = []
    for (_topic, p), result in sorted(results.items()):
        if result.error == ErrorCode.NONE:
            continue
        err = ErrorCode.from_code(result.error)
        if not err.retriable:
            raise RuntimeError(f"produce to {topic}-{p}: {err.name}: "
                               f"{result.message or err.message}")
        failing.append(p)
    if failing:
        raise RuntimeError(f"produce to {topic}: partitions {failing} still failing")
    return sum(counts.values())


def replay_to_topic(spark: Any, tasks: list[Segment], bounds: Bounds, topic: str,
                    servers: str, codec: int, security: Mapping[str, str] | None = None) -> int:
    """Produce every task's records to ``topic``; -> records sent.

    Order within a source partition is kept: a partition's segments go to one
    Spark task, which sends them one after the other in offset order
    (segment tasks running side by side would interleave them). ``security``:
    Kafka client properties (TLS, SASL); ValueError here when they are bad.
    """
    props = dict(security or {})
    ClientSecurity.from_config(props)   # a bad setting fails here, not in every task
    groups: dict[tuple[str, int], list[Segment]] = {}
    for seg in tasks:
        groups.setdefault((seg.topic, seg.partition), []).append(seg)
    if not groups:
        return 0
    ordered = [sorted(segs, key=lambda s: s.base_offset) for segs in groups.values()]

    def send_all(segs: list[Segment]) -> int:
        return sum(produce_segment(seg, bounds, topic, servers, codec, props)[0]
                   for seg in segs)

    rdd = spark.sparkContext.parallelize(ordered, len(ordered))
    return int(sum(rdd.map(send_all).collect()))
