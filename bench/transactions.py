"""Transactional produce throughput against non-transactional, on one broker,
driven by confluent-kafka (librdkafka).

Target (issue 14): transactional >= 0.9x non-transactional with a 100 ms commit
interval.

    python bench/transactions.py [--runs 3] [--records 500000] [--partitions 3]
                                 [--commit-ms 100] [--bootstrap H:P]
                                 [--broker-config KEY=VALUE ...]

Without --bootstrap a ZooKeeper and a broker are started in a temp dir (the
internal topics at replication factor 1; each --broker-config on top). Each run and
mode uses a fresh topic of ``--partitions`` partitions; ``--records`` values of
``--size`` bytes (no key, round-robin over the partitions by librdkafka's
partitioner), linger.ms=5, acks=all, no compression, both modes idempotent
(enable.idempotence, as every transactional producer is):

- plain: produce() as fast as it takes them, then flush().
- transactional: init_transactions() (not timed), then begin_transaction(),
  produce() for ``--commit-ms`` of wall time, commit_transaction(), again,
  until every record was produced; the last commit ends the clock.

Before the clock starts each producer sends one record (in plain mode flushed, in
transactional mode in a committed transaction of its own): connections, metadata and the
producer id are not timed. MB/s = payload bytes / time from the first timed produce()
to the end of flush() or of the last commit. Each topic is checked to hold every record
(plain: exactly, transactional: plus the markers) and deleted. The ratio is transactional / plain, each the median over the
runs; the two modes alternate within a run so drift in the machine's load hits
both alike.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from typing import Any

from _env import (Figures, add_broker_config_option, broker_configs,  # type: ignore[import-not-found]  # noqa: E501
                  command_line, create_topic, delete_topic, one_broker, stored_records)

from confluent_kafka import Producer

MB = 1_000_000
INTERNAL_RF1 = {"transaction.state.log.replication.factor": "1",
                "transaction.state.log.min.isr": "1",
                "offsets.topic.replication.factor": "1"}








def _config(bootstrap: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
            "enable.idempotence": True, "compression.type": "none",
            "queue.buffering.max.kbytes": 16 * 1024,   # back-pressure: ~delivery-bound
            "queue.buffering.max.messages": 100_000}


class _Reports:
    def __init__(self) -> None:
        self.errors = 0
        self.first: Any = None

    def __call__(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self.errors += 1
            self.first = self.first or err


def _produce_one(p: Producer, topic: str, value: bytes, reports: _Reports) -> None:
    while True:
        try:
            p.produce(topic, value, on_delivery=reports)
            return
        except BufferError:
            p.poll(0.001)


def plain(bootstrap: str, topic: str, n: int, size: int) -> float:
    p = Producer(_config(bootstrap))
    value, reports = bytes(size), _Reports()
    _produce_one(p, topic, value, reports)    # warm-up, not timed: connections, producer id
    p.flush(30)
    start = time.perf_counter()
    for _ in range(n):
        _produce_one(p, topic, value, reports)
    left = p.flush(120)
    elapsed = time.perf_counter() - start
    if left or reports.errors:
        raise RuntimeError(f"plain: {left} undelivered, {reports.errors} failed ({reports.first})")
    return n * size / elapsed / MB


def transactional(bootstrap: str, topic: str, n: int, size: int,
                  commit_ms: int) -> tuple[float, int]:
    """-> (MB/s, transactions committed)."""
    p = Producer({**_config(bootstrap), "transactional.id": f"bench-{uuid.uuid4().hex[:8]}"})
    p.init_transactions(30)
    value, reports = bytes(size), _Reports()
    p.begin_transaction()                     # warm-up, not timed, as in plain()
    _produce_one(p, topic, value, reports)
    p.commit_transaction(30)
    sent = commits = 0
    start = time.perf_counter()
    while sent < n:
        p.begin_transaction()
        until = time.perf_counter() + commit_ms / 1000.0
        while sent < n:
            _produce_one(p, topic, value, reports)
            sent += 1
            if sent % 256 == 0:
                p.poll(0)
                if time.perf_counter() >= until:
                    break
        p.commit_transaction(60)     # flushes the transaction's records first
        commits += 1
    elapsed = time.perf_counter() - start
    if reports.errors:
        raise RuntimeError(f"transactional: {reports.errors} failed ({reports.first})")
    return n * size / elapsed / MB, commits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--size", type=int, default=1024, help="value bytes")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--commit-ms", type=int, default=100)
    ap.add_argument("--bootstrap", help="an existing broker (its internal topics must exist)")
    add_broker_config_option(ap)
    args = ap.parse_args()
    if args.bootstrap and args.broker_config:
        ap.error("--broker-config is for the broker started here, not with --bootstrap")

    def run(bootstrap: str) -> None:
        plains: list[float] = []
        txns: list[float] = []
        commits: list[int] = []
        for i in range(args.runs):
            order = ("plain", "txn") if i % 2 == 0 else ("txn", "plain")
            for mode in order:
                topic = create_topic(bootstrap, args.partitions, "bench-txn")
                if mode == "plain":
                    plains.append(plain(bootstrap, topic, args.records, args.size))
                else:
                    mbs, c = transactional(bootstrap, topic, args.records, args.size,
                                           args.commit_ms)
                    txns.append(mbs)
                    commits.append(c)
                stored = stored_records(bootstrap, topic, args.partitions) - 1   # the warm-up
                # transactional topics also hold a COMMIT marker per partition per transaction
                if stored < args.records or (mode == "plain" and stored != args.records):
                    raise RuntimeError(f"{mode}: {stored} records stored, {args.records} sent")
                delete_topic(bootstrap, topic)
            print(f"run {i + 1}: plain {plains[-1]:.1f} MB/s, transactional {txns[-1]:.1f} MB/s "
                  f"({commits[-1]} commits)", flush=True)
        figures = Figures({"transactional/plain": (">=", 0.9)}, width=28)
        p_med, t_med = statistics.median(plains), statistics.median(txns)
        figures.report("plain produce", p_med, "MB/s",
                       f"({p_med * MB / args.size:,.0f} records/s)")
        figures.report("transactional produce", t_med, "MB/s",
                       f"({t_med * MB / args.size:,.0f} records/s, "
                       f"median {statistics.median(commits):.0f} commits)")
        figures.report("transactional/plain", t_med / p_med, "x")

    print(f"{args.runs} runs, {args.records} records of {args.size} B over {args.partitions} "
          f"partitions, commit every {args.commit_ms} ms; medians")
    if args.bootstrap:
        run(args.bootstrap)
    else:
        with one_broker({**INTERNAL_RF1, **broker_configs(args)}) as broker:
            run(broker.bootstrap)
    print(f"reproduce: {command_line()}")


if __name__ == "__main__":
    main()
