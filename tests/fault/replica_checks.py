"""Checks of the replicas on disk while the cluster runs (issue 16, item 4): the
replicas of a partition are byte-identical below its high watermark, and their
leader-epoch caches agree there.

Both read the partition directories straight from the brokers' log dirs (the test
process shares the machine's filesystem with every virtual host), below a HW read
from the leader first: bytes below a HW no longer change on any replica in the ISR,
so the load may go on meanwhile.

Leader-epoch caches (``leader-epoch-checkpoint``: "0\\n<n>\\n<epoch> <start offset>"
lines) agree when, below the HW, they map every offset to the same epoch. Entries
that cover no offset (a leader elected that appended nothing before the next one:
its start equals the next entry's start) are dropped before comparing, since only
the replica that was that leader records them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

from storage import checkpoints, filenames
from tests.fault import checker

LogDirs = Callable[[int], Sequence[Path]]       # broker id -> its log dirs


def partition_path(dirs: Sequence[Path], topic: str, p: int) -> str | None:
    """The replica's directory in whichever log dir holds it."""
    name = filenames.partition_dir_name(topic, p)
    for d in dirs:
        path = os.path.join(d, name)
        if os.path.isdir(path):
            return path
    return None


def epoch_ranges(entries: Sequence[tuple[int, int]], hw: int) -> list[tuple[int, int]]:
    """The (epoch, start) entries that cover at least one offset below ``hw``."""
    out = []
    for (e, start), nxt in zip(entries, [*(s for _, s in entries[1:]), None]):
        if start >= hw or (nxt is not None and nxt <= start):
            continue
        out.append((e, start))
    return out


def compare_epoch_caches(caches: dict[int, list[tuple[int, int]]], hw: int,
                         label: str = "") -> list[str]:
    """Problems: replicas whose caches map an offset below ``hw`` to different epochs,
    or whose epochs or start offsets do not increase."""
    problems = []
    for r, entries in caches.items():
        if any(a[0] >= b[0] or a[1] > b[1] for a, b in pairwise(entries)):
            problems.append(f"{label} replica {r}: epochs or offsets do not increase: {entries}")
    norm = {r: epoch_ranges(e, hw) for r, e in caches.items()}
    if len(set(map(tuple, norm.values()))) > 1:
        problems.append(f"{label} leader-epoch caches differ below HW {hw}: "
                        + "; ".join(f"replica {r}: {e}" for r, e in sorted(norm.items())))
    return problems


# ListOffsets answers of a leader elected a moment ago: OFFSET_NOT_AVAILABLE (78) until
# its HW reaches the start of its epoch (KIP-207), NOT_LEADER_OR_FOLLOWER (6),
# LEADER_NOT_AVAILABLE (5) and FENCED_LEADER_EPOCH (74) while the metadata moves on.
# The check needs a HW no replica can still lose, so it waits for one (SETTLE_S at most).
SETTLING = frozenset({5, 6, 74, 78})
SETTLE_S = 15.0


def leader_hw(fc: Any, topic: str, p: int) -> tuple[Any, int, int]:
    """(the partition's metadata, its leader's ListOffsets error, the HW)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        md = fc.metadata(topic)[p]
        if md.leader < 0:
            err, hw = -1, -1
        else:
            err, hw = fc.list_offset(md.leader, topic, p)
        if (err not in SETTLING and md.leader >= 0) or time.monotonic() > deadline:
            return md, err, hw
        time.sleep(0.2)


def check_partition(fc: Any, topic: str, p: int, log_dirs: LogDirs) -> list[str]:
    """Both checks for one partition, against the HW its leader reports now."""
    md, err, hw = leader_hw(fc, topic, p)
    if md.leader < 0:
        return [f"p{p}: no leader"]
    if err:
        return [f"p{p}: ListOffsets from leader {md.leader}: error {err}"]
    label = f"p{p}:"
    batches, caches, problems = {}, {}, []
    for r in md.replicas:
        path = partition_path(log_dirs(r), topic, p)
        if path is None:
            problems.append(f"{label} replica {r}: no directory")
            continue
        batches[r] = checker.read_partition_dir(path)
        try:
            caches[r] = checkpoints.read_epochs(os.path.join(path, filenames.LEADER_EPOCH_CHECKPOINT))
        except (OSError, checkpoints.CheckpointError) as e:
            problems.append(f"{label} replica {r}: leader-epoch checkpoint: {e}")
    problems += checker.compare_replica_logs(batches, hw, label=label)
    problems += compare_epoch_caches(caches, hw, label=label)
    return problems


def check_replicas(fc: Any, topic: str, partitions: Sequence[int],
                   log_dirs: LogDirs) -> list[str]:
    return [pr for p in partitions for pr in check_partition(fc, topic, p, log_dirs)]


__all__ = ["check_partition", "check_replicas", "compare_epoch_caches", "epoch_ranges",
           "partition_path"]
