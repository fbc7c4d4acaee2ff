"""Kafka's old message formats, magic 0 (Kafka 0.8) and magic 1 (0.10, KIP-32), sans-I/O.

Produce v0-2 carry these message sets and Fetch v0-3 must answer with them. The broker keeps
only record batches (magic 2), so a legacy set is up-converted on produce and v2 records are
down-converted on fetch.

A message set is a bare concatenation of entries (no header, no count):

    offset       int64   absolute offset; see "compressed wrappers" for inner messages
    size         int32   bytes that follow this field (crc .. end of value)
    crc          uint32  CRC-32 (zlib / IEEE, not CRC32C) over magic .. end of value
    magic        int8    0 or 1
    attributes   int8    bits 0-2: codec (0 none, 1 gzip, 2 snappy, 3 lz4; zstd is v2 only)
                         bit 3 (magic 1 only): timestamp type, 0 CreateTime, 1 LogAppendTime
    timestamp    int64   magic 1 only; milliseconds, -1 for none
    key_len      int32   -1 = null key
    key          key_len bytes
    value_len    int32   -1 = null value
    value        value_len bytes

So a message (from crc on) is at least 14 bytes (magic 0) or 22 bytes (magic 1).

Compressed wrappers: a message whose codec bits are non-zero carries, as its value, a whole
message set compressed with that codec (Kafka's lz4 magic-0 quirk included, see compression.py),
and a null key. Inner messages are never themselves compressed and have the wrapper's magic.

* magic 0: inner offsets are absolute; the wrapper's offset is the last inner offset.
* magic 1 (KIP-31): inner offsets are relative, 0 .. n-1 (offset - first offset when the set has
  gaps); the wrapper's offset is the absolute offset of the last inner message, so
  absolute = wrapper offset - last inner offset + inner offset. A wrapper offset of 0 means
  "not assigned yet" (producers, some librdkafka versions): inner offsets are then used as is.
  The wrapper's timestamp is the maximum inner timestamp (CreateTime) or the log append time;
  with LogAppendTime every inner message reads as the wrapper's timestamp.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from protocol.compression import Codec, CorruptCompressedData, codec_of, compress, decompress

NO_TIMESTAMP = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1

LOG_OVERHEAD = 12  # offset int64 + size int32
CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08

_ENTRY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_TIMESTAMP = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_MIN_SIZE = {0: 14, 1: 22}  # crc + magic + attributes [+ timestamp] + key_len + value_len
_KEY_POS = {0: LOG_OVERHEAD + 6, 1: LOG_OVERHEAD + 14}  # from the entry's start


class CorruptLegacyMessage(ValueError):
    """Bytes that are not a well-formed message set (Kafka: CORRUPT_MESSAGE)."""


class InvalidLegacyMessage(ValueError):
    """Well-formed bytes that break the format's rules (Kafka: INVALID_RECORD)."""


class UnsupportedLegacyCodec(ValueError):
    """A codec the old formats cannot carry: zstd (Kafka: UNSUPPORTED_COMPRESSION_TYPE)."""


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    """One message. From ``iter_messages`` exactly as on the wire (a wrapper stays compressed);
    from ``iter_records`` with its absolute offset and effective timestamp."""

    offset: int
    magic: int
    attributes: int
    timestamp: int  # NO_TIMESTAMP for magic 0
    key: bytes | None
    value: bytes | None
    crc: int
    timestamp_type: int | None  # None for magic 0 (no timestamps), else CREATE_TIME/LOG_APPEND_TIME

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def size_in_bytes(self) -> int:
        """Bytes this message takes in a message set, offset and size fields included."""
        return _KEY_POS[self.magic] + 8 + len(self.key or b"") + len(self.value or b"")


@dataclass(frozen=True, slots=True)
class Upconverted:
    """A legacy message set's records, ready for one magic-2 batch."""

    # (offset, timestamp, key, value, headers): headers are always [] (the old formats have none)
    records: list[tuple[int, int, bytes | None, bytes | None, list[Any]]]
    codec: Codec  # the producer's codec: that of the last compressed wrapper, as Kafka takes it
    magic: int  # highest magic seen (0 or 1); -1 for an empty set
    max_timestamp: int = NO_TIMESTAMP
    timestamp_type: int = CREATE_TIME  # LOG_APPEND_TIME if any magic-1 message said so
    shallow_count: int = 0  # entries at the top level (wrappers count once)


# --------------------------------------------------------------------------- reading

def iter_messages(data: bytes | bytearray | memoryview, *,
                  allow_partial: bool = False) -> Iterator[LegacyMessage]:
    """The top-level messages of a message set, CRC-checked; wrappers are not opened.

    A fetch response may end with a truncated message: with ``allow_partial`` the iteration stops
    there, otherwise it raises CorruptLegacyMessage.
    """
    view = memoryview(data).cast("B")
    pos, end = 0, len(view)
    while pos < end:
        if end - pos < LOG_OVERHEAD + 6:
            if allow_partial:
                return
            raise CorruptLegacyMessage(f"truncated message header at byte {pos}")
        offset, size, crc, magic, attributes = _ENTRY.unpack_from(view, pos)
        if magic not in _MIN_SIZE:
            raise CorruptLegacyMessage(f"message at byte {pos} has magic {magic}, not 0 or 1")
        if size < _MIN_SIZE[magic]:
            raise CorruptLegacyMessage(
                f"message at byte {pos} has size {size}, below the magic-{magic} minimum "
                f"{_MIN_SIZE[magic]}")
        stop = pos + LOG_OVERHEAD + size
        if stop > end:
            if allow_partial:
                return
            raise CorruptLegacyMessage(
                f"message at byte {pos} needs {size} bytes, only {end - pos - LOG_OVERHEAD} left")
        actual = zlib.crc32(view[pos + LOG_OVERHEAD + 4:stop])
        if actual != crc:
            raise CorruptLegacyMessage(
                f"message at offset {offset} (byte {pos}) fails its CRC: stored {crc:#010x}, "
                f"computed {actual:#010x}")
        yield _parse_body(view, pos, stop, offset, magic, attributes, crc)
        pos = stop


def _parse_body(view: memoryview, pos: int, stop: int, offset: int, magic: int,
                attributes: int, crc: int) -> LegacyMessage:
    timestamp, ts_type = NO_TIMESTAMP, None
    if magic == 1:
        (timestamp,) = _TIMESTAMP.unpack_from(view, pos + LOG_OVERHEAD + 6)
        ts_type = LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME
    key, at = _read_bytes(view, pos + _KEY_POS[magic], stop, offset)
    value, at = _read_bytes(view, at, stop, offset)
    if at != stop:
        raise CorruptLegacyMessage(
            f"message at offset {offset} has {stop - at} bytes after its value")
    return LegacyMessage(offset, magic, attributes, timestamp, key, value, crc, ts_type)


def _read_bytes(view: memoryview, at: int, stop: int, offset: int) -> tuple[bytes | None, int]:
    """An int32-length-prefixed byte string (-1 = null) lying wholly before ``stop``."""
    if stop - at < 4:
        raise CorruptLegacyMessage(f"message at offset {offset}: length field overruns message")
    (n,) = _INT32.unpack_from(view, at)
    at += 4
    if n == -1:
        return None, at
    if n < 0 or n > stop - at:
        raise CorruptLegacyMessage(f"message at offset {offset}: field of {n} bytes overruns it")
    return bytes(view[at:at + n]), at + n


def iter_records(data: bytes | bytearray | memoryview, *, allow_partial: bool = False,
                 ensure_matching_magic: bool = True) -> Iterator[LegacyMessage]:
    """Every record of a message set, compressed wrappers opened, with absolute offsets.

    Inner messages get the wrapper's timestamp type, and the wrapper's timestamp under
    LogAppendTime (as Kafka's deep iterator does).
    """
    for message in iter_messages(data, allow_partial=allow_partial):
        if message.codec == Codec.NONE:
            yield message
        else:
            yield from _open_wrapper(message, ensure_matching_magic)


def _open_wrapper(wrapper: LegacyMessage, ensure_matching_magic: bool,
                  max_inflated: int | None = None) -> list[LegacyMessage]:
    codec = wrapper.codec
    if codec >= Codec.ZSTD:
        raise InvalidLegacyMessage(
            f"wrapper at offset {wrapper.offset} uses codec {codec}, not allowed below magic 2")
    if wrapper.value is None:
        raise InvalidLegacyMessage(f"compressed wrapper at offset {wrapper.offset} has a null value")
    try:
        inner_bytes = decompress(codec, wrapper.value, magic=wrapper.magic, max_size=max_inflated)
    except CorruptCompressedData as exc:
        raise CorruptLegacyMessage(f"wrapper at offset {wrapper.offset}: {exc}") from exc
    inner = list(iter_messages(inner_bytes))
    if not inner:
        raise InvalidLegacyMessage(f"compressed wrapper at offset {wrapper.offset} is empty")
    for m in inner:
        if m.codec != Codec.NONE:
            raise InvalidLegacyMessage(
                f"wrapper at offset {wrapper.offset} holds a compressed message (nested)")
        if ensure_matching_magic and m.magic != wrapper.magic:
            raise InvalidLegacyMessage(
                f"inner message magic {m.magic} does not match wrapper magic {wrapper.magic}")
    base = 0  # the amount added to each inner offset
    if wrapper.magic == 1 and wrapper.offset != 0:
        last = inner[-1].offset
        if wrapper.offset < last:
            raise InvalidLegacyMessage(
                f"wrapper offset {wrapper.offset} is below its last inner offset {last}")
        base = wrapper.offset - last
    return [_as_inner(m, wrapper, base) for m in inner]


def _as_inner(m: LegacyMessage, wrapper: LegacyMessage, base: int) -> LegacyMessage:
    timestamp, ts_type = m.timestamp, m.timestamp_type
    if m.magic == 1:
        ts_type = wrapper.timestamp_type
        if ts_type == LOG_APPEND_TIME:
            timestamp = wrapper.timestamp
    return LegacyMessage(m.offset + base, m.magic, m.attributes, timestamp, m.key, m.value,
                         m.crc, ts_type)


# --------------------------------------------------------------------------- up-conversion

def upconvert(data: bytes | bytearray | memoryview, *,
              base_offset: int | None = None, max_inflated: int | None = None) -> Upconverted:
    """A legacy message set (Produce v0-2) as plain values for one magic-2 batch.

    ``max_inflated`` bounds what each compressed wrapper may inflate to (decompression
    bombs, issue 17): beyond it, CorruptLegacyMessage.

    With ``base_offset`` the records get consecutive offsets from it (what the broker assigns,
    as Kafka's LogValidator does); without it they keep the offsets read from the set.
    Magic-0 records have no timestamp (NO_TIMESTAMP).
    """
    records: list[tuple[int, int, bytes | None, bytes | None, list[Any]]] = []
    codec, magic, max_ts, ts_type, shallow = Codec.NONE, -1, NO_TIMESTAMP, CREATE_TIME, 0
    for message in iter_messages(data):
        shallow += 1
        magic = max(magic, message.magic)
        if message.codec != Codec.NONE:
            codec = codec_of(message.codec)
            inner: Iterable[LegacyMessage] = _open_wrapper(message, True, max_inflated)
        else:
            inner = (message,)
        for m in inner:
            if m.timestamp_type == LOG_APPEND_TIME:
                ts_type = LOG_APPEND_TIME
            offset = m.offset if base_offset is None else base_offset + len(records)
            records.append((offset, m.timestamp, m.key, m.value, []))
            max_ts = max(max_ts, m.timestamp)
    return Upconverted(records, codec, magic, max_ts, ts_type, shallow)


# --------------------------------------------------------------------------- writing

def encode_message(offset: int, magic: int, attributes: int, timestamp: int,
                   key: bytes | bytearray | memoryview | None,
                   value: bytes | bytearray | memoryview | None) -> bytes:
    """One message-set entry (offset and size included), CRC computed."""
    if magic not in _MIN_SIZE:
        raise ValueError(f"legacy message magic must be 0 or 1, not {magic}")
    parts: list[bytes | bytearray | memoryview] = [bytes((magic, attributes & 0xFF))]
    if magic == 1:
        parts.append(_TIMESTAMP.pack(timestamp))
    for field_bytes in (key, value):
        if field_bytes is None:
            parts.append(_INT32.pack(-1))
        else:
            parts.append(_INT32.pack(len(field_bytes)))
            parts.append(field_bytes)
    body = b"".join(parts)
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + body


def downconvert(records: Iterable[Sequence[Any]], magic: int, *, codec: int = Codec.NONE,
                timestamp_type: int = CREATE_TIME, log_append_time: int | None = None,
                first_offset: int | None = None) -> bytes:
    """Magic-2 records as a magic 0 or 1 message set (Fetch v0-3), as Kafka's RecordsUtil does.

    ``records``: ``(offset, timestamp, key, value[, headers ...])`` of one v2 batch, offsets
    increasing; headers are dropped (the old formats have none). Pass the batch's codec and
    timestamp type; a compressed batch becomes one wrapper message. For LogAppendTime,
    ``log_append_time`` is the batch's max timestamp (default: the largest record timestamp).
    ``first_offset`` drops uncompressed records below the fetch offset (old consumers do not
    skip them; inside a wrapper they do, so compressed sets keep all records, as in Kafka).
    The caller skips control batches. Returns b"" when no record remains.
    A timestamp a magic-1 message cannot hold (negative but not -1: a magic-2 batch may
    carry one) is written as -1, no timestamp, so old consumers still get the record
    (Kafka's down-conversion fails the whole fetch instead).
    """
    if magic not in _MIN_SIZE:
        raise ValueError(f"down-conversion target must be magic 0 or 1, not {magic}")
    c = codec_of(codec)
    if c is Codec.ZSTD:
        raise UnsupportedLegacyCodec("zstd-compressed records cannot be down-converted to "
                                     f"magic {magic} (zstd needs magic 2)")
    rows = [(r[0], r[1] if r[1] >= 0 else NO_TIMESTAMP, r[2], r[3]) for r in records]
    _check_rows(rows)
    if c is Codec.NONE and first_offset is not None:
        rows = [r for r in rows if r[0] >= first_offset]
    if not rows:
        return b""
    ts_bit = 0
    if magic == 1 and timestamp_type == LOG_APPEND_TIME:
        ts_bit = TIMESTAMP_TYPE_MASK
        if log_append_time is None:
            log_append_time = max(r[1] for r in rows)
        rows = [(o, log_append_time, k, v) for o, _, k, v in rows]
    if c is Codec.NONE:
        return b"".join(encode_message(o, magic, ts_bit, t, k, v) for o, t, k, v in rows)
    base = rows[0][0] if magic == 1 else 0  # magic 1: relative inner offsets (KIP-31)
    inner = b"".join(encode_message(o - base, magic, ts_bit, t, k, v) for o, t, k, v in rows)
    wrapper_ts = max(r[1] for r in rows) if magic == 1 else NO_TIMESTAMP
    return encode_message(rows[-1][0], magic, c | ts_bit, wrapper_ts, None,
                          compress(c, inner, magic=magic))


def _check_rows(rows: list[tuple[int, int, Any, Any]]) -> None:
    previous = None
    for offset, _, _, _ in rows:
        if previous is not None and offset <= previous:
            raise ValueError(f"offsets must increase: {offset} follows {previous}")
        previous = offset
