"""spark_jobs.rows: batches in, Kafka-source rows out (no Spark session needed)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from protocol import records
from spark_jobs import rows


def _batch(base: int, n: int, *, codec: int = 0, ts: int = 1_700_000_000_123,
           append_time: bool = False) -> bytearray:
    out = records.BatchBuilder(codec=codec, base_offset=base,
                               timestamp_type=records.LOG_APPEND_TIME if append_time
                               else records.CREATE_TIME)
    for i in range(n):
        key = None if i % 3 == 2 else f"k{base + i}".encode()
        value = None if i % 5 == 4 else f"v{base + i}".encode() * 3
        out.append(key, value, ts + i, [("h", f"{base + i}".encode()), ("n", None)])
    return out.build()


def test_schema_matches_the_kafka_source() -> None:
    plain = rows.schema(False)
    assert plain.fieldNames() == ["key", "value", "topic", "partition", "offset",
                                  "timestamp", "timestampType"]
    with_headers = rows.schema(True)
    assert with_headers.fieldNames()[-1] == "headers"
    assert with_headers["headers"].dataType.simpleString() == "array<struct<key:string,value:binary>>"
    assert rows.SCHEMA == plain
    assert plain["offset"].dataType.simpleString() == "bigint"
    assert plain["partition"].dataType.simpleString() == "int"


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_every_codec_decodes_to_the_same_rows(codec: int) -> None:
    buf = _batch(10, 7, codec=codec) + _batch(17, 4, codec=codec)
    got = list(rows.rows_from_batches("t", 2, buf, 0, 1 << 62, True))
    assert [r[4] for r in got] == list(range(10, 21))
    first = got[0]
    assert first[:5] == (b"k10", b"v10v10v10", "t", 2, 10)
    assert first[5] == datetime.fromtimestamp(1_700_000_000.123, tz=timezone.utc)
    assert first[6] == 0
    assert first[7] == [("h", b"10"), ("n", None)]
    assert got[2][0] is None and got[4][1] is None  # null key, tombstone


def test_offset_range_is_half_open_and_cuts_inside_batches() -> None:
    buf = _batch(0, 5, codec=1) + _batch(5, 5) + _batch(10, 5, codec=1)
    got = [r[4] for r in rows.rows_from_batches("t", 0, buf, 3, 12, False)]
    assert got == list(range(3, 12))
    assert all(len(r) == 7 for r in rows.rows_from_batches("t", 0, buf, 0, 1, False))
    assert list(rows.rows_from_batches("t", 0, buf, 15, 20, False)) == []


def test_control_batches_and_partial_tail_are_skipped() -> None:
    marker = records.build_control_batch(commit=True, producer_id=7, producer_epoch=0,
                                         coordinator_epoch=0, timestamp=5)
    records.patch_base_offset(marker, 0, 3)
    tail = _batch(4, 3)
    buf = _batch(0, 3) + marker + tail[:-5]
    got = [r[4] for r in rows.rows_from_batches("t", 0, buf, 0, 100, False)]
    assert got == [0, 1, 2]


def test_log_append_time_uses_the_batch_max_timestamp() -> None:
    buf = _batch(0, 3, append_time=True, ts=1000)
    got = list(rows.rows_from_batches("t", 0, bytes(buf), 0, 10, False))
    # BatchBuilder keeps maxTimestamp = 1002; LogAppendTime readers use it for every record.
    assert {r[5] for r in got} == {rows.to_datetime(1002)}
    assert {r[6] for r in got} == {1}


def test_timestamps_are_exact_and_aware() -> None:
    assert rows.to_datetime(0) == datetime(1970, 1, 1, tzinfo=timezone.utc)
    assert rows.to_datetime(-1) == datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)
    big = 4_102_444_800_001  # 2100-01-01T00:00:00.001Z
    assert rows.to_datetime(big) == datetime(2100, 1, 1, 0, 0, 0, 1000, tzinfo=timezone.utc)
    assert rows.to_datetime(big).tzinfo is timezone.utc


def test_accepts_memoryview_and_mmap_like_buffers() -> None:
    buf = bytes(_batch(0, 4, codec=1))
    assert len(list(rows.rows_from_batches("t", 0, memoryview(buf), 0, 4, False))) == 4
