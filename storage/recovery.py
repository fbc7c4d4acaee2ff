"""Loading a partition directory's segments, with crash recovery (Kafka ``LogLoader``).

Steps, in order:

1. Leftovers of interrupted operations, as Kafka handles them: ``*.deleted``
   files are removed (a deletion was under way); ``*.cleaned`` files are
   removed (compaction output never swapped in) and remember the smallest
   base offset they had; index ``*.swap`` files are removed (indexes are
   rebuilt); a log ``*.swap`` at or above that smallest cleaned offset is
   removed (its swap never started), otherwise the swap is completed: the
   segments it replaces (base offsets inside its offset range) are deleted and
   it is renamed to ``.log``. ``*.tmp`` checkpoint files are removed, and index
   files with no ``.log`` beside them.
2. Segments are listed from the directory (one ``scandir``, sizes from it);
   nothing else is opened for sealed segments.
3. Without the clean-shutdown marker, every segment from the one holding the
   recovery point onwards is revalidated (``LogSegment.recover``: CRC, sizes,
   magic, monotonic offsets), its torn/garbage/zeroed tail cut and its indexes
   rebuilt; if a segment had to be cut, every later segment is deleted, since
   the log must be contiguous.
4. The last segment is activated (created empty at the log start offset when
   the directory has none).
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field

from protocol import records
from protocol.records import BatchHeader
from storage import filenames
from storage.config import LogConfig
from storage.leader_epoch import LeaderEpochCache
from storage.segment import LogSegment

_INDEX_SUFFIXES = (filenames.INDEX, filenames.TIME_INDEX, filenames.TXN_INDEX)


@dataclass
class LoadResult:
    segments: list[LogSegment]
    recovered_segments: int = 0
    truncated_bytes: int = 0
    deleted_files: list[str] = field(default_factory=list)


def load_segments(dir_path: str, config: LogConfig, *, recovery_point: int,
                  log_start_offset: int, clean_shutdown: bool, now_ms: int,
                  epoch_cache: LeaderEpochCache | None = None) -> LoadResult:
    result = LoadResult(segments=[])
    _remove_temp_files_and_complete_swaps(dir_path, result)
    segments = _list_segments(dir_path, config, now_ms, result)
    if not clean_shutdown:
        segments = _recover(segments, recovery_point, epoch_cache, result)
    if not segments:
        segments = [LogSegment.create(dir_path, log_start_offset, config, now_ms)]
    else:
        segments[-1].activate()
    result.segments = segments
    return result


def _remove_temp_files_and_complete_swaps(dir_path: str, result: LoadResult) -> None:
    names = os.listdir(dir_path)
    min_cleaned = None
    swaps: list[str] = []
    for name in names:
        path = os.path.join(dir_path, name)
        if name.endswith((filenames.DELETED, ".tmp")):
            _remove(path, result)
        elif name.endswith(filenames.CLEANED):
            base = _base_or_none(name)
            if base is not None:
                min_cleaned = base if min_cleaned is None else min(min_cleaned, base)
            _remove(path, result)
        elif name.endswith(filenames.SWAP):
            swaps.append(name)
    for name in swaps:
        path = os.path.join(dir_path, name)
        base = _base_or_none(name)
        if name[:-len(filenames.SWAP)].endswith(_INDEX_SUFFIXES) or base is None:
            _remove(path, result)
        elif min_cleaned is not None and base >= min_cleaned:
            _remove(path, result)  # the cleaner died before the swap began
        else:
            _complete_swap(dir_path, path, base, result)


def _complete_swap(dir_path: str, swap_path: str, base: int, result: LoadResult) -> None:
    """Replace the segments inside the swap file's offset range with it."""
    end = _next_offset_of_file(swap_path, base)
    for name in os.listdir(dir_path):
        if not name.endswith(filenames.LOG):
            continue
        other = _base_or_none(name)
        if other is not None and base <= other < end:
            for suffix in (filenames.LOG,) + _INDEX_SUFFIXES:
                _remove(filenames.log_file(dir_path, other)[:-len(filenames.LOG)] + suffix, result)
    for suffix in _INDEX_SUFFIXES:  # indexes of the swapped segment are rebuilt lazily
        _remove(filenames.log_file(dir_path, base)[:-len(filenames.LOG)] + suffix, result)
    os.replace(swap_path, filenames.log_file(dir_path, base))


def _next_offset_of_file(path: str, base: int) -> int:
    size = os.path.getsize(path)
    if size == 0:
        return base
    next_offset = base
    with open(path, "rb") as f, mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as mm:
        for _pos, header in records.iter_batches(mm):
            next_offset = header.next_offset
    return next_offset


def _list_segments(dir_path: str, config: LogConfig, now_ms: int,
                   result: LoadResult) -> list[LogSegment]:
    logs: dict[int, int] = {}
    indexes: list[tuple[int, str]] = []
    with os.scandir(dir_path) as entries:
        for entry in entries:
            name = entry.name
            base = _base_or_none(name)
            if base is None:
                continue
            if name.endswith(filenames.LOG):
                logs[base] = entry.stat().st_size
            elif name.endswith(_INDEX_SUFFIXES):
                indexes.append((base, entry.path))
    for base, path in indexes:
        if base not in logs:
            _remove(path, result)  # orphaned index (Kafka deletes these too)
    return [LogSegment(dir_path, base, config, size=logs[base], created_ms=now_ms)
            for base in sorted(logs)]


def _recover(segments: list[LogSegment], recovery_point: int,
             epoch_cache: LeaderEpochCache | None, result: LoadResult) -> list[LogSegment]:
    """Revalidate the segments holding offsets >= ``recovery_point``.

    The leader-epoch cache is rebuilt over the same range from the batches
    themselves: cut at the first recovered segment's base (entries from there on
    may be unsynced, or name offsets recovery cuts off), then an entry for each
    batch whose epoch is above the latest (Kafka's rule). Assigning every batch's
    epoch instead would re-start an epoch that began before the cut at the first
    recovered batch: ``assign`` drops every entry of an equal or later epoch, so a
    crash with the checkpoint intact turned "epoch 10 starts at 4000" into
    "starts at 4881" (the recovery point), and OffsetForLeaderEpoch answers for
    epoch 9 then said 4881 (found by tests/fault/net_campaign.py).
    """
    def assign_epoch(header: BatchHeader) -> None:
        if epoch_cache is not None and header.partition_leader_epoch > epoch_cache.latest_epoch:
            epoch_cache.assign(header.partition_leader_epoch, header.base_offset)

    start = 0
    for i, seg in enumerate(segments):
        if seg.base_offset <= recovery_point:
            start = i
    if epoch_cache is not None and start < len(segments):
        epoch_cache.truncate_from_end(segments[start].base_offset)
    for i in range(start, len(segments)):
        truncated = segments[i].recover(assign_epoch)
        result.recovered_segments += 1
        result.truncated_bytes += truncated
        if truncated and i + 1 < len(segments):
            for later in segments[i + 1:]:
                result.deleted_files.append(later.log_path)
                later.delete()
            return segments[:i + 1]
    return segments


def _base_or_none(name: str) -> int | None:
    try:
        return filenames.parse_base_offset(name)
    except ValueError:
        return None


def _remove(path: str, result: LoadResult) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    result.deleted_files.append(path)
