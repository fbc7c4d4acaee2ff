"""The ``pybroker`` Spark data source: Spark's Kafka source and sink on the
Python Data Source API (Spark 4), so moving a job from ``format("kafka")`` is
a one-word change::

    import spark_jobs
    spark_jobs.register(spark)
    df = (spark.readStream.format("pybroker")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events").load())

Reads (batch and streaming) take the Kafka source's options (see
``source_options``; TLS and SASL as Spark's: ``kafka.security.protocol``,
``kafka.ssl.*``, ``kafka.sasl.*``, read by ``client.security``) and schema
(``spark_jobs.rows``). Executors read through
the Kafka protocol (``kafka_io``): ListOffsets for positions, Fetch for data,
never above the high watermark (the last stable offset with
``kafka.isolation.level=read_committed``).

Streaming offsets are the Kafka source's JSON (``{"topic": {"0": 42}}``, the
next offset to read per partition) and live in Spark's checkpoint: a
restarted query resumes from the last planned batch's end, so nothing is
skipped or repeated. Theory of a micro-batch:

1. ``latestOffset(start, limit)``: list the subscription's partitions now and
   their latest offsets; new partitions begin at their earliest offset;
   ``maxOffsetsPerTrigger`` (a ReadMaxRows limit) prorates the batch over
   partitions by their backlog, as Spark's Kafka source does.
2. ``partitions(start, end)``: one range [start, end) per topic-partition
   (split further for ``minPartitions`` / ``maxRecordsPerPartition``). A
   partition that disappeared, a new one that does not start at 0, or an end
   below the start is data loss: with ``failOnDataLoss`` (default) the query
   fails with a message saying what was lost, otherwise it is logged.
3. ``read(range)`` on an executor: fetch and decode every batch (any codec)
   and hand Spark Arrow record batches (no per-field conversion on Spark's
   side); offsets deleted meanwhile follow ``failOnDataLoss`` likewise.

Writes are in ``source_write``; delivery is at-least-once (see there).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    DataSourceStreamWriter, DataSourceWriter, InputPartition)
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

from spark_jobs import source_options
from spark_jobs.kafka_io import KafkaIO, shared_client
from spark_jobs.kafka_requests import TP, DataLossError, data_loss
from spark_jobs.rows import arrow_schema, rows_from_batches, schema
from spark_jobs.source_options import SourceOptions, from_offsets_json, offsets_json, resolve

log = logging.getLogger("spark_jobs.source")
ARROW_ROWS = 8192


class KafkaRange(InputPartition):
    """Offsets [start, end) of one topic-partition: one Spark task."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"KafkaRange({self.topic}-{self.partition} [{self.start}, {self.end}))"


def split_ranges(ranges: list[KafkaRange], min_partitions: int | None,
                 max_records: int | None) -> list[KafkaRange]:
    """Spark's KafkaOffsetRangeCalculator: cut ranges longer than
    ``max_records``; then, with fewer ranges than ``min_partitions``, cut each
    into round(size / total * min_partitions) (at least 1) parts."""
    ranges = [r for r in ranges if r.end > r.start]
    if max_records:
        ranges = [piece for r in ranges
                  for piece in _cut(r, math.ceil((r.end - r.start) / max_records))]
    if min_partitions and len(ranges) < min_partitions:
        total = sum(r.end - r.start for r in ranges)
        ranges = [piece for r in ranges
                  for piece in _cut(r, max(round((r.end - r.start) / total * min_partitions), 1))]
    return ranges


def _cut(r: KafkaRange, parts: int) -> list[KafkaRange]:
    size = r.end - r.start
    parts = max(1, min(parts, size))
    bounds = [r.start + size * i // parts for i in range(parts + 1)]
    return [KafkaRange(r.topic, r.partition, a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def read_range(opts: SourceOptions, part: KafkaRange) -> Iterator[tuple]:
    """Rows of one range, in offset order (runs on an executor)."""
    io = shared_client(opts.client)
    for buf, pos in io.fetch_range(part.topic, part.partition, part.start, part.end,
                                   fail_on_data_loss=opts.fail_on_data_loss,
                                   timeout_s=opts.poll_timeout_s):
        yield from rows_from_batches(part.topic, part.partition, buf, pos, part.end,
                                     opts.include_headers)


def read_arrow(opts: SourceOptions, part: KafkaRange) -> Iterator[Any]:
    """The rows of ``read_range`` as Arrow record batches of up to ARROW_ROWS rows.

    Spark takes Arrow batches from a Python data source as they are, instead
    of checking and converting every tuple field by field; the schema must be
    exactly the one Spark derives (timestamps in UTC)."""
    import pyarrow as pa

    target = arrow_schema(opts.include_headers)
    types = [f.type for f in target]
    rows = read_range(opts, part)
    while True:
        chunk = list(itertools.islice(rows, ARROW_ROWS))
        if not chunk:
            return
        columns = [pa.array(col, type=t) for col, t in zip(zip(*chunk), types)]
        yield pa.RecordBatch.from_arrays(columns, schema=target)


def report_data_loss(opts: SourceOptions, message: str) -> None:
    data_loss(opts.fail_on_data_loss, message)


# -- the data source ---------------------------------------------------------------------

class PyBrokerDataSource(DataSource):
    """``format("pybroker")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "pybroker"

    def schema(self) -> StructType:
        headers = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        return schema(headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return PyBrokerBatchReader(source_options.parse(dict(self.options), batch=True))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return PyBrokerStreamReader(source_options.parse(dict(self.options), batch=False))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from spark_jobs.source_write import PyBrokerWriter, parse_write
        return PyBrokerWriter(parse_write(dict(self.options), schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from spark_jobs.source_write import PyBrokerStreamWriter, parse_write
        return PyBrokerStreamWriter(parse_write(dict(self.options), schema))


class PyBrokerBatchReader(DataSourceReader):
    """Batch read: [startingOffsets, endingOffsets) resolved once, on the driver."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        o = self.opts
        io = shared_client(o.client)
        tps = o.subscription.partitions(io)
        start = resolve(io, o.starting, tps, starting=True, strategy=o.timestamp_strategy)
        end = resolve(io, o.ending, tps, starting=False)
        ranges = []
        for tp in tps:
            if end[tp] < start[tp]:
                raise ValueError(
                    f"Beginning offset {start[tp]} is after the ending offset {end[tp]} for "
                    f"topic {tp[0]} partition {tp[1]}. You either provided an invalid "
                    f"fromOffset, or the Kafka topic has been damaged")
            ranges.append(KafkaRange(tp[0], tp[1], start[tp], end[tp]))
        planned = split_ranges(ranges, o.min_partitions, o.max_records_per_partition)
        # Spark needs at least one partition to run a read; an empty range reads nothing.
        return planned or [KafkaRange("", 0, 0, 0)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaRange)
        if partition.end <= partition.start:
            return iter(())
        return read_arrow(self.opts, partition)


class PyBrokerStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch read; offsets are the Kafka source's JSON (module docstring)."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._target: dict[TP, int] | None = None   # Trigger.AvailableNow's end point

    @property
    def io(self) -> KafkaIO:
        return shared_client(self.opts.client)

    def _current(self) -> list[TP]:
        return self.opts.subscription.partitions(self.io)

    def initialOffset(self) -> dict:
        o = self.opts
        tps = self._current()
        return offsets_json(resolve(self.io, o.starting, tps, starting=True,
                                    strategy=o.timestamp_strategy))

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        tps = self._current()
        self._target = self.io.latest(tps)

    def reportLatestOffset(self) -> dict | None:
        return offsets_json(self.io.latest(self._current()))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_offsets_json(start)
        tps = self._current()
        if self._target is not None:
            latest = {tp: o for tp, o in self._target.items()}
        else:
            latest = self.io.latest(tps)
        if isinstance(limit, ReadMaxRows):
            latest = self._rate_limit(begin, latest, limit.max_rows)
        return offsets_json(latest)

    def _rate_limit(self, begin: dict[TP, int], latest: dict[TP, int],
                    limit: int) -> dict[TP, int]:
        """Prorate ``limit`` records over partitions by backlog (Spark's rateLimit):
        a share below 1 rounds up, others down; new partitions start at earliest."""
        new = [tp for tp in latest if tp not in begin]
        begins = {**begin, **(self.io.earliest(new) if new else {})}
        sizes = {tp: max(end - begins[tp], 0) for tp, end in latest.items()}
        total = sum(sizes.values())
        if total <= limit:
            return latest
        out = {}
        for tp, end in latest.items():
            share = limit * sizes[tp] / total
            take = math.ceil(share) if share < 1 else math.floor(share)
            out[tp] = min(begins[tp] + take, end)
        return out

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, until = from_offsets_json(start), from_offsets_json(end)
        o = self.opts
        new = sorted(tp for tp in until if tp not in begin)
        if new:
            found = self.io.earliest([tp for tp in new if tp in set(self._current())])
            for tp in new:
                if tp not in found:
                    report_data_loss(o, f"Cannot find earliest offsets of {tp[0]}-{tp[1]}")
                elif found[tp] != 0:
                    report_data_loss(o, f"Added partition {tp[0]}-{tp[1]} starts from "
                                        f"{found[tp]} instead of 0")
            begin = {**begin, **found}
        gone = sorted(tp for tp in begin if tp not in until)
        if gone:
            report_data_loss(o, f"{', '.join(f'{t}-{p}' for t, p in gone)} are gone")
        ranges = []
        for tp, stop in sorted(until.items()):
            if tp not in begin:
                continue
            if stop < begin[tp]:
                report_data_loss(o, f"Partition {tp[0]}-{tp[1]}'s offset was changed from "
                                    f"{begin[tp]} to {stop}")
                continue
            ranges.append(KafkaRange(tp[0], tp[1], begin[tp], stop))
        return split_ranges(ranges, o.min_partitions, o.max_records_per_partition)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaRange)
        return read_arrow(self.opts, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: offsets live in Spark's checkpoint, not in Kafka."""

    def stop(self) -> None:
        """Connections are the worker's shared client's; they close with the process."""


__all__ = ["PyBrokerDataSource", "PyBrokerBatchReader", "PyBrokerStreamReader", "KafkaRange",
           "split_ranges", "read_range", "DataLossError"]
