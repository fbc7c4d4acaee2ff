"""Producer-state snapshot files: ``<20-digit offset>.snapshot`` in a partition
directory, in Kafka's format (``ProducerStateManager`` snapshot version 1), holding
the idempotent/transactional producer state of every offset below the file's offset,
so that opening the log replays only the batches after it.

File layout (big-endian):

    version                  int16   1
    crc                      uint32  CRC-32C of every byte after this field
    producer_entries         int32 count, then per producer:
        producer_id              int64
        epoch                    int16
        last_sequence            int32   of the producer's last batch
        last_offset              int64   last offset of that batch
        offset_delta             int32   last_offset - the batch's first offset
        timestamp                int64   of that batch (max timestamp)
        coordinator_epoch        int32   of the producer's last marker (-1: none)
        current_txn_first_offset int64   first offset of its open transaction (-1: none)

As in Kafka, only each producer's last batch is kept: after a restart a retry of that
batch is recognised as a duplicate, older in-flight retries are not.

Files are written whole to ``<name>.tmp``, fsynced and renamed (a crash leaves the old
set or the new one; recovery deletes stray ``.tmp`` files). This module knows the files
only; ``broker.replication.producer_state`` decides what goes in them and when.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from crc32c import crc32c

from storage import filenames
from storage.checkpoints import fsync_dir

VERSION = 1
_HEADER = struct.Struct(">hIi")        # version, crc, entry count
_CRC_FROM = 6                          # the crc covers the bytes from the entry count on
_ENTRY = struct.Struct(">qhiqiqiq")


class SnapshotError(ValueError):
    """A snapshot file that cannot be trusted (short, wrong version, bad CRC)."""


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1


def snapshot_file(dir_path: str, offset: int) -> str:
    return os.path.join(dir_path, filenames.filename_prefix(offset) + filenames.SNAPSHOT)


def encode(entries: list[SnapshotEntry]) -> bytes:
    body = bytearray(_HEADER.size + _ENTRY.size * len(entries))
    struct.pack_into(">i", body, _CRC_FROM, len(entries))
    at = _HEADER.size
    for e in entries:
        _ENTRY.pack_into(body, at, e.producer_id, e.epoch, e.last_sequence, e.last_offset,
                         e.offset_delta, e.timestamp, e.coordinator_epoch,
                         e.current_txn_first_offset)
        at += _ENTRY.size
    struct.pack_into(">hI", body, 0, VERSION, crc32c(bytes(body[_CRC_FROM:])))
    return bytes(body)


def decode(data: bytes) -> list[SnapshotEntry]:
    if len(data) < _HEADER.size:
        raise SnapshotError(f"snapshot of {len(data)} bytes is shorter than its header")
    version, crc, count = _HEADER.unpack_from(data, 0)
    if version != VERSION:
        raise SnapshotError(f"snapshot version {version}, only {VERSION} is known")
    if crc32c(data[_CRC_FROM:]) != crc:
        raise SnapshotError("snapshot CRC mismatch")
    if count < 0 or len(data) != _HEADER.size + count * _ENTRY.size:
        raise SnapshotError(f"snapshot of {len(data)} bytes cannot hold {count} entries")
    return [SnapshotEntry(*_ENTRY.unpack_from(data, _HEADER.size + i * _ENTRY.size))
            for i in range(count)]


def write(dir_path: str, offset: int, entries: list[SnapshotEntry], *, sync: bool = True
          ) -> str:
    """Write the snapshot for ``offset`` atomically; -> its path."""
    path = snapshot_file(dir_path, offset)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(encode(entries))
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if sync:
        fsync_dir(dir_path)
    return path


def read(path: str) -> list[SnapshotEntry]:
    with open(path, "rb") as f:
        return decode(f.read())


def offsets(dir_path: str) -> list[int]:
    """The offsets of the snapshot files in ``dir_path``, ascending."""
    out = []
    for name in os.listdir(dir_path):
        if name.endswith(filenames.SNAPSHOT):
            try:
                out.append(filenames.parse_base_offset(name))
            except ValueError:
                continue
    return sorted(out)


def delete(dir_path: str, *, above: int | None = None, below: int | None = None,
           keep_latest: int | None = None) -> list[int]:
    """Delete the snapshots with offset > ``above``, < ``below``, and all but the
    ``keep_latest`` newest of the rest. -> the offsets deleted."""
    have = offsets(dir_path)
    doomed = {o for o in have if (above is not None and o > above)
              or (below is not None and o < below)}
    left = [o for o in have if o not in doomed]
    if keep_latest is not None and len(left) > keep_latest:
        doomed.update(left[:len(left) - keep_latest])
    for o in sorted(doomed):
        try:
            os.remove(snapshot_file(dir_path, o))
        except FileNotFoundError:
            pass
    return sorted(doomed)


def latest_at_or_below(dir_path: str, offset: int) -> tuple[int, list[SnapshotEntry]] | None:
    """The newest readable snapshot at or below ``offset`` (unreadable ones are deleted,
    as Kafka does) -> (its offset, entries), or None."""
    for o in reversed([o for o in offsets(dir_path) if o <= offset]):
        try:
            return o, read(snapshot_file(dir_path, o))
        except (OSError, SnapshotError):
            try:
                os.remove(snapshot_file(dir_path, o))
            except OSError:
                pass
    return None


__all__ = ["SnapshotEntry", "SnapshotError", "decode", "delete", "encode",
           "latest_at_or_below", "offsets", "read", "snapshot_file", "write"]
