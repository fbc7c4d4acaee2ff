"""Broker resident memory with 1,000 partitions.

Target (issue 3): broker RSS <= 300 MB with 1,000 partitions.

    python bench/broker_memory.py [--runs 3] [--partitions 1000] [--topics 10]

Each run starts a fresh ZooKeeper and broker, creates ``--topics`` topics
sharing ``--partitions`` partitions, writes one 1 KiB record to every partition
(so every log has an open segment with its index files), reads every
partition back with one consumer assigned to all of them, waits for the broker
to settle, and reads the broker's /proc status: VmRSS (resident now), VmHWM
(peak), RssAnon (heap) and RssFile (mapped files: segments and indexes).
Figures are medians over the runs; the idle RSS before any topic is printed
for reference.
"""

from __future__ import annotations

import argparse
import statistics
import time

from _env import command_line, one_broker, rss_kib  # type: ignore[import-not-found]

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def one_run(partitions: int, topics: int) -> dict[str, float]:
    with one_broker() as broker:
        assert broker.pid is not None
        time.sleep(1)
        idle = rss_kib(broker.pid)["VmRSS"]
        per_topic = partitions // topics
        names = [f"mem-{i}" for i in range(topics)]
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        t0 = time.perf_counter()
        for f in admin.create_topics([NewTopic(t, per_topic, 1) for t in names]).values():
            f.result(120)
        created = time.perf_counter() - t0
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        value = bytes(1024)
        for t in names:
            for i in range(per_topic):
                while True:
                    try:
                        p.produce(t, value, partition=i)
                        break
                    except BufferError:
                        p.poll(0.01)
        if p.flush(120):
            raise RuntimeError("undelivered records")
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused",
                      "enable.auto.commit": False, "enable.partition.eof": True})
        c.assign([TopicPartition(t, i, 0) for t in names for i in range(per_topic)])
        eof = seen = 0
        deadline = time.monotonic() + 120
        while eof < per_topic * topics and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error() and m.error().code() == KafkaError._PARTITION_EOF:
                    eof += 1
                elif not m.error():
                    seen += 1
        c.close()
        if seen != per_topic * topics:
            raise RuntimeError(f"read {seen} of {per_topic * topics} records")
        time.sleep(2)
        st = rss_kib(broker.pid)
        return {"idle_mb": idle / 1024, "rss_mb": st["VmRSS"] / 1024, "hwm_mb": st["VmHWM"] / 1024,
                "anon_mb": st.get("RssAnon", 0) / 1024, "file_mb": st.get("RssFile", 0) / 1024,
                "create_s": created}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--topics", type=int, default=10)
    args = ap.parse_args()
    results = []
    for i in range(args.runs):
        r = one_run(args.partitions, args.topics)
        print(f"run {i + 1}: RSS {r['rss_mb']:.1f} MB (peak {r['hwm_mb']:.1f}, anon "
              f"{r['anon_mb']:.1f}, file {r['file_mb']:.1f}); idle before topics "
              f"{r['idle_mb']:.1f} MB; {args.partitions} partitions created in "
              f"{r['create_s']:.1f} s", flush=True)
        results.append(r)
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    print(f"\nmedian of {args.runs} runs, {args.partitions} partitions in {args.topics} topics, "
          f"one 1 KiB record each, all read back:")
    print(f"  broker RSS {med['rss_mb']:.1f} MB   (target <= 300; peak {med['hwm_mb']:.1f} MB, "
          f"anon {med['anon_mb']:.1f} MB, file-backed {med['file_mb']:.1f} MB, idle "
          f"{med['idle_mb']:.1f} MB)")
    print(f"reproduce: {command_line()}")


if __name__ == "__main__":
    main()
