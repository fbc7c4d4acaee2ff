"""Produce throughput through the broker's record-level validation (issue 17).

The leader now walks every record of every produced batch (and inflates
compressed ones, bounded) before it appends; this measures what that costs.
One broker, one partition, librdkafka (confluent-kafka), linger.ms=5, acks=1,
``--records`` records of 1 KiB values that compress about 3:1 (a fixed pool of
half-random, half-text values, 16-byte keys), per codec in ``--codecs``.

    python bench/produce_validation.py [--runs 3] [--records 100000] [--codecs none,lz4,zstd]

MB/s = payload bytes (keys + values) / time from the first produce() call to the
end of flush(); figures are medians over the runs. With a broker it started, it
also reports the broker process's CPU time (user + system, /proc/<pid>/stat) per
MB produced: unlike MB/s, that figure holds on a machine shared with other work.
Compare two trees (e.g. before/after a change) by running this in each with the
same arguments.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from _env import command_line, create_topic, delete_topic, one_broker  # type: ignore[import-not-found]

from confluent_kafka import Producer

VALUE_SIZE = 1024
MB = 1_000_000


def _values(count: int = 256) -> list[bytes]:
    text = (b"the quick brown fox jumps over the lazy dog " * 30)[:VALUE_SIZE // 2]
    return [os.urandom(VALUE_SIZE // 4).hex().encode()[:VALUE_SIZE // 2] + text
            for _ in range(count)]


def produce(bootstrap: str, topic: str, n: int, codec: str) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1,
                  "compression.type": codec, "queue.buffering.max.kbytes": 1024 * 1024,
                  "queue.buffering.max.messages": 1_000_000})
    values = _values()
    errors = 0

    def report(err: Any, _msg: Any) -> None:
        nonlocal errors
        errors += err is not None

    payload = 0
    start = time.perf_counter()
    for i in range(n):
        key = b"key-%012d" % (i % 10_000)
        value = values[i & 255]
        payload += len(key) + len(value)
        while True:
            try:
                p.produce(topic, value, key, partition=0, on_delivery=report)
                break
            except BufferError:
                p.poll(0.001)
    left = p.flush(120)
    elapsed = time.perf_counter() - start
    if left or errors:
        raise RuntimeError(f"produce: {left} undelivered, {errors} failed")
    return payload / elapsed / MB


def cpu_seconds(pid: int | None) -> float:
    """utime + stime of a process, in seconds (0 when unknown)."""
    if pid is None:
        return 0.0
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(bootstrap: str, args: argparse.Namespace, pid: int | None = None
        ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    results: dict[str, list[float]] = {c: [] for c in args.codecs}
    cpu: dict[str, list[float]] = {c: [] for c in args.codecs}
    for i in range(args.runs):
        for codec in args.codecs:
            topic = create_topic(bootstrap)
            before = cpu_seconds(pid)
            mb_s = produce(bootstrap, topic, args.records, codec)
            used = cpu_seconds(pid) - before
            delete_topic(bootstrap, topic)
            results[codec].append(mb_s)
            payload_mb = args.records * (VALUE_SIZE + 16) / MB  # keys are 16 bytes
            cpu[codec].append(used * 1000 / payload_mb)
            print(f"run {i + 1} {codec}: produce {mb_s:.1f} MB/s, broker CPU "
                  f"{cpu[codec][-1]:.2f} ms/MB", flush=True)
    return results, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--codecs", type=lambda s: s.split(","), default=["none", "lz4", "zstd"])
    ap.add_argument("--bootstrap", help="use this broker instead of starting one")
    args = ap.parse_args()
    if args.bootstrap:
        results, cpu = run(args.bootstrap, args)
    else:
        with one_broker() as broker:
            results, cpu = run(broker.bootstrap, args, broker.pid)
    print(f"\nmedian of {args.runs} runs, 1 partition, {VALUE_SIZE}-byte values, "
          f"{args.records} records per run:")
    for codec, figures in results.items():
        print(f"  produce {codec:5s} {statistics.median(figures):8.1f} MB/s   "
              f"(runs: {', '.join(f'{f:.1f}' for f in figures)}); broker CPU "
              f"{statistics.median(cpu[codec]):.2f} ms/MB")
    print(f"reproduce: {command_line()}")


if __name__ == "__main__":
    main()
