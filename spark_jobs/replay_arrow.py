"""Record batches to Arrow columns without a Python object per record (the bulk replay's decoder).

``arrow_batches(seg, bounds)`` is a segment task's rows as Arrow RecordBatches
(``spark_jobs.segments`` reads the batches; ``arrow_runs`` decodes them a run
at a time); the rest is the decoder.

Input: the decompressed bodies of a run of record batches (magic 2), joined
into one buffer. A body is ``records_count`` records back to back, each::

    length          varint   bytes after this field
    attributes      int8     unused
    timestampDelta  varlong  from the batch's baseTimestamp
    offsetDelta     varint   from the batch's baseOffset
    keyLength       varint   -1: null key
    key             bytes
    valueLength     varint   -1: null value
    value           bytes
    headerCount     varint
    headers         headerCount x (keyLength varint >= 0, key, valueLength varint, value)

(all varints zig-zag). The walk is vectorised with numpy:

1. Record starts: one step per record *index* k, over every batch at once
   (``pos[b] += size of record k of batch b``): max(records_count) numpy steps,
   not one Python step per record.
2. Fields: one vectorised varint read per field over every record at once;
   headers one step per header index (records with fewer headers masked out).
3. Arrow: keys, values and header keys/values are spans of the one buffer. A
   binary array whose offsets interleave the spans with the gaps between them
   (``[s0, e0, s1, e1, ...]`` - monotonic, as spans come in buffer order) is
   built over the buffer without a copy, and ``take`` of its even elements
   gathers the spans into a contiguous array in C++.

Malformed input (a varint past its record, lengths below -1, a record not
ending where its length says, bytes left after a batch's records) raises
protocol.records.CorruptRecordError, like the per-record decoder.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from protocol import records
from spark_jobs import replay_inflate
from spark_jobs.segments import Bounds, Segment, may_hold_times, segment_batches

PAD = 16          # zero bytes after the joined bodies: varint reads never index past the end
MAX_VARINT = 10   # bytes of a 64-bit varint
GZIP = 1          # codec id in the batch attributes
GZIP_MIN = 18     # bytes of the smallest gzip member (10 header + 2 empty deflate + 8 trailer)


class Columns:
    """The decoded columns of one run of batches (numpy for numbers, Arrow for bytes)."""

    def __init__(self, key: pa.Array, value: pa.Array, offset: np.ndarray, timestamp: np.ndarray,
                 timestamp_type: np.ndarray, headers: pa.Array) -> None:
        self.key, self.value, self.headers = key, value, headers
        self.offset, self.timestamp, self.timestamp_type = offset, timestamp, timestamp_type

    def __len__(self) -> int:
        return len(self.offset)


def _corrupt(message: str) -> records.CorruptRecordError:
    return records.CorruptRecordError(message)


def read_varints(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints at positions ``at`` of ``buf`` -> (values int64, bytes used int64).

    One pass per byte position: the common one- and two-byte cases cost one or
    two passes. ``buf`` must have MAX_VARINT readable bytes past any position
    (PAD, and positions are clipped) - garbage read there is caught by the
    caller's end-of-record check.
    """
    last = len(buf) - 1
    b = buf[np.clip(at, 0, last)]
    raw = (b & 0x7F).astype(np.uint64)
    used = np.ones(len(at), np.int64)
    more = b >= 0x80
    shift = 7
    while more.any():
        if shift >= 7 * MAX_VARINT:
            raise _corrupt("varint longer than 10 bytes")
        idx = np.nonzero(more)[0]
        b = buf[np.clip(at[idx] + used[idx], 0, last)]
        raw[idx] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        used[idx] += 1
        more[idx] = b >= 0x80
        shift += 7
    value = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
    return value, used


def record_starts(buf: np.ndarray, body_at: np.ndarray, body_end: np.ndarray,
                  counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, batch index) of every record, in buffer order.

    Record k of every batch is located in one step; a batch's records follow one
    another, so its record k starts where record k-1 ends.
    """
    total = int(counts.sum())
    first = np.zeros(len(counts), np.int64)          # index of each batch's first record
    np.cumsum(counts[:-1], out=first[1:])
    starts = np.empty(total, np.int64)
    ends = np.empty(total, np.int64)
    pos = body_at.copy()
    for k in range(int(counts.max(initial=0))):
        live = np.nonzero(counts > k)[0]
        at = pos[live]
        length, used = read_varints(buf, at)
        if (length < records.MIN_RECORD_SIZE - 1).any():
            raise _corrupt("record length is impossible")
        starts[first[live] + k] = at
        pos[live] = at + used + length
        ends[first[live] + k] = pos[live]
    if (pos != body_end).any():
        raise _corrupt("a batch's records do not end where its body does")
    batch_of = np.repeat(np.arange(len(counts)), counts)
    return starts, ends, batch_of


def _field(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A nullable bytes field at ``at`` -> (data start, data length (-1 null), next position)."""
    n, used = read_varints(buf, at)
    if (n < -1).any():
        raise _corrupt("invalid length")
    start = at + used
    return start, n, start + np.maximum(n, 0)


def spans_array(data: pa.Buffer, start: np.ndarray, length: np.ndarray,
                kind: pa.DataType = pa.binary()) -> pa.Array:
    """The spans [start, start + length) of ``data`` (in increasing, non-overlapping order)
    as one contiguous Arrow array; length -1 is null."""
    n = len(start)
    if n == 0:
        return pa.array([], kind)
    size = np.maximum(length, 0)
    offsets = np.empty(2 * n + 1, np.int64)
    offsets[0:2 * n:2] = start
    offsets[1:2 * n:2] = start + size
    offsets[2 * n] = start[-1] + size[-1]
    if offsets[-1] >= 1 << 31:
        raise ValueError("a run of batches must stay below 2 GiB")  # callers cut runs smaller
    # Element 2i is span i; element 2i+1 the gap to span i+1 (offsets[0] may be > 0: fine).
    interleaved = pa.Array.from_buffers(pa.binary(), 2 * n,
                                        [None, pa.py_buffer(offsets.astype(np.int32)), data])
    packed = interleaved.take(pa.array(np.arange(0, 2 * n, 2)))
    valid = length >= 0
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    out = pa.Array.from_buffers(pa.binary(), n, [validity, *packed.buffers()[1:]])
    if kind == pa.string():
        try:
            out = out.cast(pa.string())   # checks the UTF-8
        except pa.ArrowInvalid:
            # Malformed UTF-8 (rare): U+FFFD for bad bytes, as Java's String(bytes, UTF_8) does.
            out = pa.array([None if b is None else b.decode("utf-8", "replace")
                            for b in out.to_pylist()], pa.string())
    return out


def _header_spans(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every record's headers from the header counts at ``at`` -> (list offsets, key starts,
    key lengths, value starts, value lengths, end positions)."""
    count, used = read_varints(buf, at)
    if (count < 0).any():
        raise _corrupt("negative header count")
    # a header takes at least 2 bytes (two varints): a count the buffer cannot hold is
    # corruption, not an allocation of that many slots (nor a cumsum that overflows)
    if (count > len(buf) // 2).any():
        raise _corrupt("header count does not fit the batch")
    pos = at + used
    list_offsets = np.zeros(len(at) + 1, np.int64)
    np.cumsum(count, out=list_offsets[1:])
    total = int(list_offsets[-1])
    if total > len(buf) // 2:
        raise _corrupt("header count does not fit the batch")
    k_at, k_len = np.empty(total, np.int64), np.empty(total, np.int64)
    v_at, v_len = np.empty(total, np.int64), np.empty(total, np.int64)
    for h in range(int(count.max(initial=0))):
        live = np.nonzero(count > h)[0]
        flat = list_offsets[live] + h                # header h of record i, flattened in order
        start, n, nxt = _field(buf, pos[live])
        if (n < 0).any():
            raise _corrupt("null header key")
        k_at[flat], k_len[flat] = start, n
        start, n, nxt = _field(buf, nxt)
        v_at[flat], v_len[flat] = start, n
        pos[live] = nxt
    return list_offsets, k_at, k_len, v_at, v_len, pos


def _headers_array(data: pa.Buffer, spans: tuple[np.ndarray, ...],
                   arrow_type: pa.DataType) -> pa.Array:
    list_offsets, k_at, k_len, v_at, v_len = spans
    structs = pa.StructArray.from_arrays(
        [spans_array(data, k_at, k_len, pa.string()), spans_array(data, v_at, v_len)],
        fields=list(arrow_type.value_type))
    return pa.ListArray.from_arrays(pa.array(list_offsets.astype(np.int32)), structs,
                                    type=arrow_type)


def decode_bodies(bodies: Sequence[Any], headers: Sequence[records.BatchHeader],
                  headers_type: pa.DataType) -> Columns:
    """Every record of the given batches (bodies decompressed, in log order) as columns."""
    sizes = np.fromiter((len(b) for b in bodies), np.int64, len(bodies))
    return decode_run(np.frombuffer(b"".join([*bodies, bytes(PAD)]), np.uint8), sizes, headers,
                      headers_type)


def decode_run(buf: np.ndarray, sizes: np.ndarray, headers: Sequence[records.BatchHeader],
               headers_type: pa.DataType) -> Columns:
    """Every record of a run of batches whose decompressed bodies lie back to back in
    ``buf`` (``sizes[i]`` bytes each, then at least PAD bytes) as columns."""
    body_end = np.cumsum(sizes)
    body_at = body_end - sizes
    data = pa.py_buffer(buf)
    counts = np.fromiter((h.records_count for h in headers), np.int64, len(headers))
    if (counts < 0).any() or (counts * records.MIN_RECORD_SIZE > sizes).any():
        raise _corrupt("records count does not fit the batch")
    starts, ends, batch_of = record_starts(buf, body_at, body_end, counts)
    _length, used = read_varints(buf, starts)
    ts_delta, used2 = read_varints(buf, starts + used + 1)        # + 1: attributes
    at = starts + used + 1 + used2
    off_delta, used = read_varints(buf, at)
    key_at, key_len, at = _field(buf, at + used)
    value_at, value_len, at = _field(buf, at)
    *header_spans, at = _header_spans(buf, at)
    # Every position only moves forward, so a record ending where its length says keeps
    # all its spans inside it: checked before any Arrow array points into the buffer.
    if (at != ends).any():
        raise _corrupt("a record does not end where its length says")
    hdrs = _headers_array(data, tuple(header_spans), headers_type)
    base = np.fromiter((h.base_offset for h in headers), np.int64, len(headers))
    base_ts = np.fromiter((h.base_timestamp for h in headers), np.int64, len(headers))
    max_ts = np.fromiter((h.max_timestamp for h in headers), np.int64, len(headers))
    ts_type = np.fromiter((h.timestamp_type for h in headers), np.int32, len(headers))
    rec_type = ts_type[batch_of]
    # LogAppendTime: every record carries the batch's maxTimestamp (as Kafka's readers do).
    stamps = np.where(rec_type == records.LOG_APPEND_TIME, max_ts[batch_of],
                      base_ts[batch_of] + ts_delta)
    return Columns(spans_array(data, key_at, key_len), spans_array(data, value_at, value_len),
                   base[batch_of] + off_delta, stamps, rec_type, hdrs)


# -- whole segments ----------------------------------------------------------------------------

RUN_BYTES = 16 << 20   # decompressed bytes of batches decoded together (one RecordBatch each)


def record_batch(cols: Columns, topic: str, partition: int, schema: pa.Schema,
                 keep: np.ndarray | None = None) -> pa.RecordBatch:
    """``cols`` in ``schema`` (spark_jobs.rows' schema with headers, as Arrow), rows where
    ``keep`` is true (all when None)."""
    n = len(cols)
    us = cols.timestamp * 1000     # Spark's TimestampType is microseconds since the epoch, UTC
    batch = pa.RecordBatch.from_arrays([
        cols.key, cols.value, pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.offset)]),
        pa.Array.from_buffers(schema.field("timestamp").type, n, [None, pa.py_buffer(us)]),
        pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(cols.timestamp_type)]),
        cols.headers,
    ], schema=schema)
    if keep is not None and not keep.all():
        batch = batch.filter(pa.array(keep))
    return batch


def batch_body(buf: Any, pos: int, header: records.BatchHeader) -> Any:
    """The batch's records section, decompressed. gzip goes straight to zlib with a
    one-member check; anything else, and any gzip stream that is not exactly one
    complete member, takes protocol.records' path (multi-member streams, its errors)."""
    if header.compression == GZIP:
        view = memoryview(buf)[pos + records.HEADER_SIZE:pos + header.size]
        inflate = zlib.decompressobj(31)     # 31: gzip framing, CRC-32 and size checked
        try:
            out = inflate.decompress(view)
            if inflate.eof and not inflate.unused_data:
                return out
        except zlib.error:
            pass
    return records.batch_body(buf, pos, header)


class RunBuffer:
    """The decompressed bodies of a run of batches, back to back in one numpy buffer.

    gzip bodies are inflated in place by libdeflate when it is there
    (spark_jobs.replay_inflate: room for the member's ISIZE is made first);
    others, and gzip the fast path refuses, are decompressed by ``batch_body``
    and copied in. The buffer grows (doubling) when a body does not fit.
    """

    def __init__(self, capacity: int) -> None:
        self.buf = np.empty(capacity + PAD, np.uint8)
        self.used = 0
        self.sizes: list[int] = []
        self.headers: list[records.BatchHeader] = []

    def _make_room(self, n: int) -> None:
        if self.used + n + PAD > len(self.buf):
            grown = np.empty(max(2 * len(self.buf), self.used + n + PAD), np.uint8)
            grown[:self.used] = self.buf[:self.used]
            self.buf = grown

    def add(self, buf: Any, pos: int, header: records.BatchHeader) -> None:
        n = None
        body_len = header.size - records.HEADER_SIZE
        if header.compression == GZIP and body_len >= GZIP_MIN and replay_inflate.available():
            end = pos + header.size
            self._make_room(int.from_bytes(buf[end - 4:end], "little"))   # ISIZE
            src = np.frombuffer(buf, np.uint8)
            n = replay_inflate.gunzip_into(src.ctypes.data + pos + records.HEADER_SIZE, body_len,
                                           self.buf.ctypes.data + self.used,
                                           len(self.buf) - PAD - self.used)
        if n is None:
            body = batch_body(buf, pos, header)
            n = len(body)
            self._make_room(n)
            self.buf[self.used:self.used + n] = np.frombuffer(body, np.uint8)
        self.used += n
        self.sizes.append(n)
        self.headers.append(header)

    def decode(self, headers_type: pa.DataType) -> Columns:
        self.buf[self.used:self.used + PAD] = 0
        return decode_run(self.buf[:self.used + PAD], np.array(self.sizes, np.int64),
                          self.headers, headers_type)


def arrow_runs(batches: Any, lo: int, hi: int, from_ts: int | None, to_ts: int | None,
               topic: str, partition: int, schema: pa.Schema,
               run_bytes: int = RUN_BYTES) -> Any:
    """RecordBatches of the records with lo <= offset < hi (and from_ts <= timestamp < to_ts
    when given) of the (buffer, position, header) triples ``batches`` yields.

    Control batches are skipped; data batches are decompressed (any codec, in C)
    into a RunBuffer and decoded ``run_bytes`` at a time with ``decode_run``.
    """
    run = RunBuffer(run_bytes + (1 << 20))

    def flush() -> pa.RecordBatch:
        cols = run.decode(schema.field("headers").type)
        keep = (cols.offset >= lo) & (cols.offset < hi)
        if from_ts is not None:
            keep &= cols.timestamp >= from_ts
        if to_ts is not None:
            keep &= cols.timestamp < to_ts
        return record_batch(cols, topic, partition, schema, keep)

    for buf, pos, header in batches:
        if header.is_control:
            continue
        if header.magic != records.MAGIC:
            raise records.InvalidRecordError(f"batch magic {header.magic} is not {records.MAGIC}")
        run.add(buf, pos, header)
        if run.used >= run_bytes:
            yield flush()
            run = RunBuffer(run_bytes + (1 << 20))
    if run.sizes:
        yield flush()


def arrow_batches(seg: Segment, bounds: Bounds) -> Any:
    """The segment task's rows as RecordBatches in ``rows.arrow_schema()`` (the source's
    schema with headers), a run of batches at a time; empty batches left out."""
    from spark_jobs.rows import arrow_schema  # pyspark: only where Spark runs

    wanted = (item for item in segment_batches(seg) if may_hold_times(item[2], bounds))
    for batch in arrow_runs(wanted, seg.start, seg.end, bounds.from_ts, bounds.to_ts,
                            seg.topic, seg.partition, arrow_schema()):
        if batch.num_rows:
            yield batch
