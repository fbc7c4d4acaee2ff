"""Log compaction for ``cleanup.policy=compact`` logs (Kafka ``LogCleaner`` + ``LogCleanerManager``).

A log, seen by the cleaner::

    log start ... first dirty offset ... first uncleanable offset ... active segment
    |--- clean ---|------ dirty, cleanable ------|--- not yet cleanable ---|

* first dirty offset: from ``cleaner-offset-checkpoint`` in the log dir
  (Kafka's text checkpoint: "0", count, "topic partition offset" lines),
  reset to the log start when missing, below the log start or above the end.
* first uncleanable offset: the lowest of the active segment's base, the
  last stable offset (the high watermark unless the broker passes one), and,
  with min.compaction.lag.ms, the base of the first dirty segment holding a
  record newer than now - lag.
* a log is cleaned when dirty bytes / (clean + dirty bytes) exceeds
  min.cleanable.dirty.ratio, or when its oldest dirty segment began more
  than max.compaction.lag.ms ago; the filthiest goes first.

One clean, numbered:

1. Offset map: key -> latest offset over the dirty section (``compaction``),
   stopping early when the map is full; ``end`` = one past its latest offset.
2. Every segment below ``end`` (clean and dirty, never the active one) is
   grouped with its neighbours up to segment.bytes of log and
   segment.index.bytes per index, and each group is rewritten into one
   segment named by the group's first base offset: records superseded in
   the map go, tombstones go once their delete horizon has passed.
3. Each group is swapped in crash-safely (``_swap_in``; steps there) before
   the next one starts, so at most one group's files are in flight.
4. The checkpoint records ``end`` as the new first dirty offset.

The swap's recovery (``storage/recovery.py``) completes a ``.swap`` by
deleting the segments whose base offsets fall inside its offset range. A
cleaned group may end below the base of its last segments (their records all
went), so each such trailing segment gets an empty replacement of its own in
the same swap: after a crash every segment of the group is replaced, none is
left holding old records.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

from protocol import records as R
from storage import checkpoints, filenames
from storage.compaction import CleanContext, FilterStats, OffsetMap, filter_batch, map_batch
from storage.config import LogConfig
from storage.io_guard import LogDirOfflineError
from storage.log import PartitionLog
from storage.offset_index import OffsetIndex
from storage.segment import INT32_MAX, LogSegment
from storage.time_index import TimeIndex
from storage.txn_index import AbortedTxn, TxnIndex

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
TopicPartition = tuple[str, int]
_BYTES_PER_MAP_ENTRY = 24  # Kafka's SkimpyOffsetMap: 16-byte MD5 + 8-byte offset per slot
_WRITE_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """Broker-wide cleaner settings (Kafka ``CleanerConfig``; server.properties keys)."""

    enable: bool = True                       # log.cleaner.enable
    dedupe_buffer_size: int = 128 << 20       # log.cleaner.dedupe.buffer.size (over all threads)
    dedupe_buffer_load_factor: float = 0.9    # log.cleaner.io.buffer.load.factor
    backoff_ms: int = 15_000                  # log.cleaner.backoff.ms: sleep when nothing to clean

    @property
    def max_map_entries(self) -> int:
        return int(self.dedupe_buffer_size // _BYTES_PER_MAP_ENTRY * self.dedupe_buffer_load_factor)

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> CleanerConfig:
        return cls(
            enable=props.get("log.cleaner.enable", "true").strip().lower() == "true",
            dedupe_buffer_size=int(props.get("log.cleaner.dedupe.buffer.size", 128 << 20)),
            dedupe_buffer_load_factor=float(props.get("log.cleaner.io.buffer.load.factor", 0.9)),
            backoff_ms=int(props.get("log.cleaner.backoff.ms", 15_000)))


@dataclass(slots=True)
class CleanerStats:
    """What one clean did (Kafka logs the same figures after each clean)."""

    topic_partition: TopicPartition | None = None
    first_dirty_offset: int = 0
    end_offset: int = 0                # the new first dirty offset (checkpointed)
    segments_in: int = 0
    segments_out: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    map_records: int = 0
    records: FilterStats = field(default_factory=FilterStats)
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class LogToClean:
    topic_partition: TopicPartition
    log: PartitionLog
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    compaction_delay_ms: int           # > 0: max.compaction.lag.ms has passed

    @property
    def cleanable_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0

    @property
    def needs_cleaning(self) -> bool:
        return ((self.compaction_delay_ms > 0 and self.cleanable_bytes > 0)
                or self.cleanable_ratio > self.log.config.min_cleanable_dirty_ratio)


class LogSource(Protocol):
    """What the cleaner needs from the log manager (``storage.log_manager.LogManager`` fits)."""

    def __iter__(self) -> Iterator[tuple[TopicPartition, PartitionLog]]: ...  # pragma: no cover

    def dir_of(self, topic: str, partition: int) -> str | None: ...  # pragma: no cover


class LogCleaner:
    """Compacts the logs of a log manager; the broker calls ``clean_once`` periodically.

    ``lock_for(log)`` is held around each in-memory segment swap (and nothing
    else): pass one when ``clean_once`` runs on another thread than the
    log's writers. ``last_stable_offset(log)`` bounds cleaning (default: the
    high watermark). ``producer_last_offsets(log)`` gives {producer id: last
    offset of its last batch} for the producers still tracked (default: read
    from the batch headers of the whole log).
    """

    def __init__(self, logs: LogSource, config: CleanerConfig | None = None, *,
                 lock_for: Callable[[PartitionLog], AbstractContextManager[object]] | None = None,
                 last_stable_offset: Callable[[PartitionLog], int] | None = None,
                 producer_last_offsets: Callable[[PartitionLog], dict[int, int]] | None = None
                 ) -> None:
        self.logs = logs
        self.config = config or CleanerConfig()
        self.lock_for = lock_for or (lambda _log: contextlib.nullcontext())
        self.last_stable_offset = last_stable_offset or (lambda log: log.high_watermark)
        self.producer_last_offsets = producer_last_offsets or scan_producer_last_offsets
        self.uncleanable: set[TopicPartition] = set()
        self._checkpoints: dict[str, dict[TopicPartition, int]] = {}

    # -- checkpoints --------------------------------------------------------------------

    def _dir_checkpoints(self, log_dir: str) -> dict[TopicPartition, int]:
        cached = self._checkpoints.get(log_dir)
        if cached is None:
            try:
                cached = checkpoints.read_offsets(os.path.join(log_dir, CLEANER_CHECKPOINT))
            except checkpoints.CheckpointError:
                cached = {}  # Kafka too starts over (cleaning everything again is only work)
            self._checkpoints[log_dir] = cached
        return cached

    def checkpoint(self, tp: TopicPartition) -> int | None:
        log_dir = self.logs.dir_of(*tp)
        return None if log_dir is None else self._dir_checkpoints(log_dir).get(tp)

    def update_checkpoint(self, tp: TopicPartition, offset: int | None) -> None:
        """Set (or with None remove) the first dirty offset of ``tp`` and rewrite its file."""
        log_dir = self.logs.dir_of(*tp)
        if log_dir is None:
            return
        entries = self._dir_checkpoints(log_dir)
        if offset is None:
            if entries.pop(tp, None) is None:
                return
        else:
            entries[tp] = offset
        checkpoints.write_offsets(os.path.join(log_dir, CLEANER_CHECKPOINT), entries)

    def maybe_truncate_checkpoint(self, tp: TopicPartition, offset: int) -> None:
        """After a log truncation to ``offset`` (Kafka ``maybeTruncateCheckpoint``)."""
        current = self.checkpoint(tp)
        if current is not None and current > offset:
            self.update_checkpoint(tp, offset)

    # -- choosing ----------------------------------------------------------------------

    def logs_to_clean(self, now_ms: int) -> list[LogToClean]:
        """Every compacted log with something to clean, filthiest first."""
        found = []
        for tp, log in self.logs:
            if not log.config.compact or tp in self.uncleanable:
                continue
            ltc = self.describe(tp, log, now_ms)
            if ltc.clean_bytes + ltc.cleanable_bytes > 0 and ltc.needs_cleaning:
                found.append(ltc)
        found.sort(key=lambda ltc: ltc.cleanable_ratio, reverse=True)
        return found

    def describe(self, tp: TopicPartition, log: PartitionLog, now_ms: int) -> LogToClean:
        first_dirty = self.checkpoint(tp)
        if first_dirty is None or not log.log_start_offset <= first_dirty <= log.log_end_offset:
            first_dirty = log.log_start_offset
        segments = log.segments[:-1]
        uncleanable = min(log.active_segment.base_offset, self.last_stable_offset(log))
        lag = max(log.config.min_compaction_lag_ms, 0)
        dirty = [s for i, s in enumerate(segments) if _upper(log, i) > first_dirty]
        if lag > 0:
            for seg in dirty:
                if seg.largest_timestamp() > now_ms - lag:
                    uncleanable = min(uncleanable, seg.base_offset)
                    break
        uncleanable = max(first_dirty, uncleanable)
        clean_bytes = sum(s.size for i, s in enumerate(segments) if _upper(log, i) <= first_dirty)
        cleanable = [s for i, s in enumerate(segments)
                     if _upper(log, i) > first_dirty and s.base_offset < uncleanable]
        return LogToClean(tp, log, first_dirty, uncleanable, clean_bytes,
                          sum(s.size for s in cleanable),
                          _compaction_delay(log.config, dirty, now_ms))

    # -- cleaning ----------------------------------------------------------------------

    def clean_once(self, now_ms: int | None = None) -> CleanerStats | None:
        """Clean the filthiest log that needs it; None when none does.

        On an error the partition is marked uncleanable (skipped until
        ``uncleanable`` is cleared), its temporary files are removed and the
        error propagates; an OSError also goes to the log's failure sink, which
        takes its log dir offline (as Kafka's cleaner tells the LogDirFailureChannel).
        """
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        candidates = self.logs_to_clean(now_ms)
        if not candidates:
            return None
        ltc = candidates[0]
        try:
            stats = clean_log(ltc.log, ltc.first_dirty_offset, ltc.first_uncleanable_offset,
                              now_ms, self.config.max_map_entries,
                              self.producer_last_offsets(ltc.log), self.lock_for(ltc.log))
        except BaseException as e:
            self.uncleanable.add(ltc.topic_partition)
            if isinstance(e, OSError) and not isinstance(e, LogDirOfflineError):
                ltc.log.report_io_error("cleaning", e)
            raise
        stats.topic_partition = ltc.topic_partition
        try:
            self.update_checkpoint(ltc.topic_partition, stats.end_offset)
        except OSError as e:
            ltc.log.report_io_error("writing the cleaner checkpoint", e)
            raise
        return stats


def _upper(log: PartitionLog, i: int) -> int:
    """Exclusive upper offset of segment ``i`` (the next segment's base)."""
    return log.segments[i + 1].base_offset if i + 1 < len(log.segments) else log.log_end_offset


def _compaction_delay(config: LogConfig, dirty: list[LogSegment], now_ms: int) -> int:
    """How far past max.compaction.lag.ms the oldest dirty segment is (0: not yet)."""
    firsts = [t for t in (s.rolling_timestamp() for s in dirty) if t is not None and t > 0]
    if not firsts:
        return 0
    clean_until = now_ms - max(config.max_compaction_lag_ms, 0)
    return max(clean_until - min(firsts), 0)


def scan_producer_last_offsets(log: PartitionLog) -> dict[int, int]:
    """{producer id: last offset of its last batch} from the batch headers of the log."""
    last: dict[int, int] = {}
    for seg in log.segments:
        for _pos, header in seg.batches():
            if header.producer_id >= 0:
                last[header.producer_id] = header.last_offset
    return last


# -- one clean -------------------------------------------------------------------------

def clean_log(log: PartitionLog, first_dirty: int, first_uncleanable: int, now_ms: int,
              max_map_entries: int, producer_last_offsets: dict[int, int],
              swap_lock: AbstractContextManager[object] | None = None) -> CleanerStats:
    """Steps 1-3 of a clean (the caller checkpoints ``stats.end_offset``)."""
    started = time.monotonic()
    stats = CleanerStats(first_dirty_offset=first_dirty)
    offset_map = build_offset_map(log, first_dirty, first_uncleanable, max_map_entries, stats)
    stats.end_offset = max(offset_map.latest_offset + 1, first_dirty)
    ctx = CleanContext(offset_map, now_ms, log.config.delete_retention_ms, producer_last_offsets)
    candidates = [s for s in log.segments[:-1] if s.base_offset < stats.end_offset]
    for group in group_segments(log, candidates, first_uncleanable):
        clean_group(log, group, ctx, stats, swap_lock or contextlib.nullcontext())
    stats.seconds = time.monotonic() - started
    return stats


def build_offset_map(log: PartitionLog, start: int, end: int, max_entries: int,
                     stats: CleanerStats) -> OffsetMap:
    """Step 1: map the dirty segments overlapping [start, end), until the map fills."""
    offset_map = OffsetMap(max_entries)
    offset_map.update_latest_offset(start - 1)  # below the dirty section all is mapped (clean)
    segments = log.segments
    for i, seg in enumerate(segments[:-1]):
        upper = min(_upper(log, i), end)
        if upper <= start or seg.base_offset >= end:
            continue
        with _mapped(seg) as mm:
            for pos, header in R.iter_batches(mm, 0, seg.size):
                if header.base_offset >= end:
                    break
                _check_crc(seg, mm, pos, header)
                if map_batch(mm, pos, header, offset_map, start):
                    stats.map_records = len(offset_map)
                    return offset_map
        offset_map.update_latest_offset(upper - 1)  # a gap at the end is mapped too
    stats.map_records = len(offset_map)
    return offset_map


def group_segments(log: PartitionLog, segments: list[LogSegment],
                   first_uncleanable: int) -> list[list[LogSegment]]:
    """Runs of neighbours within segment.bytes, segment.index.bytes per index and
    2^31 relative offsets (Kafka ``groupSegmentsBySize``)."""
    cfg = log.config
    groups: list[list[LogSegment]] = []
    rest = list(segments)
    while rest:
        group = [rest.pop(0)]
        log_size = group[0].size
        index_size = group[0].offset_index.size_in_bytes
        time_size = group[0].time_index.size_in_bytes
        while rest:
            nxt = rest[0]
            last_offset = rest[1].base_offset - 1 if len(rest) > 1 else first_uncleanable - 1
            if (log_size + nxt.size > cfg.segment_bytes
                    or index_size + nxt.offset_index.size_in_bytes > cfg.segment_index_bytes
                    or time_size + nxt.time_index.size_in_bytes > cfg.segment_index_bytes
                    or (nxt.size > 0 and last_offset - group[0].base_offset > INT32_MAX)):
                break
            group.append(rest.pop(0))
            log_size += nxt.size
            index_size += nxt.offset_index.size_in_bytes
            time_size += nxt.time_index.size_in_bytes
        groups.append(group)
    return groups


def clean_group(log: PartitionLog, group: list[LogSegment], ctx: CleanContext,
                stats: CleanerStats, swap_lock: AbstractContextManager[object]) -> None:
    """Step 2-3 for one group: write the ``.cleaned`` files, then swap them in."""
    writer = CleanedWriter(log.dir, group[0].base_offset, log.config)
    # the group's aborted transactions go with its data: a read_committed reader of the
    # cleaned segment must still skip the aborted records the cleaner kept
    writer.aborted = [txn for seg in group for txn in seg.txn_index.entries()]
    try:
        for seg in group:
            with _mapped(seg) as mm:
                for pos, header in R.iter_batches(mm, 0, seg.size):
                    _check_crc(seg, mm, pos, header)
                    out = filter_batch(mm, pos, header, ctx, stats.records)
                    if out is not None:
                        writer.append(out, header)
            stats.bytes_read += seg.size
        writer.finish(mtime_from=group[-1].log_path)
        trailing = [s.base_offset for s in group[1:] if s.base_offset >= writer.next_offset]
        placeholders = [CleanedWriter.empty(log.dir, base, log.config) for base in trailing]
    except BaseException:
        writer.discard()
        raise
    outputs = [writer, *placeholders]
    with swap_lock:
        if not _still_in_log(log, group):  # retention or truncation got there first
            for output in outputs:
                output.discard()
            return
        new_segments = _swap_in(log, group, outputs)
        log.replace_segments(group, new_segments)
    stats.segments_in += len(group)
    stats.segments_out += len(new_segments)
    stats.bytes_written += writer.size


def _swap_in(log: PartitionLog, old: list[LogSegment],
             outputs: list[CleanedWriter]) -> list[LogSegment]:
    """Replace ``old`` by ``outputs`` on disk, crash-safely (Kafka ``replaceSegments``).

    1. (done) every output is complete and fsync'd as ``<base>.{log,index,timeindex}.cleaned``.
    2. outputs renamed ``.cleaned`` -> ``.swap``, highest base first, indexes
       before the log, then the directory fsync'd. A crash in this step
       leaves a ``.cleaned`` below every ``.swap``: recovery discards both
       and the old segments stand.
    3. old segments' files renamed to ``.deleted``. From here on recovery
       completes the swap.
    4. ``.swap`` -> final names, directory fsync'd.
    5. ``.deleted`` files unlinked (recovery removes any left).
    """
    fault_point("cleaned")
    for out in sorted(outputs, key=lambda o: o.base_offset, reverse=True):
        out.rename(filenames.CLEANED, filenames.SWAP)
        fault_point("swap-renamed-one")
    checkpoints.fsync_dir(log.dir)
    fault_point("swapped")
    doomed = []
    for seg in old:
        seg.close()
        for path in (seg.log_path, seg.index_path, seg.time_index_path, seg.txn_index_path):
            with contextlib.suppress(FileNotFoundError):
                os.replace(path, path + filenames.DELETED)
                doomed.append(path + filenames.DELETED)
        fault_point("old-deleted-one")
    for out in outputs:
        out.rename(filenames.SWAP, "")
        fault_point("final-renamed-one")
    checkpoints.fsync_dir(log.dir)
    for path in doomed:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    now = log.clock()
    return [LogSegment(log.dir, out.base_offset, log.config, size=out.size, created_ms=now)
            for out in outputs]


def fault_point(step: str) -> None:
    """A seam for crash tests: they replace this to stop the swap at ``step``."""


def _still_in_log(log: PartitionLog, group: list[LogSegment]) -> bool:
    ids = [id(s) for s in log.segments[:-1]]
    try:
        i = ids.index(id(group[0]))
    except ValueError:
        return False
    return ids[i:i + len(group)] == [id(s) for s in group]


def _check_crc(seg: LogSegment, mm: R.Buffer, pos: int, header: R.BatchHeader) -> None:
    if header.magic != R.MAGIC or not R.crc_ok(mm, pos, header):
        raise R.CorruptRecordError(f"corrupt batch at position {pos} of {seg.log_path}")


@contextlib.contextmanager
def _mapped(seg: LogSegment) -> Iterator[mmap.mmap | bytes]:
    """The sealed segment's valid bytes, mapped read-only."""
    if seg.size == 0:
        yield b""
        return
    with open(seg.log_path, "rb") as f, \
            mmap.mmap(f.fileno(), seg.size, access=mmap.ACCESS_READ) as mm:
        yield mm


class CleanedWriter:
    """Writes one cleaned segment as ``<base>.log.cleaned`` plus its two indexes."""

    def __init__(self, dir_path: str, base_offset: int, config: LogConfig) -> None:
        self.dir = dir_path
        self.base_offset = base_offset
        self.config = config
        self.size = 0
        self.next_offset = base_offset
        self._pending = bytearray()
        self._f = open(self._path(filenames.LOG, filenames.CLEANED), "wb")  # noqa: SIM115
        self._oi = OffsetIndex(self._path(filenames.INDEX, filenames.CLEANED), base_offset,
                               config.segment_index_bytes, writable=True)
        self._ti = TimeIndex(self._path(filenames.TIME_INDEX, filenames.CLEANED), base_offset,
                             config.segment_index_bytes, writable=True)
        self._since_index = 0
        self._max_ts, self._offset_of_max_ts = -1, -1
        self.aborted: list[AbortedTxn] = []     # written as the cleaned .txnindex

    @classmethod
    def empty(cls, dir_path: str, base_offset: int, config: LogConfig) -> CleanedWriter:
        writer = cls(dir_path, base_offset, config)
        writer.finish()
        return writer

    def _path(self, kind: str, suffix: str) -> str:
        return os.path.join(self.dir, filenames.filename_prefix(self.base_offset) + kind + suffix)

    def append(self, batch: bytes | bytearray, header: R.BatchHeader) -> None:
        """Add a batch; index entries as ``LogSegment`` makes them (offset = batch's last)."""
        last = header.last_offset
        max_ts = R.read_header(batch).max_timestamp
        if max_ts > self._max_ts:
            self._max_ts, self._offset_of_max_ts = max_ts, last
        if self._since_index > self.config.index_interval_bytes:
            if not self._oi.is_full:
                self._oi.append(last, self.size)
            self._ti.maybe_append(self._max_ts, self._offset_of_max_ts)
            self._since_index = 0
        self._since_index += len(batch)
        self._pending += batch
        self.size += len(batch)
        self.next_offset = last + 1
        if len(self._pending) >= _WRITE_CHUNK:
            self._f.write(self._pending)
            self._pending.clear()

    def finish(self, mtime_from: str | None = None) -> None:
        """Write out, trim and fsync every file; keep the old segment's mtime (Kafka)."""
        self._f.write(self._pending)
        self._pending.clear()
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()
        if self._max_ts >= 0:
            self._ti.maybe_append(self._max_ts, self._offset_of_max_ts, final=True)
        for index in (self._oi, self._ti):
            index.flush()
            index.close(trim=True)
            checkpoints.fsync_path(index.path)
        if self.aborted:
            txn_index = TxnIndex(self._path(filenames.TXN_INDEX, filenames.CLEANED),
                                 self.base_offset)
            for txn in self.aborted:
                txn_index.append(txn)
            checkpoints.fsync_path(txn_index.path)
        if mtime_from is not None:
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(mtime_from)
                os.utime(self._path(filenames.LOG, filenames.CLEANED),
                         ns=(st.st_atime_ns, st.st_mtime_ns))

    def rename(self, old_suffix: str, new_suffix: str) -> None:
        """Indexes first, then the log (recovery keys off the log file). A crash that
        leaves a ``.txnindex.swap`` loses it (recovery drops index swaps): the entries
        then stop filtering the kept aborted records, as before the cleaner carried them."""
        kinds: tuple[str, ...] = (filenames.INDEX, filenames.TIME_INDEX, filenames.LOG)
        if self.aborted:
            kinds = (filenames.TXN_INDEX, *kinds)
        for kind in kinds:
            os.replace(self._path(kind, old_suffix), self._path(kind, new_suffix))

    def discard(self) -> None:
        if not self._f.closed:
            self._f.close()
        for index in (self._oi, self._ti):
            index.close(trim=False)
        for kind in (filenames.LOG, filenames.INDEX, filenames.TIME_INDEX, filenames.TXN_INDEX):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path(kind, filenames.CLEANED))

