"""Start-up of one broker holding many partitions on disk (issue 28's scale figures).

    .venv/bin/python bench/startup.py [--runs 3] [--topics 100] [--partitions 100]
                                      [--broker-config key=value ...]

A ZooKeeper and one broker are started in a temp dir (tests/integration/cluster.py,
stopped by pid on exit). ``--topics`` topics of ``--partitions`` partitions each
(10,000 by default, replication factor 1) are created through our admin client, and
one record is written to every partition (confluent-kafka, acks=1), so that each
partition directory has a segment with data, its offset and time indexes. Then per
run, the broker is stopped and started again twice:

- clean: SIGTERM (a controlled shutdown: the clean-shutdown marker is written, the
  logs open without recovery);
- kill -9: the active segments are recovered (scanned, the indexes rebuilt).

Timed from the spawn of the new process: ``ready``, when its port answers ApiVersions
and Metadata lists it (the harness's readiness probe), and ``all online``, when
ListOffsets(latest) of every partition answers NONE with end offset 1 (each partition
has a leader, its log is open and serves reads). Also the broker's CPU seconds to
that point and its RSS then. Medians over the runs. Kafka's own figure for this size
is tens of seconds in ZooKeeper mode (the controller's elections and LeaderAndIsr
for 10,000 partitions); there is no target in the issue, the figure is reported.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid

from _env import (add_broker_config_option, broker_configs,  # type: ignore[import-not-found]  # noqa: E501
                  command_line, one_broker, rss_kib)

from client.admin import KafkaAdmin, NewTopic
from client.verbs import LATEST_TIMESTAMP
from confluent_kafka import Producer
from tests.integration.cluster import BrokerProcess

TICK = os.sysconf("SC_CLK_TCK")
CREATE_BATCH = 10          # topics per CreateTopics request


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


async def create(bootstrap: str, names: list[str], partitions: int) -> None:
    async with KafkaAdmin(bootstrap, timeout=120) as admin:
        for i in range(0, len(names), CREATE_BATCH):
            batch = [NewTopic(n, partitions, 1) for n in names[i:i + CREATE_BATCH]]
            result = await admin.create_topics(batch, timeout_ms=120_000)
            bad = {n: r for n, r in result.items() if r[0] != 0}
            if bad:
                raise RuntimeError(f"CreateTopics: {bad}")


async def online(bootstrap: str, names: list[str], partitions: int) -> int:
    """How many partitions answer ListOffsets(latest) with NONE and offset 1."""
    async with KafkaAdmin(bootstrap, timeout=60) as admin:
        asked = {(n, p): LATEST_TIMESTAMP for n in names for p in range(partitions)}
        try:
            got = await admin.list_offsets(asked)
        except Exception:  # noqa: BLE001 - the broker is still starting: none yet
            return 0
        return sum(1 for r in got.values() if r.error == 0 and r.offset == 1)


def fill(bootstrap: str, names: list[str], partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20})
    for n in names:
        for part in range(partitions):
            p.produce(n, b"x" * 100, partition=part)
        p.poll(0)
    if p.flush(120) != 0:
        raise RuntimeError("records left undelivered")


def restart(b: BrokerProcess, mode: str, names: list[str], partitions: int
            ) -> tuple[float, float, float, int]:
    """-> (seconds to ready, seconds to all online, CPU s until then, RSS KiB)."""
    if mode == "clean":
        b.stop(timeout=300)
    else:
        b.kill9()
    t0 = time.monotonic()
    b.spawn()
    b.wait_ready(timeout=600)
    ready = time.monotonic() - t0
    total = len(names) * partitions
    while True:
        n = asyncio.run(online(b.bootstrap, names, partitions))
        if n == total:
            break
        if time.monotonic() - t0 > 900:
            raise RuntimeError(f"{n} of {total} partitions online after 900 s")
        time.sleep(0.2)
    assert b.pid is not None
    return ready, time.monotonic() - t0, cpu_seconds(b.pid), rss_kib(b.pid)["VmRSS"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100, help="partitions per topic")
    add_broker_config_option(ap)
    args = ap.parse_args()
    names = [f"startup-{i:04d}-{uuid.uuid4().hex[:6]}" for i in range(args.topics)]
    total = args.topics * args.partitions
    with one_broker(broker_configs(args)) as b:
        t = time.monotonic()
        asyncio.run(create(b.bootstrap, names, args.partitions))
        fill(b.bootstrap, names, args.partitions)
        print(f"{total} partitions created and written in {time.monotonic() - t:.0f} s",
              flush=True)
        figures: dict[str, list[tuple[float, float, float, int]]] = {"clean": [], "kill -9": []}
        for run in range(1, args.runs + 1):
            for mode in figures:
                r = restart(b, "clean" if mode == "clean" else "kill", names, args.partitions)
                figures[mode].append(r)
                print(f"run {run} {mode:>8}: ready {r[0]:6.1f} s, all {total} online "
                      f"{r[1]:6.1f} s, broker CPU {r[2]:6.1f} s, RSS {r[3] / 1024:.0f} MiB",
                      flush=True)
    for mode, rs in figures.items():
        print(f"{mode:>8} restart, {total} partitions (median of {len(rs)}): ready "
              f"{statistics.median(r[0] for r in rs):.1f} s, all online "
              f"{statistics.median(r[1] for r in rs):.1f} s, broker CPU "
              f"{statistics.median(r[2] for r in rs):.1f} s, RSS "
              f"{statistics.median(r[3] for r in rs) / 1024:.0f} MiB")
    print(f"reproduce: {command_line()}")


if __name__ == "__main__":
    main()
