"""The ``pybroker`` sink: DataFrames to topics, batch and streaming.

Columns, as Spark's Kafka sink takes them:

    value      string or binary   required (null allowed: a tombstone)
    key        string or binary   optional
    topic      string             optional; the ``topic`` option, when given, wins
    partition  int                optional; null -> Kafka's default partitioner
    headers    array<struct<key: string, value: binary>>   optional

A null partition goes to ``murmur2(key) % partitions`` for a keyed record
(``client.partitioner``, the same partition a Java or librdkafka
producer picks) and to a sticky partition for a null key (KIP-480). Strings
are written as UTF-8. Every record gets CreateTime = the time it was
batched.

Delivery guarantee: **at-least-once** by default, as Spark's Kafka sink; with
``exactlyOnce=true``, exactly-once (``spark_jobs.sink_exactly_once``: a transaction
per task and micro-batch, the batch id recorded in it, committed by the driver once
every task succeeded; read the output read_committed). Each Spark task
sends its rows with ``acks=all`` (``kafka.acks`` may lower it) and only
succeeds once every batch is acknowledged, so a successful micro-batch is
durably in the topic. But a task retried after a failure, or a micro-batch
re-run after a restart (its output was written before the commit log entry),
writes its rows again: consumers may see duplicates and should de-duplicate
on a key of their own if they need exactly-once. Within one task, records to
one partition keep their order (one request in flight per partition).

Options: ``topic``, ``kafka.bootstrap.servers``, ``kafka.acks`` (all, 1, 0),
``kafka.compression.type`` (none, gzip, snappy, lz4, zstd),
``kafka.batch.size`` (bytes per partition batch, default 1 MiB),
``kafka.client.id``, ``kafka.request.timeout.ms``; for exactly-once
``exactlyOnce`` (true/false), ``kafka.transactional.id.prefix`` (default
``pybroker-sink-``) and ``kafka.transaction.timeout.ms`` (default 60000); TLS and
SASL: ``kafka.security.protocol``, ``kafka.ssl.*``, ``kafka.sasl.*`` (Kafka's or
librdkafka's client keys, see ``client.security``), for both modes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, StringType, StructType)

from client.partitioner import StickyPartitioner, partition_for_key
from protocol.records import BatchBuilder
from spark_jobs.kafka_io import KafkaIO, shared_client
from spark_jobs.kafka_requests import TP, ClientConfig
from spark_jobs.sink_exactly_once import (DEFAULT_PREFIX, OpenTransaction, end_transactions,
                                          new_write_id, write_exactly_once)

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
ACKS = {"all": -1, "-1": -1, "1": 1, "0": 0}
RECORD_OVERHEAD = 24            # varints and attributes per record, roughly
FLUSH_BYTES = 4 * 1024 * 1024   # send everything pending once this much is batched


@dataclass(frozen=True)
class WriteOptions:
    client: ClientConfig
    topic: str | None
    acks: int
    codec: int
    batch_bytes: int
    columns: tuple[int | None, ...]   # index of key, value, topic, partition, headers
    exactly_once: bool = False        # sink_exactly_once: a transaction per task and batch
    txn_prefix: str = DEFAULT_PREFIX
    txn_timeout_ms: int = 60000
    write_id: str = ""                # a batch write's id (exactly-once transactional ids)


@dataclass
class WriteCommit(WriterCommitMessage):
    """What a task tells the driver: rows written, and in exactly-once mode its
    transaction, left open for the driver's commit (sink_exactly_once)."""
    records: int
    transaction: OpenTransaction | None = None


def parse_write(options: dict[str, str], schema: StructType) -> WriteOptions:
    """Validate options and the DataFrame's columns (Spark's messages)."""
    opts = {k.lower(): v for k, v in options.items()}
    kafka = {k[6:]: v for k, v in opts.items() if k.startswith("kafka.")}
    for key in ("key.serializer", "value.serializer"):
        if key in kafka:
            raise ValueError(f"Kafka option '{key}' is not supported as keys and values are "
                             "serialized by the sink (use string or binary columns)")
    codec = kafka.get("compression.type", "none").lower()
    if codec not in CODECS:
        raise ValueError(f"kafka.compression.type must be one of {sorted(CODECS)}, not {codec!r}")
    acks = kafka.get("acks", "all").lower()
    if acks not in ACKS:
        raise ValueError(f"kafka.acks must be all, 1 or 0, not {acks!r}")
    topic = opts.get("topic")
    names = {f.name.lower(): (i, f.dataType) for i, f in enumerate(schema.fields)}

    def column(name: str, types: tuple[type, ...], what: str) -> int | None:
        if name not in names:
            return None
        i, dtype = names[name]
        if not isinstance(dtype, types):
            raise ValueError(f"{name} attribute type must be {what}")
        return i

    value = column("value", (StringType, BinaryType), "a string or binary")
    if value is None:
        raise ValueError("Required attribute 'value' not found")
    if topic is None and "topic" not in names:
        raise ValueError("topic option required when no 'topic' attribute is present. Use "
                         "the topic option for setting a topic.")
    headers = column("headers", (ArrayType,), "an array<struct<key: string, value: binary>>")
    cols = (column("key", (StringType, BinaryType), "a string or binary"), value,
            column("topic", (StringType,), "a string"),
            column("partition", (IntegerType,), "an int"), headers)
    exactly_once = opts.get("exactlyonce", "false").lower()
    if exactly_once not in ("true", "false"):
        raise ValueError(f"exactlyOnce must be true or false, not {exactly_once!r}")
    if exactly_once == "true" and ACKS[acks] != -1:
        raise ValueError("exactlyOnce=true needs kafka.acks=all (transactions are acks=all)")
    return WriteOptions(ClientConfig.from_kafka_options(options), topic, ACKS[acks],
                        CODECS[codec], int(kafka.get("batch.size", str(1024 * 1024))), cols,
                        exactly_once == "true",
                        kafka.get("transactional.id.prefix", DEFAULT_PREFIX),
                        int(kafka.get("transaction.timeout.ms", "60000")), new_write_id())


def _bytes(v: Any) -> bytes | None:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)   # bytearray (Spark's BinaryType in Python)


class _PartitionBatch:
    def __init__(self, codec: int) -> None:
        self.builder = BatchBuilder(codec=codec)
        self.size = 0


class RowSender:
    """Batches rows per partition and sends them (one request per leader at a time)."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts
        self.io: KafkaIO = shared_client(opts.client)
        self.counts: dict[str, int] = {}
        self.sticky = StickyPartitioner()
        self.pending: dict[TP, _PartitionBatch] = {}
        self.pending_bytes = 0
        self.sent = 0

    def partitions_of(self, topic: str) -> int:
        n = self.counts.get(topic)
        if n is None:
            self.counts.update(self.io.partition_counts([topic]))
            n = self.counts[topic]
        return n

    def route(self, row: Any) -> tuple[TP, bytes | None, bytes | None, list[Any], int]:
        """A row's (topic, partition), key, value, headers and approximate size."""
        ki, vi, ti, pi, hi = self.opts.columns
        topic = self.opts.topic or (row[ti] if ti is not None else None)
        if topic is None:
            raise ValueError("null topic present in the data. Use the topic option for "
                             "setting a default topic.")
        key = _bytes(row[ki]) if ki is not None else None
        value = _bytes(row[vi])
        partition = row[pi] if pi is not None else None
        count = self.partitions_of(topic)
        if partition is None:
            partition = (partition_for_key(key, count) if key is not None
                         else self.sticky.partition(topic, None, count))
        elif not 0 <= partition < count:
            raise ValueError(f"partition {partition} of topic {topic} does not exist "
                             f"({count} partitions)")
        headers = [(h[0], _bytes(h[1])) for h in row[hi]] if hi is not None and row[hi] else []
        size = (len(key or b"") + len(value or b"") + RECORD_OVERHEAD
                + sum(len(k) + len(v or b"") + 4 for k, v in headers))
        return (topic, partition), key, value, headers, size

    def add(self, row: Any) -> None:
        (topic, partition), key, value, headers, size = self.route(row)
        batch = self.pending.get((topic, partition))
        if batch is None:
            batch = self.pending[(topic, partition)] = _PartitionBatch(self.opts.codec)
        batch.builder.append(key, value, int(time.time() * 1000), headers)
        batch.size += size
        self.pending_bytes += size
        if batch.size >= self.opts.batch_bytes or self.pending_bytes >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        pending, self.pending, self.pending_bytes = self.pending, {}, 0
        self.io.produce({tp: bytes(b.builder.build()) for tp, b in pending.items()},
                        acks=self.opts.acks)
        for (topic, _p), b in pending.items():
            self.sent += len(b.builder)
            self.sticky.new_batch(topic, self.counts[topic])


def write_rows(opts: WriteOptions, rows: Iterator[Any]) -> WriteCommit:
    """Send every row (all acknowledged, or raise). In exactly-once mode as one
    transaction left open for the driver (``sink_exactly_once``)."""
    sender = RowSender(opts)
    if opts.exactly_once:
        written, transaction = write_exactly_once(sender, rows, opts.txn_prefix,
                                                  opts.write_id, opts.txn_timeout_ms)
        return WriteCommit(written, transaction)
    for row in rows:
        sender.add(row)
    sender.flush()
    return WriteCommit(sender.sent)


def end_writes(opts: WriteOptions, messages: list[WriterCommitMessage | None], *,
               commit: bool) -> None:
    """On the driver: end the open transactions the tasks' messages carry (none
    unless exactly-once)."""
    transactions = [m.transaction for m in messages
                    if isinstance(m, WriteCommit) and m.transaction is not None]
    if transactions:
        end_transactions(shared_client(opts.client), transactions, commit=commit,
                         transaction_timeout_ms=opts.txn_timeout_ms)


class PyBrokerWriter(DataSourceWriter):
    """``df.write.format("pybroker")``: at-least-once, or a transaction per task
    attempt with exactlyOnce (module docstring)."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return write_rows(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """At-least-once: the records are in the topic once each task returns.
        Exactly-once: every task succeeded, so their transactions commit."""
        end_writes(self.opts, messages, commit=True)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """At-least-once: sent records cannot be taken back. Exactly-once: the
        transactions of the tasks that finished are aborted."""
        end_writes(self.opts, messages, commit=False)


class PyBrokerStreamWriter(DataSourceStreamWriter):
    """``writeStream.format("pybroker")``: each micro-batch as a batch write."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return write_rows(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At-least-once: nothing to publish, every batch was acknowledged.
        Exactly-once: the batch's transactions commit, before Spark's commit log
        records the batch."""
        end_writes(self.opts, messages, commit=True)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At-least-once: sent records stay; Spark re-runs the batch. Exactly-once:
        the finished tasks' transactions are aborted."""
        end_writes(self.opts, messages, commit=False)
