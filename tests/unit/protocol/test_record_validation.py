"""protocol.record_validation: the record walk and Kafka 3.9's LogValidator rules."""

from __future__ import annotations

import struct

import pytest

from protocol import compression, records
from protocol import record_validation as rv
from protocol.compression import Codec
from protocol.primitives import write_varint
from protocol.records import (
    CRC_AT, HEADER_SIZE, LENGTH_AT, LOG_APPEND_TIME, LOG_OVERHEAD, CorruptRecordError,
    InvalidRecordError, build_batch, compute_crc,
)

NOW = 1_700_000_000_000
LONG_MAX = rv.LONG_MAX
CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]


def check(batch: bytes | bytearray, rules: rv.RecordRules | None = None, now: int = NOW) -> None:
    headers = records.validate(batch)
    rv.validate_batches(batch, headers, rules or rv.RecordRules("t-0"), now)


def raw_record(offset_delta: int, key: bytes | None = b"k", value: bytes | None = b"v",
               ts_delta: int = 0, headers: list[tuple[bytes, bytes | None]] = (),  # type: ignore[assignment]
               header_count: int | None = None, length_adjust: int = 0) -> bytes:
    rec = bytearray(b"\x00")
    write_varint(rec, ts_delta)
    write_varint(rec, offset_delta)
    for field in (key, value):
        if field is None:
            write_varint(rec, -1)
        else:
            write_varint(rec, len(field))
            rec += field
    write_varint(rec, len(headers) if header_count is None else header_count)
    for hk, hv in headers:
        write_varint(rec, len(hk))
        rec += hk
        if hv is None:
            write_varint(rec, -1)
        else:
            write_varint(rec, len(hv))
            rec += hv
    out = bytearray()
    write_varint(out, len(rec) + length_adjust)
    return bytes(out + rec)


def batch_of(body: bytes, count: int, codec: Codec = Codec.NONE, timestamp_type: int = 0,
             base_ts: int = NOW) -> bytearray:
    """A v2 batch with ``body`` as its (uncompressed) records, header and CRC consistent."""
    payload = compression.compress(codec, body) if codec else body
    out = bytearray(HEADER_SIZE) + payload
    attributes = int(codec) | (0x08 if timestamp_type == LOG_APPEND_TIME else 0)
    records.HEADER.pack_into(out, 0, 0, len(out) - LOG_OVERHEAD, -1, 2, 0, attributes, count - 1,
                             base_ts, base_ts, -1, -1, -1, count)
    struct.pack_into(">I", out, CRC_AT, compute_crc(out, 0, len(out)))
    return out


# ---- well-formed batches pass ---------------------------------------------------------------

@pytest.mark.parametrize("codec", CODECS)
def test_batches_from_the_builder_pass(codec: Codec) -> None:
    rows = [(b"key-%d" % i, bytes(i * 37 % 3000), NOW + i, [("h", b"x"), ("n", None)])
            for i in range(300)]
    rows.append((None, None, NOW, []))
    check(build_batch(rows, codec=codec))  # type: ignore[arg-type]


def test_long_varints_pass() -> None:
    """Lengths and deltas of 3+ byte varints take the slow path."""
    body = b"".join(raw_record(i, key=b"k" * 70_000, value=None, ts_delta=1 << 40)
                    for i in range(3))
    check(batch_of(body, 3), rv.RecordRules("t-0", before_max_ms=LONG_MAX))


def test_non_minimal_varints_are_accepted_as_java_does() -> None:
    rec = bytearray(b"\x00" + b"\x00" + b"\x80\x00" + b"\x02k" + b"\x02v" + b"\x00")  # delta 0 in 2 bytes
    body = bytes([len(rec) * 2]) + rec
    check(batch_of(body, 1))


# ---- records that do not parse: INVALID_RECORD (whole partition) -----------------------------

@pytest.mark.parametrize("body, count, message", [
    (raw_record(0) + raw_record(2), 2, "offset delta 2"),
    (raw_record(1), 1, "offset delta 1"),
    (raw_record(0) + raw_record(0), 2, "offset delta 0"),
    (raw_record(0), 2, "cannot fit|premature EOF"),
    (raw_record(0) + raw_record(1) + b"\x00" * 8, 2, "still remaining"),
    (raw_record(0, header_count=-1), 1, "invalid number of record headers"),
    (raw_record(0, header_count=1 << 40), 1, "headers cannot fit"),
    (raw_record(0, length_adjust=3) + b"\x00\x00\x00", 1, "Invalid record size"),
    (raw_record(0, length_adjust=-1), 1, "Invalid record size|premature|still remaining"),
    (b"\x0b" + b"\x00" * 6, 1, "Invalid record size"),  # length -6
    (raw_record(0, headers=[(b"k", b"v")])[:-1], 1, "premature|Invalid record size|header runs"),
])
def test_unparseable_records_are_invalid(body: bytes, count: int, message: str) -> None:
    """(records.validate's own size check may answer first for uncompressed batches:
    CORRUPT_MESSAGE "records cannot fit", as before issue 17.)"""
    for codec in (Codec.NONE, Codec.LZ4):
        with pytest.raises(records.RecordError, match=message + "|records cannot fit"):
            check(batch_of(body, count, codec))


def test_negative_key_length_other_than_minus_one() -> None:
    rec = bytearray(b"\x00\x00\x00")
    write_varint(rec, -5)
    rec += b"\x02v\x00"
    out = bytearray()
    write_varint(out, len(rec))
    with pytest.raises(InvalidRecordError, match="key length"):
        check(batch_of(bytes(out + rec), 1))


def test_negative_header_key_length() -> None:
    rec = bytearray(b"\x00\x00\x00\x02k\x02v\x02")  # one header
    write_varint(rec, -3)
    rec += b"\x00"
    out = bytearray()
    write_varint(out, len(rec))
    with pytest.raises(InvalidRecordError, match="negative header key size"):
        check(batch_of(bytes(out + rec), 1))


def test_garbage_inside_a_compressed_batch_with_a_valid_crc() -> None:
    for codec in (Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD):
        junk = bytes((i * 89 + 7) % 256 for i in range(300))
        with pytest.raises(InvalidRecordError):
            check(batch_of(junk, 3, codec))  # inflates fine, records do not parse


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_compressed_bytes_that_do_not_inflate_are_corrupt(codec: Codec) -> None:
    good = batch_of(raw_record(0), 1, codec)
    bad = good[:HEADER_SIZE] + bytes(b ^ 0x5A for b in good[HEADER_SIZE:])
    struct.pack_into(">I", bad, CRC_AT, compute_crc(bad, 0, len(bad)))
    with pytest.raises((CorruptRecordError, InvalidRecordError)):
        check(bad)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.LZ4, Codec.ZSTD])
def test_compressed_batch_inflating_beyond_the_bound_is_corrupt(codec: Codec) -> None:
    body = raw_record(0, key=b"k", value=bytes(3 * 1024 * 1024))
    batch = batch_of(body, 1, codec)
    assert len(batch) < 200_000
    with pytest.raises(CorruptRecordError, match="inflates beyond"):
        check(batch, rv.RecordRules("t-0", max_inflated=1024 * 1024))
    check(batch, rv.RecordRules("t-0", max_inflated=4 * 1024 * 1024))


def test_bound_from_max_message_bytes() -> None:
    assert rv.max_inflated_bytes(1_048_588) == rv.INFLATE_FACTOR * 1_048_588 == 16 * 1_048_588
    assert rv.max_inflated_bytes(1000) == rv.MIN_INFLATED_BYTES


# ---- rule breaks: record errors (KIP-467) ----------------------------------------------------

def test_keyless_records_on_a_compacted_topic() -> None:
    batch = build_batch([(b"a", b"1", NOW), (None, b"2", NOW), (b"c", b"3", NOW), (None, b"4", NOW)])
    check(batch)  # fine when not compacted
    with pytest.raises(rv.RecordValidationError) as e:
        check(batch, rv.RecordRules("topic-3", compacted=True))
    assert e.value.error == rv.RecordValidationError.INVALID_RECORD
    assert [i for i, _ in e.value.record_errors] == [1, 3]
    assert e.value.record_errors[0][1] == \
        "Compacted topic cannot accept message without key in topic partition topic-3"
    assert str(e.value).startswith(
        "One or more records have been rejected due to 2 record errors in total, and only "
        "showing the first three errors at most: [RecordError(batchIndex=1, message='Compacted")


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.ZSTD])
def test_timestamps_outside_before_and_after(codec: Codec) -> None:
    rows = [(b"k", b"v", NOW - 10_000), (b"k", b"v", NOW), (b"k", b"v", NOW + 10_000),
            (b"k", b"v", NOW - 500)]
    batch = build_batch(rows, codec=codec)
    check(batch)  # defaults: anything goes
    rules = rv.RecordRules("t-0", before_max_ms=1000, after_max_ms=2000)
    with pytest.raises(rv.RecordValidationError) as e:
        check(batch, rules)
    assert e.value.error == rv.RecordValidationError.INVALID_TIMESTAMP
    assert str(e.value) == "One or more records have been rejected due to invalid timestamp"
    assert [i for i, _ in e.value.record_errors] == [0, 2]
    assert e.value.record_errors[0][1] == (
        f"Timestamp {NOW - 10_000} of message with offset 0 is out of range. The timestamp "
        f"should be within [{NOW - 1000}, {NOW + 2000}]")


def test_no_timestamp_is_never_out_of_range() -> None:
    body = raw_record(0, ts_delta=0)
    check(batch_of(body, 1, base_ts=-1), rv.RecordRules("t-0", before_max_ms=0, after_max_ms=0))


def test_key_error_comes_first_and_timestamp_error_wins_the_code() -> None:
    batch = build_batch([(None, b"v", NOW), (b"k", b"v", NOW - 99_999)])
    with pytest.raises(rv.RecordValidationError) as e:
        check(batch, rv.RecordRules("t-0", compacted=True, before_max_ms=10))
    assert e.value.error == rv.RecordValidationError.INVALID_TIMESTAMP
    assert [i for i, _ in e.value.record_errors] == [0, 1]
    assert "Compacted" in e.value.record_errors[0][1]


def test_log_append_time_batch_from_a_producer() -> None:
    batch = batch_of(raw_record(0) + raw_record(1), 2, timestamp_type=LOG_APPEND_TIME)
    check(batch)  # CreateTime topic, no bounds: Kafka's first branch, which passes
    with pytest.raises(rv.RecordValidationError) as e:
        check(batch, rv.RecordRules("t-0", log_append_time=True))
    assert e.value.error == rv.RecordValidationError.INVALID_TIMESTAMP
    assert "Producer should not set timestamp type to LogAppendTime" in e.value.record_errors[0][1]


def test_difference_max_ms_fills_in_for_before_and_after() -> None:
    assert rv.effective_timestamp_bounds(LONG_MAX, LONG_MAX, 500) == (500, 500)
    assert rv.effective_timestamp_bounds(100, LONG_MAX, 500) == (100, 500)
    assert rv.effective_timestamp_bounds(100, 200, 500) == (100, 200)
    assert rv.effective_timestamp_bounds(LONG_MAX, LONG_MAX, LONG_MAX) == (LONG_MAX, LONG_MAX)


def test_counts_fitting_check_comes_before_any_work() -> None:
    """recordsCount 2^31-1 over a few bytes is refused before the walk loops."""
    with pytest.raises(InvalidRecordError, match="cannot fit"):
        rv._walk(b"\x00" * 100, 0x7FFFFFFF, False)


def test_batch_length_field_is_what_records_validate_checks() -> None:
    batch = batch_of(raw_record(0), 1)
    struct.pack_into(">i", batch, LENGTH_AT, 10)
    with pytest.raises(CorruptRecordError):
        check(batch)
