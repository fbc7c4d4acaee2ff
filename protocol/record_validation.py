"""Record-level validation of produced batches, as Kafka 3.9's LogValidator, sans-I/O.

``records.validate`` checks what the 61-byte headers and the CRCs say. This module looks
inside: it walks every record of every client batch (inflating compressed ones, bounded)
so that nothing the broker appends is unreadable, and applies the per-record rules of
Kafka's LogValidator.

Two kinds of failure, as in Kafka:

* The records do not parse (a length overrunning its record or batch, a negative header
  count or key length, fewer or more records than the header's recordsCount, bytes left
  after the last record, offset deltas that are not 0, 1, 2, ...): the whole partition is
  refused with INVALID_RECORD (Kafka's DefaultRecord / DefaultRecordBatch iterators throw
  InvalidRecordException). Compressed bytes that do not inflate, or inflate beyond the
  bound below: CORRUPT_MESSAGE.
  Kafka rewrites a compressed batch whose inner offsets are not 0..n-1 (for old v1
  clients); a v2 batch here is stored as sent, so such a batch is refused instead.
* The records parse but some break a rule: each one becomes a KIP-467 record error
  ``(batch_index, message)`` in the Produce response (v8+), nothing of the partition is
  appended, and the partition's error is

  - INVALID_TIMESTAMP with "One or more records have been rejected due to invalid
    timestamp" when any record has a bad timestamp, else
  - INVALID_RECORD with "One or more records have been rejected due to N record errors in
    total, and only showing the first three errors at most: [RecordError(...), ...]".

  The rules, per record, first failure only (Kafka's validateRecord order):
  1. compacted topic (cleanup.policy contains compact) and a null key: INVALID_RECORD
     "Compacted topic cannot accept message without key in topic partition T-P";
  2. topic message.timestamp.type CreateTime and timestamp != -1: INVALID_TIMESTAMP when
     ``now - ts > before_max_ms`` or ``ts - now > after_max_ms`` (the topic's
     message.timestamp.before.max.ms / after.max.ms; each falls back to the deprecated
     message.timestamp.difference.max.ms while it is left at its default, Long.MAX);
  3. otherwise a batch that says LogAppendTime: INVALID_TIMESTAMP ("Producer should not
     set timestamp type to LogAppendTime").

Decompression bound (the factor): a compressed batch may inflate to at most
``INFLATE_FACTOR`` (16) times the topic's max.message.bytes, and never less than
``MIN_INFLATED_BYTES`` (16 MiB). max.message.bytes bounds the *compressed* batch, so the
bound must leave room for real compression ratios: producers build batches from their
uncompressed size (librdkafka: batch.size, 1 MB by default; kafka-python/aiokafka:
batch_size 16 KiB) or from an estimated ratio that starts at 1.0 and falls by 0.005 per
batch (the Java client, batch.size 16 KiB), and text, JSON or logs compress 3-10x. The
bound is also what a bomb costs: 16 MiB of zeros take 10-30 ms to inflate (zstd, gzip),
where the fuzzer measured 75-117 ms event-loop stalls at 64 MiB (64x was the first choice,
before the inflating moved to a worker thread). A topic whose batches inflate more than 16 MiB and 16 times its
max.message.bytes needs a larger max.message.bytes.

Where it runs: the broker validates heavy data (any compressed batch, or a large
uncompressed one) in a worker thread (broker/replication/record_checks.py), the rest
inline; this module is plain functions over bytes, safe to call from any thread.

Performance: this is on the produce hot path. The walk allocates nothing per record
(no Record objects, no key/value copies): varints are read inline with a one-byte fast
path, lengths are skipped over, and only a record that breaks a rule builds an error
string. Timestamps are checked only when a rule can fail (the defaults never can).

Native walk (issue 28): protocol/_record_walk.c does ``_walk`` in C, and without the GIL
for more than 1000 records (so a worker thread's walk runs beside the event loop). It
is used when it was built (``pip install -e .`` builds it where a compiler is found;
setup.py) and the environment does not say PYBROKER_NATIVE=0; ``NATIVE`` tells which.
``_walk`` below stays the reference (same verdicts, same messages: a property test holds
them together) and the fallback. With the C walk an uncompressed body is not copied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol import compression, native
from protocol.records import (
    HEADER_SIZE, LOG_APPEND_TIME, BatchHeader, CorruptRecordError, InvalidRecordError,
)

LONG_MAX = (1 << 63) - 1
NO_TIMESTAMP = -1
INFLATE_FACTOR = 16
MIN_INFLATED_BYTES = 16 * 1024 * 1024
MIN_RECORD_BODY = 6  # attributes, tsDelta, offsetDelta, keyLength, valueLength, headerCount


# protocol/_record_walk.c where built (else the Python walk below is used)
_record_walk = native.extension("_record_walk")
# Whether validate_batch walks records in C; PYBROKER_NATIVE=0 forces the Python walk.
NATIVE: bool = _record_walk is not None and native.wanted()


def max_inflated_bytes(max_message_bytes: int) -> int:
    """The bound on one compressed batch's inflated records for a topic's max.message.bytes."""
    return max(MIN_INFLATED_BYTES, INFLATE_FACTOR * max(max_message_bytes, 0))


def effective_timestamp_bounds(before_max_ms: int, after_max_ms: int,
                               difference_max_ms: int) -> tuple[int, int]:
    """Kafka 3.9's LogConfig: before/after fall back to the deprecated difference.max.ms
    while they are left at their default (Long.MAX)."""
    before = before_max_ms if before_max_ms != LONG_MAX else difference_max_ms
    after = after_max_ms if after_max_ms != LONG_MAX else difference_max_ms
    return before, after


@dataclass(frozen=True, slots=True)
class RecordRules:
    """What the topic asks of each record (from its config)."""

    topic_partition: str             # "topic-partition", for Kafka's messages
    compacted: bool = False
    log_append_time: bool = False    # the topic's message.timestamp.type
    before_max_ms: int = LONG_MAX    # effective (difference.max.ms already folded in)
    after_max_ms: int = LONG_MAX
    max_inflated: int = MIN_INFLATED_BYTES

    @property
    def checks_timestamps(self) -> bool:
        return self.before_max_ms != LONG_MAX or self.after_max_ms != LONG_MAX


class RecordValidationError(InvalidRecordError):
    """Records that parse but break a rule: Kafka's RecordValidationException.
    ``error`` is INVALID_RECORD (87) or INVALID_TIMESTAMP (32); ``record_errors`` are
    (batch_index, message) pairs for the Produce response (KIP-467)."""

    INVALID_TIMESTAMP = 32
    INVALID_RECORD = 87

    def __init__(self, record_errors: list[tuple[int, str]], timestamp_error: bool) -> None:
        self.record_errors = record_errors
        self.error = self.INVALID_TIMESTAMP if timestamp_error else self.INVALID_RECORD
        if timestamp_error:
            message = "One or more records have been rejected due to invalid timestamp"
        else:
            shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')"
                              for i, m in record_errors[:3])
            message = (f"One or more records have been rejected due to {len(record_errors)} "
                       f"record errors in total, and only showing the first three errors at "
                       f"most: [{shown}]")
        super().__init__(message)


def validate_batches(buf: Any, headers: list[BatchHeader], rules: RecordRules, now: int) -> None:
    """Walk the records of each (already header- and CRC-checked) batch in ``buf``.

    Raises InvalidRecordError / CorruptRecordError for records that do not parse and
    RecordValidationError for rule breaks (nothing may be appended then).
    """
    pos = 0
    for header in headers:
        validate_batch(buf, pos, header, rules, now)
        pos += header.size


def validate_batch(buf: Any, pos: int, header: BatchHeader, rules: RecordRules, now: int) -> None:
    body: Any
    if header.compression == 0:
        if NATIVE:  # any buffer will do
            body = memoryview(buf)[pos + HEADER_SIZE:pos + header.size]
        else:
            body = bytes(buf[pos + HEADER_SIZE:pos + header.size])  # bytes index fastest
    else:
        try:
            body = compression.decompress(header.compression,
                                          memoryview(buf)[pos + HEADER_SIZE:pos + header.size],
                                          max_size=rules.max_inflated)
        except compression.CorruptCompressedData as e:
            raise CorruptRecordError(f"compressed records of the batch: {e}") from None
        except (compression.UnknownCodec, compression.CompressionUnavailable) as e:
            # codec 5-7, or snappy/lz4/zstd on a broker without cramjam: the records
            # cannot be checked, so they are not taken (the message names the package)
            raise InvalidRecordError(str(e)) from None
    want_stamps = rules.checks_timestamps and not rules.log_append_time \
        and header.timestamp_type != LOG_APPEND_TIME
    # keyless records matter only on a compacted topic (they are refused there)
    keyless, stamps = _walk_records(body, header.records_count, want_stamps,
                                    want_keyless=rules.compacted)
    errors: list[tuple[int, str]] | None = None
    if rules.compacted and keyless:
        errors = [(i, "Compacted topic cannot accept message without key in topic partition "
                   f"{rules.topic_partition}") for i in keyless]
    timestamp_error = False
    if not rules.log_append_time and rules.checks_timestamps:
        bad = _bad_timestamps(header, stamps, rules, now, set(keyless) if errors else ())
        if bad:
            timestamp_error = True
            errors = sorted((errors or []) + bad)
    elif rules.log_append_time and header.timestamp_type == LOG_APPEND_TIME:
        skip = set(keyless) if errors else set()
        bad = [(i, f"Invalid timestamp type in message at index {i}. Producer should not set "
                   "timestamp type to LogAppendTime.")
               for i in range(header.records_count) if i not in skip]
        if bad:
            timestamp_error = True
            errors = sorted((errors or []) + bad)
    if errors:
        raise RecordValidationError(errors, timestamp_error)


def _bad_timestamps(header: BatchHeader, stamps: list[int] | None, rules: RecordRules, now: int,
                    skip: Any) -> list[tuple[int, str]]:
    """Records whose CreateTime timestamp is outside [now - before, now + after]."""
    before, after = rules.before_max_ms, rules.after_max_ms
    low, high = now - before, now + after

    def out(ts: int) -> bool:
        return ts != NO_TIMESTAMP and (now - ts > before or ts - now > after)

    if header.timestamp_type == LOG_APPEND_TIME:
        # Such a batch's records read as its maxTimestamp (Kafka's record.timestamp()).
        values = [header.max_timestamp] * header.records_count
    else:
        if stamps is None:
            return []
        base = header.base_timestamp
        values = [base + d for d in stamps]
    return [(i, f"Timestamp {ts} of message with offset {i} is out of range. The timestamp "
                f"should be within [{low}, {high}]")
            for i, ts in enumerate(values) if i not in skip and out(ts)]


def _walk(body: Any, count: int, want_stamps: bool, *, want_keyless: bool = True
          ) -> tuple[list[int], list[int] | None]:
    """Parse ``count`` records filling ``body`` exactly; return the indexes of keyless
    records (``want_keyless``, else an empty list) and (``want_stamps``) the timestamp
    deltas.

    Varints of one and two bytes (every length below 8 KiB, every offset delta below
    8192) are decoded inline; longer ones go through ``_varint``. A zig-zag value is odd
    exactly when negative, so "raw & 1" tells a null (-1 = raw 1) or invalid length.

    protocol/_record_walk.c does the same in C (``NATIVE``): a change here, to a check or
    to a message, is a change there (tests/unit/protocol/test_record_walk_native.py).
    """
    n = len(body)
    if count * (MIN_RECORD_BODY + 1) > n:
        raise InvalidRecordError(f"{count} records cannot fit in {n} bytes")
    keyless: list[int] = []
    stamps: list[int] | None = [] if want_stamps else None
    varint = _varint
    at = 0
    index = 0
    try:
        for index in range(count):
            # record length
            b = body[at]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                at += 1
            else:
                c = body[at + 1]
                if c < 0x80:
                    raw = (b & 0x7F) | (c << 7)
                    length = (raw >> 1) ^ -(raw & 1)
                    at += 2
                else:
                    length, at = varint(body, at)
            end = at + length
            if length < MIN_RECORD_BODY or end > n:
                raise InvalidRecordError(
                    f"Invalid record size: record {index} declares {length} bytes, "
                    f"{n - at} remain in the batch")
            # attributes (unused), then the timestamp delta
            b = body[at + 1]
            if b < 0x80:
                at += 2
                if stamps is not None:
                    stamps.append((b >> 1) ^ -(b & 1))
            else:
                delta, at = varint(body, at + 1)
                if stamps is not None:
                    stamps.append(delta)
            # offset delta: must be the record's index
            b = body[at]
            if b < 0x80 and b == index << 1:
                at += 1
            elif b >= 0x80 and body[at + 1] < 0x80 \
                    and (b & 0x7F) | (body[at + 1] << 7) == index << 1:
                at += 2
            else:
                delta, at = varint(body, at)
                if delta != index:
                    raise InvalidRecordError(
                        f"record {index} has offset delta {delta}: offset deltas inside a "
                        f"batch must be 0, 1, 2, ...")
            # key
            b = body[at]
            if b < 0x80:
                at += 1
                if b & 1:
                    if b != 1:
                        raise InvalidRecordError(f"record {index}: invalid key length")
                    if want_keyless:
                        keyless.append(index)
                else:
                    at += b >> 1
            else:
                size, at = varint(body, at)
                if size < 0:
                    raise InvalidRecordError(f"record {index}: invalid key length {size}")
                at += size
            # value
            b = body[at]
            if b < 0x80:
                at += 1
                if b & 1:
                    if b != 1:
                        raise InvalidRecordError(f"record {index}: invalid value length")
                else:
                    at += b >> 1
            else:
                c = body[at + 1]
                if c < 0x80:
                    raw = (b & 0x7F) | (c << 7)
                    if raw & 1:
                        raise InvalidRecordError(f"record {index}: invalid value length")
                    at += 2 + (raw >> 1)
                else:
                    size, at = varint(body, at)
                    if size < -1:
                        raise InvalidRecordError(f"record {index}: invalid value length {size}")
                    if size > 0:
                        at += size
            # headers
            if body[at] == 0:
                at += 1
            else:
                headers, at = varint(body, at)
                at = _skip_headers(body, at, end, headers, index)
            if at != end:
                raise InvalidRecordError(
                    f"Invalid record size: record {index} declares {length} bytes but its "
                    f"fields take {length + at - end}")
    except IndexError:
        raise InvalidRecordError(
            f"Incorrect declared batch size, premature EOF reached in record {index}") from None
    if at != n:
        raise InvalidRecordError(
            f"Incorrect declared batch size, records still remaining in file: {n - at} bytes "
            f"after {count} records")
    return keyless, stamps


def _skip_headers(body: Any, at: int, end: int, count: int, index: int) -> int:
    if count < 0:
        raise InvalidRecordError(f"Found invalid number of record headers {count} in record {index}")
    if count * 2 > end - at:  # each header takes at least its two length varints
        raise InvalidRecordError(
            f"record {index}: {count} headers cannot fit in the {end - at} bytes left")
    for _ in range(count):
        size, at = _varint(body, at)
        if size < 0:
            raise InvalidRecordError(f"Invalid negative header key size {size} in record {index}")
        at += size
        size, at = _varint(body, at)
        if size < -1:
            raise InvalidRecordError(f"Invalid header value size {size} in record {index}")
        if size > 0:
            at += size
        if at > end:
            raise InvalidRecordError(f"record {index}: header runs past the end of its record")
    return at


def _varint(body: Any, at: int) -> tuple[int, int]:
    """A zig-zag varint of at most 10 bytes at ``at`` -> (value, next position)."""
    raw = 0
    shift = 0
    while True:
        b = body[at]
        at += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), at
        shift += 7
        if shift > 63:
            raise InvalidRecordError("varint longer than 10 bytes")


# The walk validate_batch uses: the C one (protocol/_record_walk.c) when NATIVE.
_walk_records = _record_walk.walk if _record_walk is not None and NATIVE else _walk
