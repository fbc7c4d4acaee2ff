"""Kafka's small text checkpoint files, written atomically.

Offset checkpoints (``recovery-point-offset-checkpoint``,
``replication-offset-checkpoint``, ``log-start-offset-checkpoint``)::

    0                      version
    2                      number of entries
    my-topic 0 1234        "topic partition offset", one per line
    other 3 0

``leader-epoch-checkpoint`` (per partition) has the same shape with
"epoch startOffset" lines. Writes go to ``<file>.tmp``, which is fsync'd and
renamed over the file, and the directory is fsync'd, so a reader sees the old
or the new content, never a mix.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

VERSION = 0


class CheckpointError(Exception):
    """A checkpoint file is malformed."""


def write_lines_atomically(path: str, lines: Iterable[str], sync: bool = True) -> None:
    """Replace ``path`` by tmp file + rename. ``sync=False`` skips both fsyncs: the
    caller must ``sync_file`` before it relies on the content surviving a crash
    (until then a crash leaves the old file or the new one)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if sync:
        fsync_dir(os.path.dirname(path) or ".")


def sync_file(path: str) -> None:
    """fsync ``path`` and its directory (makes an earlier unsynced replace durable)."""
    fsync_path(path)
    fsync_dir(os.path.dirname(path) or ".")


def fsync_path(path: str) -> None:
    """fsync a file or directory by name (the storage layer's one way to do it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str) -> None:
    """fsync a directory: makes creates, renames and deletes in it durable."""
    fsync_path(path)


def _read_entries(path: str, fields: int) -> list[list[str]]:
    """The entry lines of a versioned checkpoint, split; [] when the file is absent."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    if len(lines) < 2:
        raise CheckpointError(f"{path}: missing version or count line")
    if lines[0].strip() != str(VERSION):
        raise CheckpointError(f"{path}: unrecognised version {lines[0]!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path}: bad count line {lines[1]!r}") from None
    entries = [line.split() for line in lines[2:] if line.strip()]
    if len(entries) != count or any(len(e) != fields for e in entries):
        raise CheckpointError(f"{path}: expected {count} entries of {fields} fields")
    return entries


def write_offsets(path: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Write ``{(topic, partition): offset}`` in Kafka's format."""
    lines = [str(VERSION), str(len(offsets))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
    write_lines_atomically(path, lines)


def read_offsets(path: str) -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}``; {} when the file does not exist."""
    try:
        return {(t, int(p)): int(o) for t, p, o in _read_entries(path, 3)}
    except ValueError as exc:
        raise CheckpointError(f"{path}: {exc}") from None


def write_epochs(path: str, entries: Iterable[tuple[int, int]], sync: bool = True) -> None:
    """Leader-epoch checkpoint: (epoch, start offset) pairs in order."""
    items = list(entries)
    write_lines_atomically(path, [str(VERSION), str(len(items))]
                           + [f"{epoch} {offset}" for epoch, offset in items], sync)


def read_epochs(path: str) -> list[tuple[int, int]]:
    try:
        return [(int(e), int(o)) for e, o in _read_entries(path, 2)]
    except ValueError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
