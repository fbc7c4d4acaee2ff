"""Record-level work of log compaction: the offset map and the batch filter.

Sans-I/O over batch bytes (Kafka ``LogCleaner.buildOffsetMapForSegment`` and
``MemoryRecords.filterTo`` with the cleaner's ``RecordFilter``); the cleaner
(``storage/cleaner.py``) feeds it segment bytes and writes what comes out.

Rules, per record of a data batch (offset = baseOffset + offsetDelta)::

    offset > map.latest_offset         keep (past the mapped dirty section)
    key is null                        drop (not valid in a compacted topic)
    offset < map[key]                  drop (a later record has the key)
    value is not null                  keep
    tombstone, no delete horizon yet   keep; the batch gets one (now + delete.retention.ms)
    tombstone, now < delete horizon    keep
    tombstone, horizon passed          drop

For now, as the brief allows, transactions are handled conservatively:
control batches (markers) are always kept whole, and records of
transactional batches never enter the offset map (without a transaction
index the cleaner cannot tell committed from aborted data), so they only
ever go when a later non-transactional record has their key, and their
tombstones are never dropped.

A rewritten batch keeps its baseOffset, lastOffsetDelta (so the producer's
last sequence survives), partitionLeaderEpoch, producer id/epoch/base
sequence, codec and timestamp type (Kafka ``buildRetainedRecordsInto``).
Kept records are copied byte for byte (their offset deltas stay valid, as
the base offset does); only when a delete horizon is set are their
timestamp deltas re-encoded against it (the horizon then sits in the
baseTimestamp field, attribute bit 6, KIP-534). A batch left with no records
is dropped, unless it is its producer's last batch, which stays as an empty
batch (header only) to keep the producer's sequence and epoch (Kafka's
RETAIN_EMPTY).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol import compression
from protocol import records as R
from protocol.records import HEADER, HEADER_SIZE, LOG_OVERHEAD, BatchHeader

_LOG_APPEND = R.TIMESTAMP_TYPE_BIT


class OffsetMap:
    """Key -> offset of its latest record in the mapped dirty section (Kafka ``OffsetMap``).

    Keys are kept whole (no hash collisions can drop a record); ``max_entries``
    bounds memory the way log.cleaner.dedupe.buffer.size bounds Kafka's map.
    """

    __slots__ = ("entries", "latest_offset", "max_entries")

    def __init__(self, max_entries: int) -> None:
        self.entries: dict[bytes, int] = {}
        self.latest_offset = -1
        self.max_entries = max(1, max_entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, key: bytes) -> int:
        return self.entries.get(key, -1)

    def update_latest_offset(self, offset: int) -> None:
        if offset > self.latest_offset:
            self.latest_offset = offset


def _uvarint(b: bytes, i: int) -> tuple[int, int]:
    x = b[i]
    if x < 0x80:
        return x, i + 1
    result, shift = x & 0x7F, 7
    while True:
        i += 1
        x = b[i]
        result |= (x & 0x7F) << shift
        if x < 0x80:
            return result, i + 1
        shift += 7


def _zz(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)


def _write_zz(out: bytearray, value: int) -> None:
    raw = (value << 1) ^ (value >> 63)
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


def body_of(buf: R.Buffer, pos: int, header: BatchHeader) -> bytes:
    """The batch's records section as bytes, decompressed when needed."""
    if header.compression == 0:
        return bytes(buf[pos + HEADER_SIZE:pos + header.size])
    return bytes(R.batch_body(buf, pos, header))


def map_batch(buf: R.Buffer, pos: int, header: BatchHeader, offset_map: OffsetMap,
              start_offset: int) -> bool:
    """Put the keyed records of a data batch at offsets >= ``start_offset`` in the map.

    Returns True when the map filled up (the record that did not fit, and all
    after it, stay unmapped: ``latest_offset`` marks how far the map goes).
    """
    if header.is_control or header.is_transactional or header.last_offset < start_offset:
        offset_map.update_latest_offset(header.last_offset)
        return False
    body = body_of(buf, pos, header)
    entries, cap, base = offset_map.entries, offset_map.max_entries, header.base_offset
    at = 0
    for _ in range(header.records_count):
        raw, at = _uvarint(body, at)
        end = at + _zz(raw)                 # record length
        i = at + 1                        # attributes
        _, i = _uvarint(body, i)          # timestampDelta
        raw, i = _uvarint(body, i)
        offset = base + _zz(raw)
        raw, i = _uvarint(body, i)
        klen = _zz(raw)
        if klen >= 0 and offset >= start_offset:
            key = body[i:i + klen]
            if len(entries) >= cap and key not in entries:
                return True
            entries[key] = offset
            offset_map.latest_offset = max(offset_map.latest_offset, offset)
        at = end
    offset_map.update_latest_offset(header.last_offset)
    return False


@dataclass(slots=True)
class FilterStats:
    records_read: int = 0
    records_kept: int = 0
    tombstones_dropped: int = 0


@dataclass(frozen=True, slots=True)
class CleanContext:
    offset_map: OffsetMap
    now_ms: int
    delete_retention_ms: int
    last_batch_of_producer: dict[int, int]   # producer id -> last offset of its last batch


def filter_batch(buf: R.Buffer, pos: int, header: BatchHeader, ctx: CleanContext,
                 stats: FilterStats) -> bytes | bytearray | None:
    """The batch as it should be written to the cleaned segment, or None to drop it."""
    if header.is_control:
        stats.records_read += header.records_count
        stats.records_kept += header.records_count
        return bytes(buf[pos:pos + header.size])
    body = body_of(buf, pos, header)
    kept, has_tombstone, max_ts = _select(body, header, ctx, stats)
    retain_empty = (header.has_producer_id
                    and ctx.last_batch_of_producer.get(header.producer_id) == header.last_offset)
    if not kept:
        return _empty_batch(header) if retain_empty else None
    has_horizon = bool(header.attributes & R.DELETE_HORIZON_BIT)
    new_horizon = has_tombstone and not has_horizon
    if len(kept) == header.records_count and not new_horizon:
        return bytes(buf[pos:pos + header.size])
    if new_horizon:
        horizon = ctx.now_ms + ctx.delete_retention_ms
        out = _retimed(body, kept, header.base_timestamp, horizon)
        base_ts, attributes = horizon, header.attributes | R.DELETE_HORIZON_BIT
    else:
        out = bytearray()
        for start, end, _ in kept:
            out += body[start:end]
        base_ts, attributes = header.base_timestamp, header.attributes
    if header.attributes & _LOG_APPEND:
        max_ts = header.max_timestamp
    return _encode(header, attributes, base_ts, max_ts, len(kept), out)


def _select(body: bytes, header: BatchHeader, ctx: CleanContext,
            stats: FilterStats) -> tuple[list[tuple[int, int, int]], bool, int]:
    """Kept records as (start, end, timestamp delta) spans of ``body``, whether a
    kept one is a tombstone, and the max CreateTime timestamp of the kept ones."""
    entries, latest = ctx.offset_map.entries, ctx.offset_map.latest_offset
    base, base_ts = header.base_offset, header.base_timestamp
    horizon = header.base_timestamp if header.attributes & R.DELETE_HORIZON_BIT else None
    tombstones_may_go = (not header.is_transactional and horizon is not None
                         and ctx.now_ms >= horizon)
    kept: list[tuple[int, int, int]] = []
    has_tombstone = False
    max_ts = -1
    at = 0
    for _ in range(header.records_count):
        start = at
        raw, at = _uvarint(body, at)
        end = at + _zz(raw)                 # record length
        i = at + 1
        raw, i = _uvarint(body, i)
        ts_delta = _zz(raw)
        raw, i = _uvarint(body, i)
        offset = base + _zz(raw)
        raw, i = _uvarint(body, i)
        klen = _zz(raw)
        key = body[i:i + klen] if klen >= 0 else None
        i += max(klen, 0)
        raw, i = _uvarint(body, i)
        tombstone = _zz(raw) < 0
        if offset > latest:
            keep = True
        elif key is None or offset < entries.get(key, -1):
            keep = False
        else:
            keep = not (tombstone and tombstones_may_go)
            if not keep:
                stats.tombstones_dropped += 1
        if keep:
            kept.append((start, end, ts_delta))
            has_tombstone |= tombstone
            max_ts = max(max_ts, base_ts + ts_delta)
        at = end
    stats.records_read += header.records_count
    stats.records_kept += len(kept)
    return kept, has_tombstone, max_ts


def _retimed(body: bytes, kept: list[tuple[int, int, int]], base_ts: int,
             horizon: int) -> bytearray:
    """Kept records with timestamp deltas re-encoded against the delete horizon."""
    out = bytearray()
    for start, end, ts_delta in kept:
        _, at = _uvarint(body, start)
        i = at + 1
        _, i = _uvarint(body, i)          # the old timestampDelta
        rec = bytearray(body[at:at + 1])  # attributes
        _write_zz(rec, base_ts + ts_delta - horizon)
        rec += body[i:end]
        _write_zz(out, len(rec))
        out += rec
    return out


def _encode(header: BatchHeader, attributes: int, base_ts: int, max_ts: int, count: int,
            records_bytes: bytes | bytearray) -> bytearray:
    codec = header.compression
    payload = compression.compress(codec, bytes(records_bytes)) if codec else records_bytes
    out = bytearray(HEADER_SIZE)
    out += payload
    HEADER.pack_into(out, 0, header.base_offset, len(out) - LOG_OVERHEAD,
                     header.partition_leader_epoch, R.MAGIC, 0, attributes,
                     header.last_offset_delta, base_ts, max_ts, header.producer_id,
                     header.producer_epoch, header.base_sequence, count)
    out[R.CRC_AT:R.CRC_AT + 4] = R.compute_crc(out, 0, len(out)).to_bytes(4, "big")
    return out


def _empty_batch(header: BatchHeader) -> bytearray:
    """Header only, no records, same offsets and producer fields (Kafka ``writeEmptyHeader``)."""
    attributes = header.attributes & (R.TIMESTAMP_TYPE_BIT | R.TRANSACTIONAL_BIT | R.CONTROL_BIT)
    return _encode(header._replace(attributes=attributes), attributes, header.max_timestamp,
                   header.max_timestamp, 0, b"")
