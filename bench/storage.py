"""Storage engine benchmarks: append, read by offset, clean open, crash recovery.

Run from the project root:  .venv/bin/python bench/storage.py [--only NAME] [--runs N]
Each figure is the median of N runs in a fresh temporary directory (removed
afterwards), printed with the command that reproduces it. Targets (issue 2):
append 1 MiB batches >= 1 GB/s into the page cache; read by offset >= 2 GB/s;
open 10,000 segments after a clean shutdown <= 2 s; recover a 1 GiB
unflushed tail <= 5 s.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from protocol import records  # noqa: E402
from storage.config import LogConfig  # noqa: E402
from storage.log import PartitionLog  # noqa: E402

MIB = 1 << 20
GIB = 1 << 30


def make_batch(total: int, record_size: int) -> bytearray:
    """One batch of about ``total`` bytes made of ``record_size``-byte values."""
    value = os.urandom(record_size)
    return records.build_batch([(None, value, 1_700_000_000_000)] * max(1, total // record_size))


def fill(log: PartitionLog, batch: bytearray, total: int) -> int:
    written = 0
    while written < total:
        written += log.append(batch).size
    return written


def bench_append(tmp: str) -> tuple[float, str]:
    batch = make_batch(MIB, 64 * 1024)
    log = PartitionLog.open(os.path.join(tmp, "append-0"), LogConfig())
    start = time.perf_counter()
    written = fill(log, batch, GIB)
    elapsed = time.perf_counter() - start
    log.close()
    return written / elapsed / 1e9, "GB/s (1 GiB as 1 MiB batches, 1 GiB segments)"


def bench_read(tmp: str) -> tuple[float, str]:
    log = PartitionLog.open(os.path.join(tmp, "read-0"), LogConfig())
    fill(log, make_batch(MIB, 64 * 1024), GIB)
    log.update_high_watermark(log.log_end_offset)
    start = time.perf_counter()
    offset, total = 0, 0
    while offset < log.log_end_offset:
        data = log.read(offset, MIB).slice.read()
        total += len(data)
        for _pos, header in records.iter_batches(data):
            offset = header.next_offset
    elapsed = time.perf_counter() - start
    log.close()
    return total / elapsed / 1e9, "GB/s (read(offset, 1 MiB) + bytes, 1 GiB log)"


def bench_open(tmp: str, segments: int = 10_000) -> tuple[float, str]:
    path = os.path.join(tmp, "open-0")
    log = PartitionLog.open(path, LogConfig())
    batch = make_batch(200, 100)
    for _ in range(segments):
        log.append(batch)
        log.roll()
    log.append(batch)
    leo = log.log_end_offset
    log.close()
    del log
    gc.collect()
    start = time.perf_counter()
    log = PartitionLog.open(path, LogConfig(), log_start_offset=0, clean_shutdown=True)
    elapsed = time.perf_counter() - start
    assert log.log_end_offset == leo and len(log.segments) == segments + 1
    log.close()
    return elapsed, f"s ({segments + 1} segments, clean shutdown)"


def bench_recover(tmp: str, batch_bytes: int = MIB) -> tuple[float, str]:
    path = os.path.join(tmp, "recover-0")
    log = PartitionLog.open(path, LogConfig(segment_bytes=GIB + 64 * MIB))
    fill(log, make_batch(batch_bytes, min(batch_bytes, 16 * 1024)), GIB)
    leo = log.log_end_offset
    del log  # "killed": no close, the .log keeps its preallocated zero tail
    gc.collect()
    start = time.perf_counter()
    log = PartitionLog.open(path, LogConfig(segment_bytes=GIB + 64 * MIB), recovery_point=0)
    elapsed = time.perf_counter() - start
    assert log.log_end_offset == leo and log.last_load is not None
    assert log.last_load.recovered_segments == 1
    log.close()
    label = "1 MiB" if batch_bytes == MIB else f"{batch_bytes // 1024} KiB"
    return elapsed, f"s (1 GiB unflushed active segment of {label} batches, CRC + reindex)"


BENCHES: dict[str, tuple[Callable[[str], tuple[float, str]], str]] = {
    "append": (bench_append, ">= 1 GB/s"),
    "read": (bench_read, ">= 2 GB/s"),
    "open": (bench_open, "<= 2 s"),
    "recover": (bench_recover, "<= 5 s"),
    "recover-16k": (lambda tmp: bench_recover(tmp, 16 * 1024), "<= 5 s"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(BENCHES), action="append")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for name in args.only or list(BENCHES):
        fn, target = BENCHES[name]
        results = []
        unit = ""
        for _ in range(args.runs):
            tmp = tempfile.mkdtemp(prefix="pybroker-bench-")
            try:
                value, unit = fn(tmp)
                results.append(value)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        runs = ", ".join(f"{v:.3f}" for v in results)
        print(f"{name:12s} median {statistics.median(results):.3f} {unit}  target {target}  "
              f"runs [{runs}]")
        print(f"  reproduce: .venv/bin/python bench/storage.py --only {name} --runs {args.runs}")


if __name__ == "__main__":
    main()
