"""The data both PySpark benchmarks read: one deterministic function, no broker needed.

``make_bench_log(log_dir, total_bytes, partitions=3, codec=GZIP)`` writes a
topic's partitions straight into ``log_dir`` with storage.log.PartitionLog
(real segments, indexes, 20-digit names) and a ``replication-offset-checkpoint``
whose high watermarks are the log end offsets, so the bulk replay can read
all of it. The same arguments always give the same records (keys, values,
headers, timestamps, batch boundaries), whatever the machine:

- record i of partition p (i from 0): key ``k-<p>-<i mod 10000>``, value
  ``VALUE_BYTES`` bytes cut from a seeded pool of letters over a 16-letter
  alphabet (gzip takes it to about 60%), one header ``("seq", str(i))``,
  CreateTime ``BASE_TS + i`` ms;
- ``RECORDS_PER_BATCH`` records per batch; batches are appended until the
  partition's segments reach ``total_bytes / partitions`` bytes;
- segments roll at ``segment_bytes`` (64 MiB: about 16 segment tasks per GiB).

A ``bench-data.json`` marker beside the data records the arguments; a second
call with the same arguments returns at once (generation takes a while).
Partitions are written in parallel processes, one per partition.
"""

from __future__ import annotations

import json
import os
import random
import sys
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from protocol import records  # noqa: E402
from storage import checkpoints, filenames  # noqa: E402
from storage.config import LogConfig  # noqa: E402
from storage.log import PartitionLog  # noqa: E402

GZIP = 1
TOPIC = "bench"
VALUE_BYTES = 1000
RECORDS_PER_BATCH = 100
BASE_TS = 1_700_000_000_000
SEGMENT_BYTES = 64 << 20
MARKER = "bench-data.json"
_POOL_BYTES = 1 << 20


def _pool(partition: int) -> bytes:
    rng = random.Random(0x5EED + partition)
    return bytes(rng.choice(b"abcdefghijklmnop") for _ in range(_POOL_BYTES))


def _fill_partition(log_dir: str, topic: str, partition: int, target: int, codec: int,
                    segment_bytes: int) -> tuple[int, int]:
    """Write one partition; -> (log end offset, bytes)."""
    pool = _pool(partition)
    span = len(pool) - VALUE_BYTES
    log = PartitionLog.open(os.path.join(log_dir, filenames.partition_dir_name(topic, partition)),
                            LogConfig(segment_bytes=segment_bytes))
    i = 0
    try:
        while log.size_in_bytes < target:
            builder = records.BatchBuilder(codec=codec)
            for _ in range(RECORDS_PER_BATCH):
                at = (i * 7919) % span
                builder.append(f"k-{partition}-{i % 10000}".encode(), pool[at:at + VALUE_BYTES],
                               BASE_TS + i, [("seq", str(i).encode())])
                i += 1
            log.append(builder.build(), leader_epoch=0)
        log.flush()
        return log.log_end_offset, log.size_in_bytes
    finally:
        log.close()


def make_bench_log(log_dir: str, total_bytes: int, partitions: int = 3, codec: int = GZIP, *,
                   topic: str = TOPIC, segment_bytes: int = SEGMENT_BYTES) -> dict[str, int]:
    """Write (or find already written) the bench topic; -> {"records": n, "bytes": n}."""
    params = {"total_bytes": total_bytes, "partitions": partitions, "codec": codec,
              "topic": topic, "segment_bytes": segment_bytes, "version": 1}
    marker = os.path.join(log_dir, MARKER)
    try:
        with open(marker, encoding="utf-8") as f:
            saved = json.load(f)
        if saved["params"] == params:
            return dict(saved["result"])
    except (FileNotFoundError, ValueError, KeyError):
        pass
    os.makedirs(log_dir, exist_ok=True)
    target = -(-total_bytes // partitions)
    with ProcessPoolExecutor(max_workers=min(partitions, os.cpu_count() or 1)) as pool:
        futures = [pool.submit(_fill_partition, log_dir, topic, p, target, codec, segment_bytes)
                   for p in range(partitions)]
        ends = [f.result() for f in futures]
    hws = {(topic, p): leo for p, (leo, _size) in enumerate(ends)}
    checkpoints.write_offsets(os.path.join(log_dir, filenames.REPLICATION_CHECKPOINT), hws)
    checkpoints.write_offsets(os.path.join(log_dir, filenames.RECOVERY_POINT_CHECKPOINT), hws)
    result = {"records": sum(leo for leo, _ in ends), "bytes": sum(size for _, size in ends)}
    with open(marker, "w", encoding="utf-8") as f:
        json.dump({"params": params, "result": result}, f)
    return result


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU seconds (user + system) used so far by ``root`` (default: this process) and its
    live descendants, with the children they have reaped (Linux /proc). A difference of two
    readings is the work a benchmark step cost, whatever else the machine was running -
    Spark's JVM, its Python workers and, for the source benchmark, the broker are all
    descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    used: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ... field 14 utime, 15 stime, 16 cutime, 17 cstime (1-based)
        rest = stat[stat.rindex(")") + 2:].split()
        parent[int(entry)] = int(rest[1])
        used[int(entry)] = sum(int(x) for x in rest[11:15])
    root = os.getpid() if root is None else root
    total = 0
    for pid, ticks in used.items():
        up = pid
        while up not in (root, 0, 1) and up in parent:
            up = parent[up]
        total += ticks if up == root else 0
    return total / tick


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="write the PySpark benchmarks' data")
    parser.add_argument("log_dir")
    parser.add_argument("--bytes", type=int, default=1 << 30)
    parser.add_argument("--partitions", type=int, default=3)
    args = parser.parse_args()
    print(make_bench_log(args.log_dir, args.bytes, args.partitions))
