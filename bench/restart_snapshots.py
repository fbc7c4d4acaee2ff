"""Reopening a partition that holds idempotent data, with producer snapshots against
without: what a broker restart spends on producer state (issue 14).

    python bench/restart_snapshots.py [--size-mb 1024] [--producers 50] [--runs 5]
                                      [--batch-kb 16] [--segment-mb 1024]

One partition directory in a temp dir is filled through the broker's own storage and
replication code (LogManager + ReplicaManager, as leader): ``--size-mb`` of
idempotent batches of ``--batch-kb`` (1 KiB records) from ``--producers`` producer
ids in turn, segments of ``--segment-mb`` (Kafka's default 1 GiB). Then, after a clean
shutdown, it is reopened ``--runs`` times each way, alternating:

- with snapshots: the producer state comes from the ``.snapshot`` written at the
  shutdown (and at each roll), and only the batches after it are read;
- without: the ``.snapshot`` files are deleted first, so every batch header of the
  log is read to rebuild it (what pybroker did before snapshots).

Timed: LogManager.startup (opening the log, a clean-shutdown recovery) plus becoming
leader (attaching the log, rebuilding producer state) — the part of a broker restart
that depends on the data; the process start and ZooKeeper registration do not.
Each reopen checks that every producer's state came back. Medians; the ratio is
without / with.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from _env import Figures, command_line  # type: ignore[import-not-found]

from broker.replication.partition_state import PartitionState
from broker.replication.replica_manager import ReplicaManager
from protocol.records import build_batch
from storage import producer_snapshot
from storage.config import LogConfig
from storage.log_manager import LogManager

TOPIC = "bench-restart"
TOPIC_ID = uuid.uuid4()
RECORD = 1024


def open_partition(log_dir: Path, config: LogConfig, epoch: int) -> tuple[LogManager,
                                                                          ReplicaManager]:
    logs = LogManager([str(log_dir)], config)
    logs.startup()
    rm = ReplicaManager(1, logs)
    errors = rm.become_leader_or_follower(epoch, [PartitionState(
        TOPIC, 0, TOPIC_ID, epoch, 1, epoch, (1,), 0, (1,), is_new=epoch == 1)])
    assert not any(errors.values()), errors
    return logs, rm


def fill(log_dir: Path, config: LogConfig, size: int, producers: int, batch_kb: int) -> int:
    """-> batches written."""
    logs, rm = open_partition(log_dir, config, 1)
    per_batch = max(1, batch_kb * 1024 // RECORD)
    value = bytes(RECORD)
    now = int(time.time() * 1000)
    sequences = [0] * producers
    written = batches = 0

    async def go() -> None:
        nonlocal written, batches
        while written < size:
            chunk = bytearray()
            for pid in range(producers):
                chunk += build_batch([(None, value, now)] * per_batch, producer_id=1000 + pid,
                                     producer_epoch=0, base_sequence=sequences[pid])
                sequences[pid] += per_batch
            r = await rm.appends.append_records(1, 1000, {(TOPIC, 0): chunk})
            assert r[(TOPIC, 0)].error == 0, r
            written += len(chunk)
            batches += producers

    asyncio.run(go())
    rm.partition(TOPIC, 0).local_log().update_high_watermark(
        rm.partition(TOPIC, 0).log_end_offset)
    logs.shutdown()
    return batches


def reopen(log_dir: Path, config: LogConfig, producers: int, epoch: int,
           with_snapshots: bool) -> float:
    part_dir = log_dir / f"{TOPIC}-0"
    if not with_snapshots:
        for f in part_dir.glob("*.snapshot"):
            f.unlink()
    t0 = time.perf_counter()
    logs, rm = open_partition(log_dir, config, epoch)
    elapsed = time.perf_counter() - t0
    state = rm.partition(TOPIC, 0).producers
    assert len(state) == producers, (len(state), producers)
    logs.shutdown()                       # writes the snapshot at the log end again
    assert list(part_dir.glob("*.snapshot")), "no snapshot written at shutdown"
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--producers", type=int, default=50)
    ap.add_argument("--batch-kb", type=int, default=16)
    ap.add_argument("--segment-mb", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    config = LogConfig(segment_bytes=args.segment_mb * 1024 * 1024)
    with tempfile.TemporaryDirectory(prefix="pybroker-bench-restart-") as tmp:
        log_dir = Path(tmp) / "logs"
        t0 = time.perf_counter()
        batches = fill(log_dir, config, args.size_mb * 1024 * 1024, args.producers,
                       args.batch_kb)
        segments = len(list((log_dir / f"{TOPIC}-0").glob("*.log")))
        print(f"{args.size_mb} MiB, {batches} idempotent batches of {args.batch_kb} KiB from "
              f"{args.producers} producers in {segments} segment(s), written in "
              f"{time.perf_counter() - t0:.0f} s; {args.runs} reopens each way, medians",
              flush=True)
        with_s: list[float] = []
        without: list[float] = []
        epoch = 2
        for i in range(args.runs):
            for snap in ((True, False) if i % 2 == 0 else (False, True)):
                t = reopen(log_dir, config, args.producers, epoch, snap)
                (with_s if snap else without).append(t)
                epoch += 1
            print(f"run {i + 1}: with snapshots {with_s[-1] * 1000:.1f} ms, without "
                  f"{without[-1] * 1000:.1f} ms", flush=True)
        assert producer_snapshot.offsets(str(log_dir / f"{TOPIC}-0"))
    figures = Figures({}, width=28)
    w, wo = statistics.median(with_s), statistics.median(without)
    figures.report("reopen with snapshots", w * 1000, "ms")
    figures.report("reopen without snapshots", wo * 1000, "ms")
    figures.report("without / with", wo / w, "x")
    print(f"reproduce: {command_line()}")


if __name__ == "__main__":
    main()
