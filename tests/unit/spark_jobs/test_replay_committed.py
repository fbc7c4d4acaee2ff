"""The bulk replay's committed-only plan (``--isolation read_committed``) over a
partition written by the broker's own code: it ends at the last stable offset (an
open transaction holds it back), skips aborted transactions (.txnindex) and markers,
and read_uncommitted keeps today's behaviour (up to the HW, aborted data included)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from pathlib import Path

from protocol.records import build_batch
from spark_jobs.segments import Bounds, Segment, plan, segment_records, transactions_below
from tests.unit.broker.replication.fakes import FakeBroker, FakeClock

TP = ("t", 0)
NOW = FakeClock().now_ms


def write(b: FakeBroker, values: list[bytes], pid: int = -1, seq: int = 0,
          transactional: bool = False) -> None:
    data = build_batch([(None, v, NOW) for v in values], producer_id=pid, producer_epoch=0,
                       base_sequence=seq if pid >= 0 else -1, transactional=transactional)
    r = asyncio.run(b.replicas.appends.append_records(-1, 1000, {TP: data}))[TP]
    assert r.error == 0, r


def mark(b: FakeBroker, pid: int, commit: bool) -> None:
    asyncio.run(b.replicas.appends.append_markers(1000, pid, 0, commit, 0, [TP]))


def build(tmp_path: Path) -> tuple[Path, int]:
    b = FakeBroker(tmp_path)
    b.lead("t")
    write(b, [b"plain-0"])                                   # 0
    write(b, [b"c1-0", b"c1-1"], pid=1, transactional=True)  # 1-2
    mark(b, 1, commit=True)                                  # 3
    write(b, [b"ab-0"], pid=2, transactional=True)           # 4
    mark(b, 2, commit=False)                                 # 5
    write(b, [b"open-0"], pid=3, transactional=True)         # 6: never ended
    write(b, [b"plain-1"])                                   # 7: behind the open one
    b.replicas.partition(*TP).local_log().update_high_watermark(8)
    b.logs.shutdown()                                        # checkpoints the HW
    return tmp_path / "logs", 6


def values(tasks: list) -> list[bytes]:
    return [r.value for seg in tasks for _h, recs in segment_records(seg, Bounds())
            for r in recs]


def test_committed_only_stops_at_the_lso_and_drops_aborts(tmp_path: Path) -> None:
    log_dir, lso = build(tmp_path)
    assert transactions_below(str(log_dir / "t-0"), 8) == (lso, ((2, 4, 5),))
    tasks = plan([str(log_dir)], None, Bounds(), committed_only=True)
    assert [t.end for t in tasks] == [lso]
    assert values(tasks) == [b"plain-0", b"c1-0", b"c1-1"]
    # the plan travels to Spark's tasks as JSON (spark_jobs.replay): still the same reads
    shipped = [Segment(**d) for d in json.loads(json.dumps([asdict(t) for t in tasks]))]
    assert values(shipped) == [b"plain-0", b"c1-0", b"c1-1"]


def test_read_uncommitted_keeps_everything_below_the_hw(tmp_path: Path) -> None:
    log_dir, _ = build(tmp_path)
    tasks = plan([str(log_dir)], None, Bounds())
    assert values(tasks) == [b"plain-0", b"c1-0", b"c1-1", b"ab-0", b"open-0", b"plain-1"]
