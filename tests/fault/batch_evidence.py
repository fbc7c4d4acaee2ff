"""The batches on disk around offsets a checker found wrong, for a failure message.

A duplicate found by a checker says two offsets hold one value; whether the broker
appended one retry twice (same producer epoch and sequence: its de-duplication
failed) or the client sent the value again under a new epoch (an epoch bump with the
first copy possibly persisted) shows only in the batch headers. ``batches_around``
reads them straight from each broker's copy of the partition (``pybroker dump-log``'s
batch line), so that a failure in CI carries what is needed to find its cause.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from protocol.records import iter_batches
from storage import filenames
from tests.fault.queue_checker import QueueReport
from tools.dump_log_format import batch_line

MARGIN = 3          # batches shown before and after the offsets asked about


def batches_around(partition_dir: str, offsets: Iterable[int], margin: int = MARGIN) -> list[str]:
    """The batch lines of ``partition_dir``'s segments holding ``offsets``, with up to
    ``margin`` batches either side; ["no such directory"] when there is none."""
    if not os.path.isdir(partition_dir):
        return [f"{partition_dir}: no such directory"]
    wanted = sorted(set(offsets))
    lo, hi = wanted[0], wanted[-1]
    headers = []
    for name in sorted(n for n in os.listdir(partition_dir) if n.endswith(filenames.LOG)):
        with open(os.path.join(partition_dir, name), "rb") as f:
            data = f.read()
        headers.extend((name, pos, h) for pos, h in iter_batches(data))
    hit = [i for i, (_, _, h) in enumerate(headers)
           if h.base_offset <= hi and h.base_offset + h.last_offset_delta >= lo]
    if not hit:
        return [f"{partition_dir}: no batch holds offsets {lo}..{hi}"]
    first, last = max(0, hit[0] - margin), min(len(headers), hit[-1] + margin + 1)
    return [f"{name} {batch_line(h, pos, True)}" for name, pos, h in headers[first:last]]


def describe(log_dirs: Sequence[tuple[int, Path]], topic: str, partition: int,
             offsets: Iterable[int]) -> str:
    """Per broker (id, log dir), the batches around ``offsets`` of ``topic-partition``."""
    offsets = list(offsets)
    name = filenames.partition_dir_name(topic, partition)
    out = []
    for broker_id, log_dir in log_dirs:
        out.append(f"broker {broker_id}, {name} around offsets {offsets}:")
        out.extend("  " + line for line in batches_around(str(log_dir / name), offsets))
    return "\n".join(out)


def duplicates(report: QueueReport, log_dirs: Sequence[tuple[int, Path]], topic: str,
               limit: int = 3) -> str:
    """``describe`` for the first ``limit`` duplicate cases of a queue checker's report
    ("" when it has none)."""
    parts = []
    for case in report.cases["duplicate"][:limit]:
        offsets = [s.offset for s in case.records if s.offset is not None]
        if offsets and isinstance(case.partition, int):
            parts.append(describe(log_dirs, topic, case.partition, offsets))
    return "\n".join(parts)
