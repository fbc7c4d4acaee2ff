"""The bytes an append puts into a segment's .log file, and the writes that put them.

``write_batches`` writes a request's batches at a position, patched as the log wants
them: baseOffset (the leader assigns offsets) and partitionLeaderEpoch lie outside the
CRC, so only each batch's 61-byte header is copied and patched and the record bytes go
out of the caller's buffer as they are, in one pwritev (no copy of a 1 MB produce
request); LogAppendTime rewrites maxTimestamp and the attributes and re-CRCs, so that
case patches a copy of the whole data. The caller's data is never changed.

``pwrite_all`` / ``pwritev_all``: a short write is finished for the rest, so a full disk
raises its own OSError (ENOSPC) rather than returning a count.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from protocol import records
from protocol.records import HEADER_SIZE, BatchHeader

try:
    _IOV_MAX = max(16, os.sysconf("SC_IOV_MAX"))     # buffers one pwritev takes
except (ValueError, OSError):
    _IOV_MAX = 1024


def write_batches(fd: int, data: bytes | bytearray | memoryview, position: int,
                  batches: list[tuple[int, BatchHeader]], base_offsets: list[int] | None,
                  leader_epoch: int | None, append_time: int | None
                  ) -> list[tuple[int, BatchHeader]]:
    """Write ``data`` (whole ``batches``, at their relative positions) at ``position``:
    each batch's baseOffset from ``base_offsets`` (None: kept), ``leader_epoch``
    stamped when given, LogAppendTime ``append_time`` when given.
    -> (relative position, the header as written) per batch."""
    written: list[tuple[int, BatchHeader]] = []
    if append_time is not None:
        buf = bytearray(data)
        for i, (rel, header) in enumerate(batches):
            records.patch_base_offset(buf, rel, header.base_offset if base_offsets is None
                                      else base_offsets[i])
            if leader_epoch is not None:
                records.patch_leader_epoch(buf, rel, leader_epoch)
            records.set_log_append_time(buf, rel, append_time)
            written.append((rel, records.read_header(buf, rel)))
        pwrite_all(fd, buf, position)
        return written
    if base_offsets is None and leader_epoch is None:
        pwrite_all(fd, data, position)
        return list(batches)
    view = memoryview(data)
    chunks: list[Any] = []
    cursor = 0
    for i, (rel, _header) in enumerate(batches):
        head = bytearray(view[rel:rel + HEADER_SIZE])
        if base_offsets is not None:
            records.patch_base_offset(head, 0, base_offsets[i])
        if leader_epoch is not None:
            records.patch_leader_epoch(head, 0, leader_epoch)
        if rel > cursor:
            chunks.append(view[cursor:rel])
        chunks.append(head)
        cursor = rel + HEADER_SIZE
        written.append((rel, records.read_header(head, 0)))
    if cursor < len(view):
        chunks.append(view[cursor:])
    pwritev_all(fd, chunks, position)
    return written


def pwritev_all(fd: int, chunks: list[Any], position: int) -> None:
    """pwritev ``chunks`` (buffers) at ``position``, at most IOV_MAX at a time."""
    for first in range(0, len(chunks), _IOV_MAX):
        group = chunks[first:first + _IOV_MAX]
        total = sum(memoryview(c).nbytes for c in group)
        done = os.pwritev(fd, group, position)
        if done < total:
            rest = b"".join(bytes(c) for c in group)
            pwrite_all(fd, memoryview(rest)[done:], position + done)
        position += total


def pwrite_all(fd: int, buf: bytes | bytearray | memoryview, position: int) -> None:
    """pwrite all of ``buf`` at ``position``."""
    done = os.pwrite(fd, buf, position)
    if done == len(buf):
        return
    view = memoryview(buf)
    while done < len(view):
        n = os.pwrite(fd, view[done:], position + done)
        if n <= 0:
            raise OSError(errno.EIO, f"pwrite wrote nothing at {position + done}")
        done += n
