"""Rows in the Kafka source's shape, shared by the ``pybroker`` data source and the replay job.

Spark's Kafka source (and so ours) has this schema::

    key            binary      null for a null key
    value          binary      null for a tombstone
    topic          string
    partition      int
    offset         long
    timestamp      timestamp   the record's timestamp (ms since the epoch, as UTC)
    timestampType  int         0 CreateTime, 1 LogAppendTime
    headers        array<struct<key: string, value: binary>>   only with includeHeaders

A row is a plain tuple in that column order. Timestamps are timezone-aware
``datetime`` objects in UTC: Spark's Python-to-TimestampType conversion
treats a naive datetime as the worker's local time, while an aware one maps
to the exact instant, so UTC-aware values round-trip whatever the machine's
zone is. Kafka timestamps are milliseconds; datetime holds microseconds, so
nothing is lost.

``arrow_schema(include_headers)`` is that schema as the pyarrow schema Spark
derives from it: what Arrow record batches handed to Spark (the source's
reader, the replay's private source) or written to Parquet must match.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType,
                               StructField, StructType, TimestampType)

from protocol import records

_BASE_FIELDS = [
    StructField("key", BinaryType(), True),
    StructField("value", BinaryType(), True),
    StructField("topic", StringType(), True),
    StructField("partition", IntegerType(), True),
    StructField("offset", LongType(), True),
    StructField("timestamp", TimestampType(), True),
    StructField("timestampType", IntegerType(), True),
]
HEADERS_TYPE = ArrayType(StructType([
    StructField("key", StringType(), True),
    StructField("value", BinaryType(), True),
]), True)

SCHEMA = StructType(_BASE_FIELDS)
SCHEMA_WITH_HEADERS = StructType([*_BASE_FIELDS, StructField("headers", HEADERS_TYPE, True)])

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def schema(include_headers: bool) -> StructType:
    """The Kafka source's schema; ``headers`` last, only when asked for (as Spark's)."""
    return SCHEMA_WITH_HEADERS if include_headers else SCHEMA


@functools.cache
def arrow_schema(include_headers: bool = True) -> Any:
    """``schema(include_headers)`` as the pyarrow schema Spark derives from it (timestamps
    in UTC): what Arrow record batches handed to Spark or written to Parquet must match."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema(include_headers), timezone="UTC")


def to_datetime(timestamp_ms: int) -> datetime:
    """Kafka's millisecond timestamp as an aware UTC datetime (exact; works below 0 too)."""
    return EPOCH + timedelta(milliseconds=timestamp_ms)


def rows_from_batches(topic: str, partition: int, buf: Any, start_offset: int,
                      end_offset: int, include_headers: bool) -> Iterator[tuple]:
    """Rows for the records of every complete batch in ``buf`` with start <= offset < end.

    ``buf`` is a fetch response's record set or a slice of a segment file
    (bytes, bytearray, memoryview or mmap); a partial batch at the end is
    ignored. Any codec is decoded (protocol.compression). Control batches
    (transaction markers) are never rows. Batches wholly outside the range are
    skipped without decompressing them.
    """
    for pos, header in records.iter_batches(buf):
        if header.is_control:
            continue
        if header.last_offset < start_offset:
            continue
        if header.base_offset >= end_offset:
            # Offsets only grow within a log, but a fetch may hand back an older
            # batch first (compaction gaps); keep walking instead of stopping.
            continue
        ts_type = header.timestamp_type
        for rec in records.iter_records(buf, pos):
            if rec.offset < start_offset or rec.offset >= end_offset:
                continue
            row = (rec.key, rec.value, topic, partition, rec.offset,
                   to_datetime(rec.timestamp), ts_type)
            if include_headers:
                yield (*row, [(k, v) for k, v in rec.headers])
            else:
                yield row
