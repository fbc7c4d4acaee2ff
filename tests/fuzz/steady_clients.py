"""The well-behaved clients: a confluent-kafka (librdkafka) producer and consumer on
the protected topic, in a process of their own (so the fuzzer's CPU and GIL do
not colour their latencies).

    python -m tests.fuzz.steady_clients --bootstrap H:P --topic T --group G --out stats.json

Produces one 100-byte record every ``--interval`` s (acks=all, idempotent) and
records each delivery's latency (produce() to the delivery report); a consumer
in the group reads the topic from the start and records end-to-end latency
(the value carries its send time). On SIGTERM it stops producing, gives the
consumer up to 10 s to catch up with every acknowledged record, and writes
``--out``: counts, delivery errors, p50/p99/max latencies, and the values
acknowledged but never consumed.
"""

from __future__ import annotations

import argparse
import json
import signal
import struct
import time
from typing import Any


def _pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> None:
    from confluent_kafka import Consumer, Producer

    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    stopping = False

    def on_term(*_: Any) -> None:
        nonlocal stopping
        stopping = True
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 0})
    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": True})
    consumer.subscribe([args.topic])
    delivery_ms: list[float] = []
    e2e_ms: list[float] = []
    errors: list[str] = []
    acked: set[int] = set()
    consumed: set[int] = set()
    seq = 0

    def report(err: Any, msg: Any, sent: float, n: int) -> None:
        if err is not None:
            errors.append(str(err))
            return
        delivery_ms.append((time.monotonic() - sent) * 1000)
        acked.add(n)

    def consume(timeout: float) -> None:
        msg = consumer.poll(timeout)
        while msg is not None:
            if msg.error() is None and msg.value() is not None and len(msg.value()) >= 16:
                n, sent = struct.unpack(">qd", msg.value()[:16])
                consumed.add(n)
                e2e_ms.append((time.time() - sent) * 1000)
            msg = consumer.poll(0)

    started = time.monotonic()
    next_send = started
    while not stopping:
        now = time.monotonic()
        if now >= next_send:
            value = struct.pack(">qd", seq, time.time()) + bytes(84)
            n, sent = seq, now
            producer.produce(args.topic, value=value, key=b"k%d" % (seq % 8),
                             on_delivery=lambda e, m, s=sent, n=n: report(e, m, s, n))
            seq += 1
            next_send += args.interval
        producer.poll(0)
        consume(min(0.01, max(0.0, next_send - time.monotonic())))
    remaining = producer.flush(30)
    deadline = time.monotonic() + 10
    while not acked <= consumed and time.monotonic() < deadline:
        consume(0.1)
    consumer.close()
    stats = {
        "seconds": round(time.monotonic() - started, 1), "sent": seq, "acked": len(acked),
        "unflushed": remaining, "delivery_errors": len(errors), "first_errors": errors[:5],
        "consumed": len(consumed), "acked_not_consumed": len(acked - consumed),
        "delivery_ms": {"p50": _pct(delivery_ms, 50), "p99": _pct(delivery_ms, 99),
                        "max": max(delivery_ms, default=0.0)},
        "end_to_end_ms": {"p50": _pct(e2e_ms, 50), "p99": _pct(e2e_ms, 99),
                          "max": max(e2e_ms, default=0.0)},
    }
    with open(args.out, "w") as f:
        json.dump(stats, f)


if __name__ == "__main__":
    main()
