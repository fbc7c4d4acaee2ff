"""Throughput and latency of one broker, one partition, 1 KiB records, driven by
confluent-kafka (librdkafka).

Targets (issue 3): produce >= 150 MB/s, consume >= 250 MB/s, p99 produce
latency at 5 MB/s <= 5 ms.

    python bench/produce_consume.py [--runs 3] [--records 300000] [--bootstrap H:P]

Without --bootstrap a ZooKeeper and a broker are started in a temp dir.
Each run uses a fresh 1-partition topic:

- produce: linger.ms=5, acks=1, no compression, ``--records`` values of 1024
  bytes (no key) as fast as produce() takes them; MB/s = payload bytes / time
  from the first produce() call to the end of flush().
- consume: one consumer assigned to the partition from offset 0 (no group
  commits), until every record was seen; MB/s = payload bytes / time from
  assign() to the last record.
- latency at 5 MB/s: 5120 records/s for ``--latency-seconds`` in 1 ms slices,
  linger.ms=5, acks=1. Reported: the p99 of librdkafka's own Produce request
  round-trip time (the broker's share, sampled by the client's statistics every
  second: the median over the windows of each window's p99, and the worst
  window), and for context the p99 of produce()->delivery report time, which
  also holds the 5 ms linger.

Figures are medians over the runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from _env import (command_line, create_topic, delete_topic, drain,  # type: ignore[import-not-found]  # noqa: E501
                  one_broker)

from confluent_kafka import Consumer, Producer, TopicPartition

RECORD = 1024
MB = 1_000_000






def produce(bootstrap: str, topic: str, n: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1,
                  "compression.type": "none", "queue.buffering.max.kbytes": 1024 * 1024,
                  "queue.buffering.max.messages": 1_000_000})
    value = bytes(RECORD)
    errors = 0

    def report(err: Any, _msg: Any) -> None:
        nonlocal errors
        errors += err is not None

    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value, partition=0, on_delivery=report)
                break
            except BufferError:
                p.poll(0.001)
    left = p.flush(120)
    elapsed = time.perf_counter() - start
    if left or errors:
        raise RuntimeError(f"produce: {left} undelivered, {errors} failed")
    return n * RECORD / elapsed / MB


def consume(bootstrap: str, topic: str, n: int) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused",
                  "enable.auto.commit": False, "fetch.max.bytes": 64 * 1024 * 1024,
                  "max.partition.fetch.bytes": 16 * 1024 * 1024,
                  "queued.max.messages.kbytes": 512 * 1024})
    try:
        start = time.perf_counter()
        c.assign([TopicPartition(topic, 0, 0)])
        drain(c, n)
        return n * RECORD / (time.perf_counter() - start) / MB
    finally:
        c.close()


def latency(bootstrap: str, topic: str, seconds: float, rate_mb: float = 5.0,
            linger_ms: int = 5) -> dict[str, float]:
    windows: list[dict[str, Any]] = []

    def on_stats(js: str) -> None:
        for b in json.loads(js)["brokers"].values():
            if b.get("nodeid", -1) >= 0 and b["rtt"]["cnt"] > 0:
                windows.append(b["rtt"])

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": linger_ms, "acks": 1,
                  "statistics.interval.ms": 1000, "stats_cb": on_stats})
    value = bytes(RECORD)
    e2e: list[float] = []

    def report(err: Any, msg: Any, t0: float) -> None:
        if err is None:
            e2e.append(time.perf_counter() - t0)

    per_ms = rate_mb * MB / RECORD / 1000.0  # records per millisecond
    start = time.perf_counter()
    sent = 0
    while (now := time.perf_counter()) - start < seconds:
        due = int((now - start) * 1000 * per_ms)
        while sent < due:
            t0 = time.perf_counter()
            p.produce(topic, value, partition=0, on_delivery=lambda e, m, t0=t0: report(e, m, t0))
            sent += 1
        p.poll(0)
        time.sleep(0.0005)
    p.flush(30)
    p.poll(1.2)  # one more statistics window
    e2e.sort()
    p99s = [w["p99"] / 1000.0 for w in windows]  # µs -> ms
    return {"rtt_p99_ms": statistics.median(p99s) if p99s else float("nan"),
            "rtt_p99_worst_ms": max(p99s) if p99s else float("nan"),
            "e2e_p99_ms": e2e[int(len(e2e) * 0.99)] * 1000 if e2e else float("nan"),
            "rate_mb_s": sent * RECORD / seconds / MB}


def run(bootstrap: str, args: argparse.Namespace) -> list[dict[str, float]]:
    results = []
    for i in range(args.runs):
        topic = create_topic(bootstrap)
        prod = produce(bootstrap, topic, args.records)
        cons = consume(bootstrap, topic, args.records)
        delete_topic(bootstrap, topic)
        topic = create_topic(bootstrap)
        lat = latency(bootstrap, topic, args.latency_seconds)
        # the same load without linger: produce() -> ack is then the broker's own latency
        # plus the client's, with no batching delay in it
        lat0 = latency(bootstrap, topic, args.latency_seconds, linger_ms=0)
        delete_topic(bootstrap, topic)
        r = {"produce_mb_s": prod, "consume_mb_s": cons, **lat,
             "e2e_p99_linger0_ms": lat0["e2e_p99_ms"]}
        print(f"run {i + 1}: produce {prod:.1f} MB/s, consume {cons:.1f} MB/s, "
              f"produce RTT p99 {lat['rtt_p99_ms']:.2f} ms (worst window "
              f"{lat['rtt_p99_worst_ms']:.2f}), produce->ack p99 {lat['e2e_p99_ms']:.2f} ms "
              f"(linger 5) / {lat0['e2e_p99_ms']:.2f} ms (linger 0) "
              f"at {lat['rate_mb_s']:.2f} MB/s", flush=True)
        results.append(r)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--latency-seconds", type=float, default=10.0)
    ap.add_argument("--bootstrap", help="use this broker instead of starting one")
    args = ap.parse_args()
    if args.bootstrap:
        results = run(args.bootstrap, args)
    else:
        with one_broker() as broker:
            results = run(broker.bootstrap, args)
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    print(f"\nmedian of {args.runs} runs, 1 partition, {RECORD}-byte records, {args.records} per run:")
    print(f"  produce  {med['produce_mb_s']:8.1f} MB/s   (target >= 150)")
    print(f"  consume  {med['consume_mb_s']:8.1f} MB/s   (target >= 250)")
    print(f"  p99 produce request RTT at 5 MB/s  {med['rtt_p99_ms']:6.2f} ms   (target <= 5; "
          f"worst 1 s window {med['rtt_p99_worst_ms']:.2f} ms)")
    print(f"  p99 produce()->ack at 5 MB/s, linger 5 ms  {med['e2e_p99_ms']:6.2f} ms")
    print(f"  p99 produce()->ack at 5 MB/s, linger 0 ms  {med['e2e_p99_linger0_ms']:6.2f} ms")
    print(f"reproduce: {command_line()}")


if __name__ == "__main__":
    main()
