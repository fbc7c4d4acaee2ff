"""Record batches, magic 2 (Kafka 0.11+), sans-I/O.

Batch layout (big-endian; offsets are from the start of the batch)::

     0  baseOffset            int64   first offset of the batch (patched by the leader)
     8  batchLength           int32   bytes after this field (= total size - 12)
    12  partitionLeaderEpoch  int32   patched by the leader; NOT covered by the CRC
    16  magic                 int8    2
    17  crc                   uint32  CRC-32C (Castagnoli) of bytes [21, end)
    21  attributes            int16   bits 0-2 codec (0 none, 1 gzip, 2 snappy,
                                      3 lz4, 4 zstd), bit 3 timestamp type
                                      (1 = LogAppendTime), bit 4 transactional,
                                      bit 5 control, bit 6 has delete horizon
    23  lastOffsetDelta       int32
    27  baseTimestamp         int64   (delete horizon when bit 6 is set)
    35  maxTimestamp          int64
    43  producerId            int64   -1 = none
    51  producerEpoch         int16
    53  baseSequence          int32
    57  recordsCount          int32
    61  records...            compressed as one block when the codec is not 0

Record layout (varint = zig-zag; the record length counts what follows it)::

    length varint · attributes int8 (unused) · timestampDelta varlong ·
    offsetDelta varint · keyLength varint (-1 null) · key · valueLength varint
    (-1 null) · value · headerCount varint · per header: keyLength varint ·
    key (UTF-8) · valueLength varint (-1 null) · value

Because baseOffset and partitionLeaderEpoch sit before the CRC'd range, a
leader assigns offsets and stamps its epoch with two 8/4-byte patches and no
re-checksum. ``validate`` reads headers and CRCs only; the produce path then
walks every record with protocol/record_validation (bounded decompression,
Kafka's LogValidator rules). ``iter_records`` is for the broker's own topics,
ListOffsets by timestamp and tests.

Decode limits (issue 17): ``iter_records`` refuses a recordsCount that the
(inflated) records section cannot hold at 7 bytes a record before it loops, and
a header count that the record cannot hold at 2 bytes a header before it reads
one; ``batch_body(..., max_size=)`` bounds the inflated size.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from crc32c import crc32c

from protocol.primitives import DecodeError, read_varint, write_varint

Buffer = bytes | bytearray | memoryview | Any  # Any: mmap.mmap and friends

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: bytes not counted by batchLength
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49
MIN_RECORD_SIZE = 7  # len, attrs, tsDelta, offDelta, keyLen, valLen, hdrCount: 1 byte each
MAGIC = 2

BASE_OFFSET_AT = 0
LENGTH_AT = 8
LEADER_EPOCH_AT = 12
MAGIC_AT = 16
CRC_AT = 17
ATTRIBUTES_AT = 21
MAX_TIMESTAMP_AT = 35

CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_PRODUCER_ID = -1
NO_PARTITION_LEADER_EPOCH = -1

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


class RecordError(ValueError):
    """Base class for bad record batches."""


class CorruptRecordError(RecordError):
    """Bytes do not form a batch (bad CRC, impossible sizes): Kafka CORRUPT_MESSAGE (2)."""


class InvalidRecordError(RecordError):
    """A well-formed batch that breaks a rule (magic, counts, control): INVALID_RECORD (87)."""


class BatchHeader(NamedTuple):
    """The 61-byte batch header, unpacked in place (``read_header``)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch on the wire/disk."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def read_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    """Header of the batch at ``pos``; the caller ensures 61 bytes are there."""
    return tuple.__new__(BatchHeader, HEADER.unpack_from(buf, pos))


def compute_crc(buf: Buffer, pos: int, size: int) -> int:
    """CRC-32C over attributes..end of the batch of ``size`` bytes at ``pos``."""
    with memoryview(buf) as view:
        return crc32c(view[pos + ATTRIBUTES_AT:pos + size])


def crc_ok(buf: Buffer, pos: int, header: BatchHeader) -> bool:
    return compute_crc(buf, pos, header.size) == header.crc


def iter_batches(buf: Buffer, pos: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each complete batch in ``buf[pos:end]``.

    Stops without error at a tail too short for a header or for the batch its
    header announces (a fetch response may end with a partial batch). Does not
    check CRCs or magic; a batchLength below the minimum also ends the walk,
    since nothing after it can be located (a zeroed tail reads as length 0).
    """
    end = len(buf) if end is None else end
    unpack = HEADER.unpack_from
    new = tuple.__new__
    while pos + HEADER_SIZE <= end:
        header = new(BatchHeader, unpack(buf, pos))
        size = header[1] + LOG_OVERHEAD
        if header[1] < MIN_BATCH_LENGTH or pos + size > end:
            return
        yield pos, header
        pos += size


def validate(buf: Buffer, *, from_client: bool = True) -> list[BatchHeader]:
    """Check the batches of a produce request and return their headers.

    Checks, per batch, without decompressing: complete sizes (no partial tail),
    magic 2, CRC-32C, uncompressed record bytes large enough for the count;
    and for client batches (``from_client``, Kafka's AppendOrigin.CLIENT):
    offset range and record count consistent (lastOffsetDelta + 1 ==
    recordsCount >= 1), no control batches, and a sequence number when there
    is a producer id. Raises CorruptRecordError for
    size/CRC damage, InvalidRecordError for rule violations.
    """
    headers: list[BatchHeader] = []
    end = len(buf)
    pos = 0
    if end == 0:
        raise InvalidRecordError("record set has no batches")
    while pos < end:
        if end - pos < HEADER_SIZE:
            raise CorruptRecordError(f"{end - pos} trailing bytes are too few for a batch header")
        header = read_header(buf, pos)
        if header.magic != MAGIC:
            raise InvalidRecordError(f"batch magic {header.magic} is not {MAGIC}")
        if header.batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch length {header.batch_length} is below {MIN_BATCH_LENGTH}")
        if pos + header.size > end:
            raise CorruptRecordError(f"batch of {header.size} bytes overruns the {end - pos} available")
        if not crc_ok(buf, pos, header):
            raise CorruptRecordError(f"batch CRC mismatch at position {pos}")
        _check_counts(header, from_client)
        headers.append(header)
        pos += header.size
    return headers


def _check_counts(header: BatchHeader, from_client: bool) -> None:
    """Kafka's LogValidator.validateBatch rules; all but the size bound apply to clients only."""
    count = header.records_count
    if header.compression == 0 and count * MIN_RECORD_SIZE > header.size - HEADER_SIZE:
        raise CorruptRecordError(f"{count} records cannot fit in {header.size - HEADER_SIZE} bytes")
    if not from_client:
        return
    if header.last_offset_delta < 0:
        raise InvalidRecordError(f"batch has a negative lastOffsetDelta {header.last_offset_delta}")
    if count <= 0:
        raise InvalidRecordError(f"invalid reported record count {count}")
    if header.last_offset_delta + 1 != count:
        raise InvalidRecordError(
            f"inconsistent batch: lastOffsetDelta {header.last_offset_delta} with {count} records")
    if header.is_control:
        raise InvalidRecordError("clients may not write control batches")
    if header.has_producer_id and header.base_sequence < 0:
        raise InvalidRecordError(f"invalid sequence {header.base_sequence} for producer {header.producer_id}")


# -- patching (positions are the batch start within ``buf``) ----------------------------

def patch_base_offset(buf: Buffer, pos: int, base_offset: int) -> None:
    """Write baseOffset; outside the CRC, so the batch stays valid."""
    _I64.pack_into(buf, pos + BASE_OFFSET_AT, base_offset)


def patch_leader_epoch(buf: Buffer, pos: int, epoch: int) -> None:
    """Write partitionLeaderEpoch; outside the CRC, so the batch stays valid."""
    _I32.pack_into(buf, pos + LEADER_EPOCH_AT, epoch)


def set_log_append_time(buf: Buffer, pos: int, timestamp: int) -> None:
    """Mark the batch LogAppendTime with ``timestamp`` as maxTimestamp, then re-CRC.

    Records keep their deltas; readers take a LogAppendTime batch's
    maxTimestamp as every record's timestamp (as Kafka does).
    """
    header = read_header(buf, pos)
    _I16.pack_into(buf, pos + ATTRIBUTES_AT, header.attributes | TIMESTAMP_TYPE_BIT)
    _I64.pack_into(buf, pos + MAX_TIMESTAMP_AT, timestamp)
    _U32.pack_into(buf, pos + CRC_AT, compute_crc(buf, pos, header.size))


# -- record fields (varints from protocol.primitives) ---------------------------------

def _write_nullable(out: bytearray, data: bytes | bytearray | memoryview | None) -> None:
    if data is None:
        out.append(1)  # zig-zag of -1
    else:
        write_varint(out, len(data))
        out += data


# -- record iteration --------------------------------------------------------------

def batch_body(buf: Buffer, pos: int = 0, header: BatchHeader | None = None,
               max_size: int | None = None) -> bytes | memoryview:
    """The records section of a batch, decompressed when its codec says so (to at most
    ``max_size`` bytes: CorruptRecordError beyond)."""
    header = header or read_header(buf, pos)
    view = memoryview(buf)[pos + HEADER_SIZE:pos + header.size]
    if header.compression == 0:
        return view
    try:
        from protocol import compression
    except ImportError as exc:  # pragma: no cover - the module ships with the project
        raise InvalidRecordError(f"codec {header.compression} needs protocol.compression") from exc
    try:
        return compression.decompress(header.compression, view, max_size=max_size)
    except compression.DecompressedTooLarge as exc:
        raise CorruptRecordError(str(exc)) from None


def iter_records(buf: Buffer, pos: int = 0) -> Iterator[Record]:
    """Records of the single batch at ``pos`` (decompressing when needed)."""
    header = read_header(buf, pos)
    if header.magic != MAGIC:
        raise InvalidRecordError(f"batch magic {header.magic} is not {MAGIC}")
    if pos + header.size > len(buf):
        raise CorruptRecordError("batch is truncated")
    body = batch_body(buf, pos, header)
    if header.records_count * MIN_RECORD_SIZE > len(body):
        raise CorruptRecordError(f"{header.records_count} records cannot fit in {len(body)} bytes")
    append_time = header.max_timestamp if header.timestamp_type == LOG_APPEND_TIME else None
    at = 0
    for _ in range(header.records_count):
        try:
            record, at = _decode_record(body, at, header, append_time)
        except (IndexError, DecodeError):
            raise CorruptRecordError("record runs past the end of its batch") from None
        yield record
    if at != len(body):
        raise CorruptRecordError(f"{len(body) - at} bytes left after {header.records_count} records")


def iter_all_records(buf: Buffer, pos: int = 0) -> Iterator[Record]:
    """Records of every complete batch in ``buf`` from ``pos``."""
    for at, _header in iter_batches(buf, pos):
        yield from iter_records(buf, at)


def _decode_record(body: Any, at: int, header: BatchHeader,
                   append_time: int | None) -> tuple[Record, int]:
    length, at = read_varint(body, at)
    end = at + length
    if length < 6 or end > len(body):
        raise CorruptRecordError(f"record length {length} is impossible here")
    at += 1  # record attributes: unused
    ts_delta, at = read_varint(body, at)
    off_delta, at = read_varint(body, at)
    key, at = _read_nullable(body, at, end)
    value, at = _read_nullable(body, at, end)
    count, at = read_varint(body, at)
    if count < 0:
        raise CorruptRecordError(f"negative header count {count}")
    if count * 2 > end - at:  # a header takes at least its two length varints
        raise CorruptRecordError(f"{count} headers cannot fit in the {end - at} bytes left")
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        hkey, at = _read_nullable(body, at, end)
        if hkey is None:
            raise CorruptRecordError("null header key")
        hval, at = _read_nullable(body, at, end)
        headers.append((hkey.decode("utf-8", "surrogateescape"), hval))
    if at != end:
        raise CorruptRecordError(f"record declared {length} bytes but used {length + at - end}")
    timestamp = append_time if append_time is not None else header.base_timestamp + ts_delta
    return Record(header.base_offset + off_delta, timestamp, key, value, headers), at


def _read_nullable(body: Any, at: int, end: int) -> tuple[bytes | None, int]:
    n, at = read_varint(body, at)
    if n < 0:
        if n != -1:
            raise CorruptRecordError(f"invalid length {n}")
        return None, at
    if at + n > end:
        raise CorruptRecordError("field runs past the end of its record")
    return bytes(body[at:at + n]), at + n


# -- building --------------------------------------------------------------------

Header = tuple[str, bytes | None]


class BatchBuilder:
    """Writes one magic-2 batch (used by the broker for its own records).

    Offsets are deltas from 0 unless ``offset`` is given to ``append``; the
    batch's baseOffset is ``base_offset`` (patch it later like any batch).
    """

    def __init__(self, *, codec: int = 0, timestamp_type: int = CREATE_TIME,
                 producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1,
                 base_sequence: int = -1, transactional: bool = False, control: bool = False,
                 base_offset: int = 0,
                 partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH) -> None:
        if transactional and producer_id < 0:
            raise ValueError("a transactional batch needs a producer id")
        self.codec = codec
        self.attributes = ((codec & CODEC_MASK)
                           | (TIMESTAMP_TYPE_BIT if timestamp_type == LOG_APPEND_TIME else 0)
                           | (TRANSACTIONAL_BIT if transactional else 0)
                           | (CONTROL_BIT if control else 0))
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self._body = bytearray()
        self._count = 0
        self._last_delta = -1
        self._base_ts: int | None = None
        self._max_ts = -1

    def __len__(self) -> int:
        return self._count

    def append(self, key: bytes | None, value: bytes | None, timestamp: int,
               headers: Iterable[Header] = (), offset_delta: int | None = None) -> int:
        """Add a record; returns its offset delta (default: the next one)."""
        delta = self._last_delta + 1 if offset_delta is None else offset_delta
        if delta <= self._last_delta:
            raise ValueError(f"offset delta {delta} does not increase")
        if self._base_ts is None:
            self._base_ts = timestamp
        self._max_ts = max(self._max_ts, timestamp)
        rec = bytearray(b"\x00")  # attributes
        write_varint(rec, timestamp - self._base_ts)
        write_varint(rec, delta)
        _write_nullable(rec, key)
        _write_nullable(rec, value)
        headers = list(headers)
        write_varint(rec, len(headers))
        for hkey, hval in headers:
            _write_nullable(rec, hkey.encode("utf-8", "surrogateescape"))
            _write_nullable(rec, hval)
        write_varint(self._body, len(rec))
        self._body += rec
        self._count += 1
        self._last_delta = delta
        return delta

    def build(self) -> bytearray:
        """The finished batch (a fresh bytearray, CRC filled in)."""
        if self._count == 0:
            raise ValueError("a batch needs at least one record")
        body: bytes | bytearray = self._body
        if self.codec:
            from protocol import compression
            body = compression.compress(self.codec, bytes(self._body))
        out = bytearray(HEADER_SIZE)
        out += body
        base_ts = self._base_ts if self._base_ts is not None else -1
        HEADER.pack_into(out, 0, self.base_offset, len(out) - LOG_OVERHEAD,
                         self.partition_leader_epoch, MAGIC, 0, self.attributes,
                         self._last_delta, base_ts, self._max_ts, self.producer_id,
                         self.producer_epoch, self.base_sequence, self._count)
        _U32.pack_into(out, CRC_AT, compute_crc(out, 0, len(out)))
        return out


def build_batch(records: Sequence[tuple[bytes | None, bytes | None, int] |
                                  tuple[bytes | None, bytes | None, int, Iterable[Header]]],
                **options: Any) -> bytearray:
    """One batch from (key, value, timestamp[, headers]) tuples; options as BatchBuilder."""
    builder = BatchBuilder(**options)
    for rec in records:
        builder.append(rec[0], rec[1], rec[2], rec[3] if len(rec) > 3 else ())
    return builder.build()


# -- control records (transaction markers) -------------------------------------------

CONTROL_ABORT = 0
CONTROL_COMMIT = 1


def build_control_batch(*, commit: bool, producer_id: int, producer_epoch: int,
                        coordinator_epoch: int, timestamp: int,
                        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH) -> bytearray:
    """An end-transaction marker batch: key (version 0, type), value (version 0, coordinatorEpoch)."""
    builder = BatchBuilder(producer_id=producer_id, producer_epoch=producer_epoch,
                           transactional=True, control=True,
                           partition_leader_epoch=partition_leader_epoch)
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    builder.append(key, _CONTROL_VALUE.pack(0, coordinator_epoch), timestamp)
    return builder.build()


def parse_control_key(key: bytes) -> tuple[int, int]:
    """(version, type) of a control record key; type 0 abort, 1 commit."""
    if len(key) < 4:
        raise CorruptRecordError("control record key shorter than 4 bytes")
    version, kind = _CONTROL_KEY.unpack_from(key)
    return version, kind


def marker_type(buf: Buffer, pos: int = 0) -> int | None:
    """CONTROL_ABORT / CONTROL_COMMIT of the control batch at ``pos``; None for a batch
    that is not a control batch, or whose first record is unreadable or of another
    type (Kafka ignores control records of unknown types)."""
    marker = marker_of(buf, pos)
    return None if marker is None else marker[0]


def marker_of(buf: Buffer, pos: int = 0) -> tuple[int, int] | None:
    """(type, coordinator epoch) of the end-transaction marker at ``pos``, as
    ``marker_type`` finds it; the epoch is -1 when the record's value is missing or
    short (EndTransactionMarker value: int16 version, int32 coordinatorEpoch)."""
    if not read_header(buf, pos).is_control:
        return None
    try:
        record = next(iter_records(buf, pos), None)
    except RecordError:
        return None
    if record is None or record.key is None or len(record.key) < 4:
        return None
    kind = parse_control_key(record.key)[1]
    if kind not in (CONTROL_ABORT, CONTROL_COMMIT):
        return None
    value = record.value
    epoch = _CONTROL_VALUE.unpack_from(value)[1] \
        if value is not None and len(value) >= _CONTROL_VALUE.size else -1
    return kind, epoch
