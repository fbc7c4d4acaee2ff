"""Segment files as replay tasks: bounds, planning, and reading a segment's batches.

The bulk replay's (``spark_jobs.replay``) driver-side plan and its executors'
raw read, over ``storage``'s readers (checkpoints, file names) and
``protocol.records`` only - no Spark, no pyarrow, no network:

* ``Bounds`` / ``parse_bound`` / ``make_bounds``: ``--from`` (inclusive) and
  ``--to`` (exclusive), each an offset or a timestamp.
* ``plan(log_dirs, topics, bounds)``: every partition's checkpointed high
  watermark (HW) and log start come from its log dir's
  ``replication-offset-checkpoint`` / ``log-start-offset-checkpoint``; partition
  dirs ``<topic>-<partition>`` are listed (``-delete`` / ``-future`` dirs and
  ``.deleted``/``.cleaned``/``.swap`` files skipped), and every ``.log``
  segment becomes one ``Segment`` task covering ``[max(base, log start, --from
  offset), min(HW, --to offset))``; segments wholly outside that range are
  dropped. A partition without a checkpointed HW is skipped (nothing above the
  HW is ever exported). When several log dirs hold the same partition the one
  with the highest HW is read. ``committed_only`` (``--isolation
  read_committed``): each partition also ends at its last stable offset and the
  batches of its aborted transactions (its ``.txnindex`` entries) are skipped
  (``transactions_below``), as a read_committed consumer reads.
* ``segment_batches(seg)``: the ``.log`` file read sequentially in chunks and
  walked with ``protocol.records.iter_batches``, stopping at the first batch
  whose base offset reaches the task's end, at a torn tail or at preallocated
  zeros. ``segment_records`` decodes them one Python object per record (the
  produce-to-topic path); ``spark_jobs.replay_arrow.arrow_batches`` decodes
  them to Arrow (the Parquet paths).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from protocol import records
from storage import checkpoints, filenames
from storage.txn_index import TxnIndex

CHUNK = 8 << 20            # bytes read from a segment at a time
NO_LIMIT = (1 << 63) - 1


# -- bounds --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bounds:
    """Offsets [from_offset, to_offset) and timestamps [from_ts, to_ts), all inclusive-exclusive."""

    from_offset: int = 0
    to_offset: int = NO_LIMIT
    from_ts: int | None = None
    to_ts: int | None = None

    def keeps_timestamp(self, ts: int) -> bool:
        return ((self.from_ts is None or ts >= self.from_ts)
                and (self.to_ts is None or ts < self.to_ts))


def parse_bound(text: str) -> tuple[str, int]:
    """("offset", n) for an integer; ("timestamp", ms) for ``ts:<ms>`` or ISO-8601."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return "offset", int(text)
    if text.startswith("ts:"):
        return "timestamp", int(text[3:])
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither an offset nor a timestamp (ISO-8601 or ts:<ms>)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return "timestamp", round(when.timestamp() * 1000)


def make_bounds(start: str | None, end: str | None) -> Bounds:
    values: dict[str, int] = {}
    for text, side in ((start, "from"), (end, "to")):
        if text is not None:
            kind, n = parse_bound(text)
            values[f"{side}_{'offset' if kind == 'offset' else 'ts'}"] = n
    return Bounds(**values)


# -- planning ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Segment:
    """One task: the records [start, end) of one segment file, as a plain picklable value."""

    topic: str
    partition: int
    path: str
    base_offset: int
    start: int
    end: int
    size: int      # bytes of the batches the task reads (the whole file when no bound cuts it)
    # committed-only replays: the partition's aborted transactions (producer id, first
    # offset, last offset) from its .txnindex files, whose data batches are skipped
    aborted: tuple[tuple[int, int, int], ...] = ()

    def drops(self, header: records.BatchHeader) -> bool:
        """A data batch of an aborted transaction (committed-only replays)."""
        return header.is_transactional and any(
            pid == header.producer_id and first <= header.base_offset <= last
            for pid, first, last in self.aborted)


def _partition_dirs(log_dir: str, topics: set[str] | None) -> Iterator[tuple[str, int, str]]:
    for name in sorted(os.listdir(log_dir)):
        full = os.path.join(log_dir, name)
        if not os.path.isdir(full) or name.endswith((filenames.DELETE_DIR_SUFFIX,
                                                     filenames.FUTURE_DIR_SUFFIX)):
            continue
        try:
            topic, partition = filenames.parse_partition_dir(name)
        except ValueError:
            continue
        if topics is None or topic in topics:
            yield topic, partition, full


def _segment_files(part_dir: str) -> list[tuple[int, str]]:
    """(base offset, path) of the live ``.log`` files, by base offset."""
    found = []
    for name in os.listdir(part_dir):
        if name.endswith(filenames.LOG):  # ".log.deleted" etc. do not end in ".log"
            try:
                found.append((filenames.parse_base_offset(name), os.path.join(part_dir, name)))
            except ValueError:
                continue
    return sorted(found)


def plan(log_dirs: list[str], topics: set[str] | None, bounds: Bounds, *,
         committed_only: bool = False) -> list[Segment]:
    """Segment tasks for every partition below its checkpointed high watermark; with
    ``committed_only`` below its last stable offset too, aborted transactions dropped
    (``transactions_below``)."""
    best: dict[tuple[str, int], tuple[int, int, str]] = {}  # (hw, log start, dir)
    for log_dir in log_dirs:
        hws = checkpoints.read_offsets(os.path.join(log_dir, filenames.REPLICATION_CHECKPOINT))
        starts = checkpoints.read_offsets(os.path.join(log_dir, filenames.LOG_START_CHECKPOINT))
        for topic, partition, part_dir in _partition_dirs(log_dir, topics):
            hw = hws.get((topic, partition))
            if hw is None:
                print(f"replay: {topic}-{partition} in {log_dir} has no checkpointed high "
                      "watermark; skipped", file=sys.stderr)
                continue
            seen = best.get((topic, partition))
            if seen is None or hw > seen[0]:
                best[(topic, partition)] = (hw, starts.get((topic, partition), 0), part_dir)
    tasks: list[Segment] = []
    for (topic, partition), (hw, log_start, part_dir) in sorted(best.items()):
        lo = max(log_start, bounds.from_offset)
        hi = min(hw, bounds.to_offset)
        aborted: tuple[tuple[int, int, int], ...] = ()
        if committed_only:
            lso, aborted = transactions_below(part_dir, hw)
            hi = min(hi, lso)
        files = _segment_files(part_dir)
        for i, (base, path) in enumerate(files):
            nxt = files[i + 1][0] if i + 1 < len(files) else NO_LIMIT
            start, end = max(lo, base), min(hi, nxt)
            if start < end:
                size = os.path.getsize(path) if start == base and end == nxt \
                    else _bytes_between(path, start, end)
                tasks.append(Segment(topic, partition, path, base, start, end, size, aborted))
    return tasks


def _headers(path: str) -> Iterator[records.BatchHeader]:
    """The batch headers of a segment file, a walk that seeks from one to the next
    (stops at a torn tail or preallocated zeros)."""
    with open(path, "rb") as f:
        pos = 0
        while True:
            f.seek(pos)
            raw = f.read(records.HEADER_SIZE)
            if len(raw) < records.HEADER_SIZE:
                return
            header = records.read_header(raw)
            if header.batch_length < records.MIN_BATCH_LENGTH:
                return
            yield header
            pos += header.size


def _bytes_between(path: str, start: int, end: int) -> int:
    """Bytes of the batches of a segment holding offsets in [start, end), for the
    segments a bound cuts."""
    total = 0
    for header in _headers(path):
        if header.base_offset >= end:
            break
        if header.last_offset >= start:
            total += header.size
    return total


def transactions_below(part_dir: str, hw: int) -> tuple[int, tuple[tuple[int, int, int], ...]]:
    """(last stable offset, aborted transactions) of a partition below its HW, offline:
    the LSO is the first offset of the earliest transaction with no marker below the
    HW (the HW when none is open), found by walking the batch headers; the aborted
    transactions are the entries of its ``.txnindex`` files (Kafka's read_committed
    fetch uses the same index)."""
    open_at: dict[int, int] = {}
    for _base, path in _segment_files(part_dir):
        for header in _headers(path):
            if header.base_offset >= hw:
                break
            if not header.is_transactional:
                continue
            if header.is_control:
                open_at.pop(header.producer_id, None)
            else:
                open_at.setdefault(header.producer_id, header.base_offset)
    aborted = []
    for name in sorted(os.listdir(part_dir)):
        if name.endswith(filenames.TXN_INDEX):
            try:
                base = filenames.parse_base_offset(name)
            except ValueError:
                continue
            aborted += [(e.producer_id, e.first_offset, e.last_offset)
                        for e in TxnIndex(os.path.join(part_dir, name), base).entries()]
    return min(open_at.values(), default=hw), tuple(aborted)


# -- reading a segment ------------------------------------------------------------------------

def segment_batches(seg: Segment) -> Iterator[tuple[Any, int, records.BatchHeader]]:
    """(buffer, position, header) of each batch of ``seg`` that may hold offsets in [start, end).

    Reads the file front to back in CHUNK pieces; a batch cut by a chunk
    boundary is carried into the next piece. Stops at the first batch at or
    beyond ``end``, at end of file, and at a header whose length cannot be a
    batch (preallocated zeros or a torn tail that recovery has not cut yet).
    """
    with open(seg.path, "rb", buffering=0) as f:
        carry = b""
        while True:
            chunk = f.read(CHUNK)
            buf = carry + chunk if carry else chunk
            done = 0
            for pos, header in records.iter_batches(buf):
                if header.base_offset >= seg.end:
                    return
                done = pos + header.size
                if header.last_offset >= seg.start and not (seg.aborted and seg.drops(header)):
                    yield buf, pos, header
            rest = len(buf) - done
            if not chunk:
                return
            if rest >= records.HEADER_SIZE and \
                    records.read_header(buf, done).batch_length < records.MIN_BATCH_LENGTH:
                return
            carry = buf[done:]


def may_hold_times(header: records.BatchHeader, bounds: Bounds) -> bool:
    """False when no record of the batch can be at or after --from's timestamp:
    every CreateTime record is <= the batch's maxTimestamp (LogAppendTime ones equal it)."""
    return bounds.from_ts is None or header.max_timestamp >= bounds.from_ts


def segment_records(seg: Segment, bounds: Bounds
                    ) -> Iterator[tuple[records.BatchHeader, list[records.Record]]]:
    """Per data batch, its records inside the task's offsets and the timestamp bounds."""
    by_time = bounds.from_ts is not None or bounds.to_ts is not None
    for buf, pos, header in segment_batches(seg):
        if header.is_control:
            continue
        if not may_hold_times(header, bounds):
            continue
        kept = [r for r in records.iter_records(buf, pos)
                if seg.start <= r.offset < seg.end
                and (not by_time or bounds.keeps_timestamp(r.timestamp))]
        if kept:
            yield header, kept
