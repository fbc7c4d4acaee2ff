"""PartitionLog: one partition's segments, offsets and retention (Kafka ``UnifiedLog``).

Offsets, from low to high::

    log_start_offset <= (segment base offsets...) ; high_watermark <= log_end_offset
    recovery_point <= log_end_offset  (everything below it has been fsync'd)

Segments are kept sorted by base offset in ``segments`` with their bases in
``_bases`` for ``bisect``; the last one is the only active (writable) one.
Time comes from a clock seam (``clock() -> ms``) so roll/retention/flush by
time are testable without sleeping.

Disk failures: every method that writes is a ``write_path`` (storage/io_guard.py):
an OSError there goes to ``failure_sink`` (the LogManager's, which takes the whole
log dir offline), and while ``offline`` is set every write is refused with
LogDirOfflineError. ``release`` drops the files of a log in an offline dir
without writing anything.

Threads: the broker calls a log from its event loop only, but the log cleaner
(storage/cleaner.py) runs in a worker thread and swaps cleaned segments in.
So every public method that reads or changes the segment list holds
``self.lock`` (an RLock; uncontended it costs well under a microsecond), and
the cleaner takes the same lock for its swap (``LogCleaner(lock_for=...)``).
"""

from __future__ import annotations

import bisect
import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from protocol import records
from protocol.records import BatchHeader
from storage import filenames, producer_snapshot, recovery
from storage.config import LogConfig
from storage.io_guard import FailureSink, LogDirOfflineError, write_path
from storage.leader_epoch import LeaderEpochCache
from storage.log_types import (AppendInfo, OffsetOutOfRangeError, ReadResult,
                               RecordBatchTooLargeError, UnexpectedAppendOffsetError)
from storage.producer_snapshot import SnapshotEntry
from storage.segment import EMPTY_SLICE, FileSlice, LogSegment
from storage.txn_index import AbortedTxn

Clock = Callable[[], int]
SNAPSHOTS_KEPT = 2              # producer snapshots kept (the newest ones)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _locked(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``method`` holding the log's lock (see the module docstring)."""
    @functools.wraps(method)
    def wrapper(self: PartitionLog, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)
    return wrapper


class PartitionLog:
    # The flush-time seam (the broker's LogFlushRateAndTimeMs metric): when set (the
    # LogManager sets it on every log it holds), called with the seconds each flush that
    # synced something took, on the flushing thread. A class default, so a log reopened
    # in place keeps its own (log_manager._reopen_in_place).
    flush_observer: Callable[[float], None] | None = None

    def __init__(self, dir_path: str, config: LogConfig, segments: list[LogSegment], *,
                 log_start_offset: int, recovery_point: int, clock: Clock,
                 epoch_cache: LeaderEpochCache) -> None:
        self.dir = dir_path
        self.lock = threading.RLock()
        try:
            self.topic, self.partition = filenames.parse_partition_dir(os.path.basename(dir_path))
        except ValueError:
            self.topic, self.partition = os.path.basename(dir_path), -1
        self.config = config
        self.clock = clock
        self.segments = segments
        self._bases = [s.base_offset for s in segments]
        self.leader_epoch_cache = epoch_cache
        self.log_start_offset = max(log_start_offset, segments[0].base_offset)
        self.recovery_point = min(max(recovery_point, self.log_start_offset), self.log_end_offset)
        self.high_watermark = self.log_start_offset
        self._unflushed_messages = 0
        self._last_flush_ms = clock()
        # The owner's producer state as snapshot entries (broker.replication.partition
        # sets it): written to <offset>.snapshot at every roll and at close, so that
        # opening the log replays only the batches after the newest snapshot.
        self.snapshot_source: Callable[[], list[SnapshotEntry]] | None = None

    # Disk failures (storage/io_guard.py). Class-level defaults on purpose: only the
    # LogManager sets them on an instance, and a reopen in place keeps them.
    offline = False                        # the log dir is offline: writes are refused
    failure_sink: FailureSink | None = None

    def report_io_error(self, what: str, error: OSError) -> None:
        """An OSError on a write path: tell the sink (the LogManager) about the log dir."""
        sink = self.failure_sink
        if sink is not None:
            sink(os.path.dirname(self.dir), f"{what} of {os.path.basename(self.dir)}", error)

    def offline_error(self) -> LogDirOfflineError:
        return LogDirOfflineError(f"log dir {os.path.dirname(self.dir)} of "
                                  f"{os.path.basename(self.dir)} is offline")

    @classmethod
    def open(cls, dir_path: str, config: LogConfig | None = None, *, recovery_point: int = 0,
             log_start_offset: int = 0, clean_shutdown: bool = False,
             clock: Clock = wall_clock_ms) -> PartitionLog:
        """Open (creating when needed) the log in ``dir_path``, recovering after a crash."""
        config = config or LogConfig()
        os.makedirs(dir_path, exist_ok=True)
        cache = LeaderEpochCache(dir_path)
        loaded = recovery.load_segments(dir_path, config, recovery_point=recovery_point,
                                        log_start_offset=log_start_offset,
                                        clean_shutdown=clean_shutdown, now_ms=clock(),
                                        epoch_cache=cache)
        log = cls(dir_path, config, loaded.segments, log_start_offset=log_start_offset,
                  recovery_point=recovery_point, clock=clock, epoch_cache=cache)
        if clean_shutdown:  # everything on disk was flushed before the marker was written
            log.recovery_point = log.log_end_offset
        cache.truncate_from_end(log.log_end_offset)
        cache.truncate_from_start(log.log_start_offset)
        active = log.active_segment
        if os.path.exists(active.txn_index_path):   # recovery may have cut markers off the tail
            active.txn_index.truncate_to(log.log_end_offset)
        log.last_load = loaded
        return log

    last_load: recovery.LoadResult | None = None

    # -- offsets and sizes ------------------------------------------------------------

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, clamped to [log_start_offset, log_end_offset]."""
        self.high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)
        return self.high_watermark

    def _segment_index(self, offset: int) -> int:
        """Slot of the segment holding ``offset`` (largest base <= offset), 0 when below all."""
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    # -- append -----------------------------------------------------------------------

    @write_path
    def append(self, data: bytes | bytearray | memoryview, *, leader_epoch: int | None = None,
               assign_offsets: bool = True) -> AppendInfo:
        """Append whole batches (already validated by ``records.validate``).

        Leader (``assign_offsets``): offsets from the log end offset are
        patched into the batches as they land in the segment, and
        ``leader_epoch`` is stamped on them. Follower (``assign_offsets=False``):
        the batches keep their offsets, which must not go backwards.
        """
        batches = list(records.iter_batches(data))
        size = sum(h.size for _, h in batches)
        if not batches or size != len(data):
            raise records.CorruptRecordError(f"append of {len(data)} bytes holds "
                                             f"{size} bytes of whole batches")
        if size > self.config.segment_bytes:
            raise RecordBatchTooLargeError(f"append of {size} bytes exceeds segment.bytes "
                                           f"{self.config.segment_bytes}")
        bases = self._assign(batches) if assign_offsets else None
        first = bases[0] if bases else batches[0][1].base_offset
        last_h = batches[-1][1]
        last = (bases[-1] if bases else last_h.base_offset) + last_h.last_offset_delta
        now = self.clock()
        append_time = now if self.config.log_append_time else None
        max_ts, offset_of_max = self._max_timestamp(batches, bases, append_time)
        segment = self.active_segment
        if segment.should_roll(size, max_ts, last, now):
            segment = self.roll(first)
        segment.append(data, batches, bases, leader_epoch, append_time)
        self._assign_epochs(batches, bases, leader_epoch)
        count = sum(h.records_count for _, h in batches)
        self._unflushed_messages += count
        self.maybe_flush()
        return AppendInfo(first, last, max_ts, offset_of_max,
                          -1 if append_time is None else append_time, len(batches), count,
                          size, self.log_start_offset)

    def _assign(self, batches: list[tuple[int, BatchHeader]]) -> list[int]:
        bases = []
        next_offset = self.log_end_offset
        for _, header in batches:
            bases.append(next_offset)
            next_offset += header.last_offset_delta + 1
        return bases

    def _max_timestamp(self, batches: list[tuple[int, BatchHeader]], bases: list[int] | None,
                       append_time: int | None) -> tuple[int, int]:
        """(max timestamp, last offset of its batch); also checks follower offsets."""
        max_ts, offset_of_max = -1, -1
        expected = self.log_end_offset
        for i, (_, header) in enumerate(batches):
            base = bases[i] if bases else header.base_offset
            if base < expected:
                raise UnexpectedAppendOffsetError(
                    f"batch at offset {base} is below the expected {expected} in {self.dir}")
            expected = base + header.last_offset_delta + 1
            ts = header.max_timestamp if append_time is None else append_time
            if ts > max_ts:
                max_ts, offset_of_max = ts, expected - 1
        return max_ts, offset_of_max

    def _assign_epochs(self, batches: list[tuple[int, BatchHeader]], bases: list[int] | None,
                       leader_epoch: int | None) -> None:
        cache = self.leader_epoch_cache
        for i, (_, header) in enumerate(batches):
            epoch = header.partition_leader_epoch if leader_epoch is None else leader_epoch
            if epoch >= 0 and epoch != cache.latest_epoch:
                cache.assign(epoch, bases[i] if bases else header.base_offset)

    # -- roll and flush ---------------------------------------------------------------

    @write_path
    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Seal the active segment and start one at max(expected, log end offset)."""
        old = self.active_segment
        new_base = max(expected_next_offset or 0, self.log_end_offset)
        if old.size == 0:
            if old.base_offset == new_base:
                return old
            self.segments.pop()
            self._bases.pop()
            old.delete()
        else:
            old.seal()
            if self.config.flush_on_roll:
                self.flush(new_base)
        segment = LogSegment.create(self.dir, new_base, self.config, self.clock())
        self.segments.append(segment)
        self._bases.append(new_base)
        self._take_snapshot(new_base)
        return segment

    def _take_snapshot(self, offset: int) -> None:
        """Write the producer snapshot for ``offset`` (the log end offset) and keep the
        newest few at or above the log start (Kafka keeps one per segment; older ones
        only serve a truncation that deep, which then replays the log instead)."""
        if self.snapshot_source is None:
            return
        producer_snapshot.write(self.dir, offset, self.snapshot_source(),
                                sync=self.config.flush_on_roll)
        producer_snapshot.delete(self.dir, below=self.log_start_offset,
                                 keep_latest=SNAPSHOTS_KEPT)

    @write_path
    def flush(self, offset: int | None = None) -> None:
        """fsync segments holding offsets in [recovery_point, offset); advance the recovery point.

        The leader-epoch checkpoint is synced first: its unsynced entries start at or
        above the recovery point, where recovery would rebuild them (see leader_epoch)."""
        started = time.perf_counter()
        self.leader_epoch_cache.sync()
        offset = self.log_end_offset if offset is None else min(offset, self.log_end_offset)
        if offset <= self.recovery_point:
            return
        for segment in self.segments[self._segment_index(self.recovery_point):]:
            if segment.base_offset >= offset:
                break
            segment.flush()
        self.recovery_point = offset
        self._unflushed_messages = 0
        self._last_flush_ms = self.clock()
        observer = self.flush_observer
        if observer is not None:
            observer(time.perf_counter() - started)

    @write_path
    def maybe_flush(self) -> bool:
        """Flush policy: log.flush.interval.messages / .ms (defaults: never, page cache)."""
        cfg = self.config
        if (self._unflushed_messages >= cfg.flush_interval_messages
                or (self._unflushed_messages
                    and self.clock() - self._last_flush_ms >= cfg.flush_interval_ms)):
            self.flush()
            return True
        return False

    @write_path
    def delete_snapshots_above(self, offset: int) -> None:
        """Remove producer snapshots above ``offset`` (left by a recovery that cut the tail)."""
        producer_snapshot.delete(self.dir, above=offset)

    @write_path
    def assign_leader_epoch(self, epoch: int, start_offset: int) -> bool:
        """A new leader epoch starts at ``start_offset`` (the leader-epoch checkpoint
        is written); True when the cache changed."""
        return self.leader_epoch_cache.assign(epoch, start_offset)

    # -- read -----------------------------------------------------------------------

    @_locked
    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> ReadResult:
        """Bytes of whole batches from the one holding ``offset``, below ``max_offset``.

        ``max_offset`` is the upper bound (high watermark or last stable offset
        for consumers, None = log end for followers). With ``min_one_batch``
        the first batch is returned whole even above ``max_bytes``; otherwise the
        slice stops at ``max_bytes`` and may end in a partial batch (clients
        skip it, as with Kafka). Raises OffsetOutOfRangeError outside
        [log_start_offset, log_end_offset].
        """
        leo = self.log_end_offset
        if offset < self.log_start_offset or offset > leo:
            raise OffsetOutOfRangeError(f"offset {offset} is outside [{self.log_start_offset}, "
                                        f"{leo}] of {self.dir}")
        upper = leo if max_offset is None else min(max_offset, leo)
        i = self._segment_index(offset)
        while offset < upper and i < len(self.segments):
            segment = self.segments[i]
            found = segment.translate_offset(offset)
            if found is not None and found[1].base_offset < upper:
                pos, header = found
                limit = self._upper_position(i, upper)
                want = max(max_bytes, header.size) if min_one_batch else max_bytes
                size = max(0, min(limit - pos, want))
                return ReadResult(FileSlice(segment.handle(), pos, size), offset,
                                  segment.base_offset, pos)
            if found is not None:
                break
            i += 1
        return ReadResult(EMPTY_SLICE, offset, self.segments[min(i, len(self.segments) - 1)].base_offset, 0)

    # -- aborted transactions (the segments' .txnindex) ------------------------------------

    @write_path
    def append_aborted_txn(self, txn: AbortedTxn) -> None:
        """Record an aborted transaction whose abort marker was just appended (so it is
        in the active segment, whose .txnindex holds it, as Kafka's updateTxnIndex)."""
        self.active_segment.txn_index.append(txn)

    @_locked
    def collect_aborted_txns(self, fetch_offset: int, upper: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper) (a read_committed
        Fetch's list), from the segment holding ``fetch_offset`` on, until an entry's
        last stable offset proves no later segment can add one (Kafka's
        collectAbortedTransactions)."""
        found: list[AbortedTxn] = []
        # no stop at ``upper``: an abort marker (and so its entry) may lie in a later
        # segment than the aborted data the read returns
        for segment in self.segments[self._segment_index(max(fetch_offset, self.log_start_offset)):]:
            txns, complete = segment.txn_index.collect(fetch_offset, upper)
            found.extend(txns)
            if complete:
                break
        return found

    def fetch_upper_bound_offset(self, result: ReadResult, upper: int) -> int:
        """Where a read's data may end at most: the next segment's base offset when the
        read stopped in an earlier segment, else ``upper`` (the bound for
        ``collect_aborted_txns``)."""
        i = self._segment_index(result.segment_base_offset)
        return min(upper, self._bases[i + 1]) if i + 1 < len(self._bases) else upper

    def _upper_position(self, i: int, upper: int) -> int:
        segment = self.segments[i]
        if i + 1 < len(self.segments) and self._bases[i + 1] <= upper:
            return segment.size
        found = segment.translate_offset(upper)
        return segment.size if found is None else found[0]

    # -- timestamps -----------------------------------------------------------------

    @_locked
    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after ``timestamp`` (ListOffsets)."""
        start = self.log_start_offset
        for segment in self.segments[self._segment_index(start):]:
            if segment.size == 0 or segment.max_timestamp < timestamp:
                continue
            found = _first_record_at_or_after(segment, timestamp, start)
            if found is not None:
                return found
        return None

    @_locked
    def max_timestamp_and_offset(self) -> tuple[int, int]:
        """(max timestamp, its offset) over the log; (-1, -1) when empty (ListOffsets -3)."""
        best = (-1, -1)
        for segment in self.segments:
            if segment.size and segment.max_timestamp > best[0]:
                best = (segment.max_timestamp, segment.offset_of_max_timestamp)
        return best

    # -- truncation -------------------------------------------------------------------

    @write_path
    def truncate_to(self, offset: int) -> bool:
        """Follower truncation: remove offsets >= ``offset``; False if no record was
        removed. The leader-epoch cache is cut at ``offset`` even then (as Kafka's
        ``UnifiedLog.truncateTo``): a replica that was leader at epoch E and lost it
        before appending holds "E starts at LEO" although no record has epoch E; left
        there, its fetches claim epoch E, the leader answers "diverging: E-1 ends at
        LEO" again and again, and the replica never fetches another record."""
        if offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {offset}")
        if offset >= self.log_end_offset:
            self.leader_epoch_cache.truncate_from_end(offset)
            return False
        if self.segments[0].base_offset > offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while self._bases[-1] > offset:
            self.segments.pop().delete()
            self._bases.pop()
        producer_snapshot.delete(self.dir, above=offset)
        self.active_segment.activate()
        self.active_segment.truncate_to(offset)
        self.leader_epoch_cache.truncate_from_end(offset)
        self.log_start_offset = min(self.log_start_offset, offset)
        self.recovery_point = min(self.recovery_point, offset)
        self.high_watermark = min(self.high_watermark, offset)
        return True

    @write_path
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and restart empty at ``offset``."""
        for segment in self.segments:
            segment.delete()
        producer_snapshot.delete(self.dir, above=-1)
        self.segments = [LogSegment.create(self.dir, offset, self.config, self.clock())]
        self._bases = [offset]
        self.leader_epoch_cache.clear()
        self.log_start_offset = self.recovery_point = self.high_watermark = offset

    # -- retention ------------------------------------------------------------------

    @write_path
    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """DeleteRecords: move the log start up to ``offset`` (<= high watermark)."""
        if offset > self.high_watermark:
            raise OffsetOutOfRangeError(f"log start {offset} above high watermark "
                                        f"{self.high_watermark}")
        if offset <= self.log_start_offset:
            return False
        self.log_start_offset = offset
        self.leader_epoch_cache.truncate_from_start(offset)
        return True

    @write_path
    def delete_old_segments(self) -> int:
        """Apply log start offset, retention.bytes and retention.ms; segments deleted.

        Retention by size and time applies only when cleanup.policy holds
        "delete" (Kafka); the log start offset always does.

        A segment goes only when the high watermark has passed all of it and it
        is not the empty active segment (Kafka ``deletableSegments``).
        """
        deleted = self._delete_while(
            lambda seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset)
        if not self.config.delete:  # cleanup.policy=compact: only the log start offset applies
            return deleted
        if self.config.retention_bytes >= 0:
            excess = [self.size_in_bytes - self.config.retention_bytes]

            def over_size(seg: LogSegment, _nxt: LogSegment | None) -> bool:
                if excess[0] - seg.size < 0:
                    return False
                excess[0] -= seg.size
                return True
            deleted += self._delete_while(over_size)
        if self.config.retention_ms >= 0:
            now = self.clock()
            deleted += self._delete_while(
                lambda seg, _nxt: now - seg.largest_timestamp() > self.config.retention_ms)
        return deleted

    def _delete_while(self, predicate: Callable[[LogSegment, LogSegment | None], bool]) -> int:
        doomed = 0
        leo = self.log_end_offset
        for i, segment in enumerate(self.segments):
            nxt = self.segments[i + 1] if i + 1 < len(self.segments) else None
            upper = nxt.base_offset if nxt is not None else leo
            if (self.high_watermark < upper or (nxt is None and segment.size == 0)
                    or not predicate(segment, nxt)):
                break
            doomed += 1
        if not doomed:
            return 0
        if doomed == len(self.segments):
            self.roll()
        for segment in self.segments[:doomed]:
            segment.delete()
        del self.segments[:doomed], self._bases[:doomed]
        if self._bases[0] > self.log_start_offset:
            self.log_start_offset = self._bases[0]
            self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        self.recovery_point = max(self.recovery_point, self.log_start_offset)
        producer_snapshot.delete(self.dir, below=self._bases[0])
        return doomed

    # -- compaction -----------------------------------------------------------------

    @_locked
    def replace_segments(self, old: list[LogSegment], new: list[LogSegment]) -> None:
        """Put the cleaner's ``new`` segments where the run ``old`` was (in memory only).

        ``old`` is a contiguous run of sealed segments (never the active one);
        ``new`` covers no offset outside it, sorted by base offset, the first
        at ``old[0]``'s base. The files were swapped by the cleaner already.
        """
        i = next((j for j, s in enumerate(self.segments) if s is old[0]), -1)
        if (i < 0 or i + len(old) >= len(self.segments)
                or any(a is not b for a, b in zip(self.segments[i:i + len(old)], old))
                or not new or new[0].base_offset != old[0].base_offset):
            raise ValueError(f"cannot replace {old} in {self.dir}")
        self.segments[i:i + len(old)] = new
        self._bases[i:i + len(old)] = [s.base_offset for s in new]

    # -- lifecycle and metadata -----------------------------------------------------

    @write_path
    def close(self, snapshot: bool = True) -> None:
        """Snapshot the producer state at the log end (unless ``snapshot`` is False:
        a log about to be deleted), seal the active segment (trimming files) and
        release every file. A failed snapshot is reported (write_path) once the
        segments are closed."""
        failed: OSError | None = None
        if snapshot and self.segments and self.snapshot_source is not None:
            try:
                self._take_snapshot(self.log_end_offset)
            except OSError as e:
                failed = e
        for segment in self.segments:
            segment.close()
        if failed is not None:
            raise failed

    @_locked
    def release(self) -> None:
        """The log dir went offline: drop every open file and map without writing
        (no seal, no trim, no snapshot) and refuse writes from now on."""
        self.offline = True
        for segment in self.segments:
            segment.release()

    @write_path
    def delete_files(self) -> None:
        for segment in self.segments:
            segment.delete()
        self.segments = []
        self._bases = []

    @write_path
    def write_partition_metadata(self, topic_id: str, sync: bool = True) -> None:
        """``partition.metadata``: "version: 0" and "topic_id: <base64 uuid>" lines.
        ``sync=False``: the caller fsyncs the file and this dir later (LogManager)."""
        from storage.checkpoints import write_lines_atomically
        write_lines_atomically(os.path.join(self.dir, filenames.PARTITION_METADATA),
                               ["version: 0", f"topic_id: {topic_id}"], sync)

    def read_partition_metadata(self) -> str | None:
        """The topic id from ``partition.metadata``, or None when absent."""
        try:
            with open(os.path.join(self.dir, filenames.PARTITION_METADATA), encoding="utf-8") as f:
                fields = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except FileNotFoundError:
            return None
        return fields.get("topic_id", "").strip() or None


def _first_record_at_or_after(segment: LogSegment, timestamp: int,
                              start_offset: int) -> tuple[int, int] | None:
    _, indexed = segment.time_index.lookup_below(timestamp)
    _, pos = segment.offset_index.lookup(max(indexed, start_offset))
    for at, header in segment.batches(pos):
        if header.max_timestamp < timestamp or header.base_offset + header.last_offset_delta < start_offset:
            continue
        for record in records.iter_records(segment.read_batch(at, header)):
            if record.timestamp >= timestamp and record.offset >= start_offset:
                return record.offset, record.timestamp
    return None
