"""One log segment: ``<base>.log`` + ``<base>.index`` + ``<base>.timeindex``.

The ``.log`` is a plain concatenation of magic-2 record batches (layout in
``protocol.records``). A segment is in one of two states:

* **active** (the last segment of a log, the only one written): the ``.log``
  is open read-write through one ``FileHandle``; appends go in with pwrite
  (offsets patched in the buffer first) and reads with pread on the same fd,
  as Kafka's FileChannel does. The file is ``size`` bytes long (with
  ``log.preallocate``, ``posix_fallocate`` makes it ``segment.bytes`` with a
  zero tail). Both indexes are preallocated and mapped read-write.
* **sealed**: the ``.log`` is cut to ``size`` and nothing is open until a read
  needs it: the read fd, the read-only index maps, the first-batch timestamp
  and max timestamp are all loaded lazily, so opening thousands of segments
  costs one directory listing. A segment sealed by roll keeps its handle.

File descriptors: one per open segment, for the ``.log`` — the index maps keep
none (``storage.fdless_mmap``). CPython's mmap holds a dup()ed fd per map, and
a .log map plus two index maps plus the write fd made 4 per partition, which
put 10,000 partitions past this machine's 20,000-descriptor limit.

``seal`` (roll/close) cuts the ``.log`` and both indexes to their valid
length, which is what makes a clean restart cheap. After a crash the active
file is still full length with a zero (or torn) tail: ``recover`` rescans it.

Reads return a ``FileSlice`` (file, position, size); its ``read()`` gives the
bytes with one ``pread``, which the broker's connection calls when it writes
the response through the asyncio transport (no sendfile). The slice holds its own
reference to the open file, so deleting the segment underneath does not break
it (the inode lives while the fd does).
"""

from __future__ import annotations

import bisect
import mmap
import os
from collections import deque
from collections.abc import Callable, Iterator
from typing import NamedTuple, TypeVar

from protocol import records
from protocol.records import HEADER_SIZE, MAGIC, BatchHeader
from storage import batch_writes, checkpoints, filenames
from storage.config import LogConfig
from storage.mmap_index import CorruptIndexError
from storage.offset_index import OffsetIndex
from storage.time_index import TimeIndex
from storage.txn_index import TxnIndex

# How many of the last appended batches a segment remembers (LogSegment._recent): at
# least log.index.interval.bytes (4096) of the smallest batches (61-byte headers).
RECENT_BATCHES = 256
_Index = TypeVar("_Index", OffsetIndex, TimeIndex)


def _last_offset(entry: tuple[int, int, BatchHeader]) -> int:
    return entry[0]

INT32_MAX = 0x7FFFFFFF


class FileHandle:
    """An fd closed when the last holder (segment or slice) lets go; read-write
    for the active segment (the writer and its readers share it)."""

    __slots__ = ("fd", "path")

    def __init__(self, path: str, *, writable: bool = False) -> None:
        self.path = path
        self.fd = os.open(path, (os.O_RDWR | os.O_CREAT) if writable else os.O_RDONLY, 0o644)

    def __del__(self) -> None:
        try:
            os.close(self.fd)
        except (OSError, AttributeError):
            pass


class FileSlice(NamedTuple):
    """``size`` bytes at ``position`` of an open segment file, read (pread) only
    when the response is written."""

    handle: FileHandle | None
    position: int
    size: int

    @property
    def fd(self) -> int:
        return -1 if self.handle is None else self.handle.fd

    def read(self) -> bytes:
        if self.handle is None or self.size == 0:
            return b""
        return os.pread(self.handle.fd, self.size, self.position)


EMPTY_SLICE = FileSlice(None, 0, 0)


class LogSegment:
    def __init__(self, dir_path: str, base_offset: int, config: LogConfig, *,
                 size: int, created_ms: int) -> None:
        self.dir = dir_path
        self.base_offset = base_offset
        self.config = config
        self.size = size
        self.created_ms = created_ms
        self.log_path = filenames.log_file(dir_path, base_offset)
        self.index_path = filenames.index_file(dir_path, base_offset)
        self.time_index_path = filenames.time_index_file(dir_path, base_offset)
        self.txn_index_path = filenames.txn_index_file(dir_path, base_offset)
        self._txn_index: TxnIndex | None = None
        self._handle: FileHandle | None = None
        self._active = False
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self._next_offset: int | None = None
        self._max_ts: int | None = None  # None: not loaded (sealed, lazy)
        self._offset_of_max_ts = -1
        self._rolling_ts: int | None = None
        self._rolling_ts_loaded = False
        self._bytes_since_index = 0
        # The batches appended last, as (last offset, position, header), oldest first:
        # a contiguous run of the file that ends at ``size`` (RECENT_BATCHES at most).
        # translate_offset answers from it without a pread per batch header: a follower
        # or a consumer at the tail asks for the offset just appended, and the scan from
        # the sparse index entry (up to log.index.interval.bytes of small batches, 60-odd
        # preads of 61 bytes, several times per fetch) was most of an acks=all round trip.
        # Cleared whenever the end moves other than by an append (truncation, recovery,
        # sealing).
        self._recent: deque[tuple[int, int, BatchHeader]] = deque(maxlen=RECENT_BATCHES)

    @classmethod
    def create(cls, dir_path: str, base_offset: int, config: LogConfig, now_ms: int) -> LogSegment:
        """A new, empty, active segment (an existing empty file is reused)."""
        seg = cls(dir_path, base_offset, config, size=0, created_ms=now_ms)
        for path in (seg.log_path, seg.index_path, seg.time_index_path):
            with open(path, "ab"):
                pass
        seg.activate()
        return seg

    @property
    def active(self) -> bool:
        return self._active

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path!r}, size={self.size}, active={self.active})"

    # -- state changes ----------------------------------------------------------------

    def activate(self) -> None:
        """Open for appends: the .log read-write, both indexes preallocated and mapped."""
        if self.active:
            return
        handle = FileHandle(self.log_path, writable=True)
        os.ftruncate(handle.fd, self.size)  # drop any stale tail past the valid data
        if self.config.preallocate:
            os.posix_fallocate(handle.fd, 0, max(self.config.segment_bytes, self.size, 1))
        self._handle = handle
        self._active = True
        self._close_indexes()
        self._offset_index = self._open_index(OffsetIndex, self.index_path, writable=True)
        self._time_index = self._open_index(TimeIndex, self.time_index_path, writable=True)
        self._bytes_since_index = 0
        self._load_tail_state()

    def seal(self) -> None:
        """Stop appends: final time-index entry, cut .log and indexes to size."""
        if not self.active:
            return
        assert self._handle is not None and self._time_index is not None
        if self._max_ts is not None and self._max_ts >= 0:
            self._time_index.maybe_append(self._max_ts, self._offset_of_max_ts, final=True)
        os.ftruncate(self._handle.fd, self.size)   # the handle stays, for reads
        self._active = False
        self._recent.clear()
        self._close_indexes()

    def close(self) -> None:
        """Seal and release every open file."""
        self.seal()
        self._close_indexes()
        self._handle = None

    def _close_indexes(self) -> None:
        for index in (self._offset_index, self._time_index):
            if index is not None:
                index.close(trim=True)
        self._offset_index = self._time_index = None

    def release(self) -> None:
        """Drop every open file and map without writing anything (no seal, no trim):
        the segment's log dir went offline. The files stay as they are on disk."""
        self._active = False
        for index in (self._offset_index, self._time_index):
            if index is not None:
                index.close(trim=False)
        self._offset_index = self._time_index = None
        self._handle = None
        self._txn_index = None

    def delete(self) -> None:
        """Rename every file to ``.deleted`` then remove it (open slices keep their data)."""
        self._active = False
        self._close_indexes()
        self._handle = None
        self._txn_index = None
        for path in (self.log_path, self.index_path, self.time_index_path, self.txn_index_path):
            try:
                os.replace(path, path + filenames.DELETED)
            except FileNotFoundError:
                continue
            os.unlink(path + filenames.DELETED)

    def flush(self) -> None:
        """fsync the .log and both indexes."""
        if self.active:
            assert self._handle is not None
            os.fsync(self._handle.fd)
        elif os.path.exists(self.log_path):
            checkpoints.fsync_path(self.log_path)
        for index, path in ((self._offset_index, self.index_path),
                            (self._time_index, self.time_index_path)):
            if index is not None and index.writable:
                index.flush()
            elif os.path.exists(path):
                checkpoints.fsync_path(path)

    # -- indexes (lazy for sealed segments) ------------------------------------------

    @property
    def txn_index(self) -> TxnIndex:
        """The aborted transactions whose abort marker is in this segment (the
        ``.txnindex`` file is created on the first append, as Kafka does)."""
        if self._txn_index is None:
            self._txn_index = TxnIndex(self.txn_index_path, self.base_offset)
        return self._txn_index

    def _open_index(self, kind: type[_Index], path: str, *, writable: bool) -> _Index:
        return kind(path, self.base_offset, self.config.segment_index_bytes, writable=writable)

    @property
    def offset_index(self) -> OffsetIndex:
        if self._offset_index is None:
            self._load_sealed_indexes()
        assert self._offset_index is not None
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        if self._time_index is None:
            self._load_sealed_indexes()
        assert self._time_index is not None
        return self._time_index

    def _load_sealed_indexes(self) -> None:
        """Map both indexes read-only; rebuild them from the .log when missing or corrupt."""
        try:
            if not (os.path.exists(self.index_path) and os.path.exists(self.time_index_path)):
                raise CorruptIndexError(f"index files of {self.log_path} are missing")
            oi = OffsetIndex(self.index_path, self.base_offset, self.config.segment_index_bytes,
                             writable=False)
            ti = TimeIndex(self.time_index_path, self.base_offset,
                           self.config.segment_index_bytes, writable=False)
            oi.sanity_check(self.size)
            ti.sanity_check()
        except CorruptIndexError:
            self.rebuild_indexes()
            oi = OffsetIndex(self.index_path, self.base_offset, self.config.segment_index_bytes,
                             writable=False)
            ti = TimeIndex(self.time_index_path, self.base_offset,
                           self.config.segment_index_bytes, writable=False)
        self._offset_index, self._time_index = oi, ti

    def rebuild_indexes(self) -> None:
        """Recreate both index files by scanning the (sealed) .log; no truncation."""
        self._scan_and_index(truncate=False)

    # -- reading helpers -----------------------------------------------------------------

    def handle(self) -> FileHandle:
        if self._handle is None:
            self._handle = FileHandle(self.log_path)
        return self._handle

    def header_at(self, pos: int) -> BatchHeader | None:
        """Header of the complete batch at ``pos``, or None (end, torn, or not a batch)."""
        if pos + HEADER_SIZE > self.size:
            return None
        raw = os.pread(self.handle().fd, HEADER_SIZE, pos)
        if len(raw) < HEADER_SIZE:
            return None
        header = records.read_header(raw)
        if header.batch_length < records.MIN_BATCH_LENGTH or pos + header.size > self.size:
            return None
        return header

    def batches(self, pos: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from ``pos`` to the end."""
        while True:
            header = self.header_at(pos)
            if header is None:
                return
            yield pos, header
            pos += header.size

    def read_batch(self, pos: int, header: BatchHeader) -> bytes:
        return os.pread(self.handle().fd, header.size, pos)

    def translate_offset(self, offset: int, start_position: int = 0) -> tuple[int, BatchHeader] | None:
        """(position, header) of the first batch whose last offset is >= ``offset``."""
        recent = self._recent
        if recent and offset >= recent[0][2].base_offset:
            # every batch before the run ends below its first base offset: the answer is
            # in the run, or there is none
            i = bisect.bisect_left(recent, offset, key=_last_offset)
            while i < len(recent) and recent[i][1] < start_position:
                i += 1
            if i == len(recent):
                return None
            _, at, header = recent[i]
            return at, header
        _, pos = self.offset_index.lookup(offset)
        for at, header in self.batches(max(pos, start_position)):
            if header.base_offset + header.last_offset_delta >= offset:
                return at, header
        return None

    # -- state loaded lazily ---------------------------------------------------------

    def _load_tail_state(self) -> None:
        """next offset and max timestamp from the last index entries plus a short scan."""
        oi, ti = self.offset_index, self.time_index
        self._max_ts, self._offset_of_max_ts = ti.last()
        last_offset, pos = oi.lookup(oi.last_offset())
        next_offset = self.base_offset if not oi.entries else last_offset + 1
        for _at, header in self.batches(pos):
            next_offset = header.base_offset + header.last_offset_delta + 1
            if header.max_timestamp > self._max_ts:
                self._max_ts = header.max_timestamp
                self._offset_of_max_ts = next_offset - 1
        self._next_offset = next_offset

    @property
    def next_offset(self) -> int:
        """One past the last offset in the segment (base offset when empty)."""
        if self._next_offset is None:
            self._load_tail_state()
        assert self._next_offset is not None
        return self._next_offset

    @property
    def max_timestamp(self) -> int:
        """Largest batch max-timestamp in the segment, -1 when none."""
        if self._max_ts is None:
            self._load_tail_state()
        assert self._max_ts is not None
        return self._max_ts

    @property
    def offset_of_max_timestamp(self) -> int:
        self.max_timestamp  # noqa: B018 - loads it
        return self._offset_of_max_ts

    def largest_timestamp(self) -> int:
        """For retention: max timestamp, or the file's mtime when there is none (Kafka)."""
        ts = self.max_timestamp
        if ts >= 0:
            return ts
        try:
            return int(os.stat(self.log_path).st_mtime * 1000)
        except FileNotFoundError:
            return 0

    def rolling_timestamp(self) -> int | None:
        """Max timestamp of the first batch (what log.roll.ms counts from), or None."""
        if not self._rolling_ts_loaded:
            header = self.header_at(0)
            self._rolling_ts = header.max_timestamp if header else None
            self._rolling_ts_loaded = True
        return self._rolling_ts

    # -- appending (active only) -----------------------------------------------------

    def should_roll(self, size: int, max_ts: int, last_offset: int, now_ms: int) -> bool:
        """Kafka's roll rule for an append of ``size`` bytes ending at ``last_offset``."""
        cfg = self.config
        if self.size > cfg.segment_bytes - size:
            return True
        if self.size > 0:
            first_ts = self.rolling_timestamp()
            waited = max_ts - first_ts if first_ts is not None and first_ts >= 0 else now_ms - self.created_ms
            if waited > cfg.segment_ms - cfg.segment_jitter_ms:
                return True
        if self.offset_index.is_full or self.time_index.is_full:
            return True
        return last_offset - self.base_offset > INT32_MAX

    def append(self, data: bytes | bytearray | memoryview,
               batches: list[tuple[int, BatchHeader]], base_offsets: list[int] | None,
               leader_epoch: int | None, append_time: int | None) -> None:
        """Write ``data`` (the batches) at the end of the segment, patched on the way.

        ``base_offsets``: offsets to assign per batch (leader), or None to keep
        the batches' own (follower). ``leader_epoch`` is stamped into each
        batch when given; ``append_time`` makes the batches LogAppendTime.

        The bytes go in with pwrite(v), as Kafka's FileChannel.write
        (``storage.batch_writes``: only the patched headers are copied). (Through a
        shared mapping, the first store into a sparse page costs a page fault
        with block allocation — measured ~300 us on ext4 against ~1 us for
        pwrite — which made a round of small appends to many partitions, one
        new page each, cost a third of a millisecond apiece.)
        """
        if not self.active:
            raise ValueError(f"segment {self.log_path} is not active")
        assert self._handle is not None
        start = self.size
        if start + len(data) > INT32_MAX:   # index positions are 32-bit
            raise ValueError(f"append of {len(data)} bytes overflows segment {self.log_path}")
        written = batch_writes.write_batches(self._handle.fd, data, start, batches,
                                             base_offsets, leader_epoch, append_time)
        if start == 0:
            self._rolling_ts_loaded = False  # the first batch sets it
        tail = (self._next_offset, self._max_ts, self._offset_of_max_ts, self._bytes_since_index,
                self.offset_index.entries, self.time_index.entries)
        try:
            for rel, h in written:          # indexed only once the bytes are in the file
                self._index_batch(start + rel, h.size, h.base_offset + h.last_offset_delta,
                                  h.max_timestamp)
        except OSError:
            # an index write failed (its dir is going offline): the segment ends where it
            # did, so the log end offset does not move past what the append answers
            (self._next_offset, self._max_ts, self._offset_of_max_ts, self._bytes_since_index,
             self.offset_index.entries, self.time_index.entries) = tail
            raise
        self.size = start + len(data)
        recent = self._recent
        for rel, header in written:
            recent.append((header.base_offset + header.last_offset_delta, start + rel, header))
        if not self._rolling_ts_loaded:
            self.rolling_timestamp()

    def _index_batch(self, pos: int, size: int, last_offset: int, max_ts: int) -> None:
        """Bookkeeping shared by append and recovery: max timestamp and sparse entries."""
        if self._max_ts is None or max_ts > self._max_ts:
            self._max_ts = max_ts
            self._offset_of_max_ts = last_offset
        if self._bytes_since_index > self.config.index_interval_bytes:
            self.offset_index.append(last_offset, pos)
            self.time_index.maybe_append(self._max_ts, self._offset_of_max_ts)
            self._bytes_since_index = 0
        self._bytes_since_index += size
        self._next_offset = last_offset + 1

    def truncate_to(self, offset: int) -> int:
        """Drop the batch holding ``offset`` and all after it (active only); bytes removed."""
        if not self.active:
            raise ValueError(f"segment {self.log_path} is not active")
        assert self._handle is not None
        found = self.translate_offset(offset)
        if found is None:
            return 0
        pos = found[0]
        removed = self.size - pos
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        if self._txn_index is not None or os.path.exists(self.txn_index_path):
            self.txn_index.truncate_to(offset)
        os.ftruncate(self._handle.fd, pos)   # gone from the file: a crash cannot resurrect it
        self.size = pos
        self._recent.clear()
        self._bytes_since_index = 0
        self._rolling_ts_loaded = False
        self._load_tail_state()
        return removed

    # -- recovery -----------------------------------------------------------------

    def recover(self, on_batch: Callable[[BatchHeader], None] | None = None) -> int:
        """Revalidate the sealed segment; cut what follows the last good batch.

        Good batch: complete, magic 2, CRC-32C matches, base offset not below
        the previous batch's next offset (nor the segment base), offsets fit
        the 32-bit relative index. Indexes are rebuilt from scratch. Returns
        the number of bytes truncated.
        """
        if self.active:
            raise ValueError("recover() runs on a sealed segment")
        self._handle = None
        return self._scan_and_index(truncate=True, on_batch=on_batch)

    def _scan_and_index(self, *, truncate: bool,
                        on_batch: Callable[[BatchHeader], None] | None = None) -> int:
        file_size = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        for path in (self.index_path, self.time_index_path):
            with open(path, "wb"):
                pass  # start both indexes empty
        self._close_indexes()
        self._offset_index = OffsetIndex(self.index_path, self.base_offset,
                                         self.config.segment_index_bytes, writable=True)
        self._time_index = TimeIndex(self.time_index_path, self.base_offset,
                                     self.config.segment_index_bytes, writable=True)
        self._max_ts, self._offset_of_max_ts = -1, -1
        self._bytes_since_index = 0
        self._next_offset = self.base_offset
        valid = _scan_valid(self, file_size, on_batch) if file_size else 0
        if truncate and valid < file_size:
            os.truncate(self.log_path, valid)
        self.size = valid if truncate else file_size
        self._recent.clear()
        if self._max_ts >= 0:
            self._time_index.maybe_append(self._max_ts, self._offset_of_max_ts, final=True)
        self._close_indexes()
        self._rolling_ts_loaded = False
        return file_size - valid if truncate else 0


def _scan_valid(seg: LogSegment, file_size: int,
                on_batch: Callable[[BatchHeader], None] | None) -> int:
    """Walk ``seg``'s .log through a read-only map; index good batches; valid length."""
    valid = 0
    with open(seg.log_path, "rb") as f, \
            mmap.mmap(f.fileno(), file_size, access=mmap.ACCESS_READ) as mm:
        expected = seg.base_offset
        for pos, header in records.iter_batches(mm, 0, file_size):
            if (header.magic != MAGIC or header.base_offset < expected
                    or header.last_offset_delta < 0
                    or header.base_offset + header.last_offset_delta - seg.base_offset > INT32_MAX
                    or not records.crc_ok(mm, pos, header)):
                break
            last = header.base_offset + header.last_offset_delta
            seg._index_batch(pos, header.size, last, header.max_timestamp)
            if on_batch is not None:
                on_batch(header)
            expected = last + 1
            valid = pos + header.size
    return valid

