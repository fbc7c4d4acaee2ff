"""Replication quotas: how closely a throttled reassignment keeps to its rate.

A ZooKeeper and 3 broker processes; one partition holding --mb MB (random bytes,
written by confluent_kafka) is moved broker to broker with
``pybroker reassign-partitions --execute --throttle T`` for each T of --throttles
(MB/s), and once with no throttle; ``--verify`` is polled every 0.2 s and
removes the throttle when done. Figures per throttle: the move rate (the
partition's bytes over the time from --execute to a completed --verify), its
ratio to the throttle (median over --repeat moves), and the unthrottled rate
as a multiple of each.

    .venv/bin/python bench/replication_throttle.py [--mb 20] [--throttles 2,4,8] [--repeat 1]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import confluent_kafka as ck  # noqa: E402

from bench._env import command_line, zookeeper  # noqa: E402
from client import KafkaAdmin  # noqa: E402
from client.admin import NewTopic  # noqa: E402
from tests.integration.cluster import Cluster  # noqa: E402
from tools import reassign_partitions  # noqa: E402

TOPIC = "moved"
MB = 1_000_000


def fill(bootstrap: str, mb: int) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "1",
                     "batch.size": 1_000_000})
    payload = os.urandom(100_000)
    for i in range(mb * 10):
        p.produce(TOPIC, payload, partition=0)
        p.poll(0)
    assert p.flush(120) == 0


def move(c: Cluster, work: Path, target: int, throttle: int | None) -> float:
    """Seconds from --execute to a completed --verify, moving the partition to ``target``."""
    plan = work / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": 0, "replicas": [target]}]}))
    base = ["--bootstrap-server", c.bootstrap, "--reassignment-json-file", str(plan)]
    extra = ["--throttle", str(throttle)] if throttle is not None else []
    start = time.monotonic()
    out = io.StringIO()
    if reassign_partitions.main([*base, "--execute", *extra], stdout=out, stderr=out):
        raise SystemExit(out.getvalue())
    while reassign_partitions.main([*base, "--verify"], stdout=io.StringIO(),
                                   stderr=io.StringIO()):
        if time.monotonic() - start > 300:
            raise SystemExit("the move did not complete in 300 s")
        time.sleep(0.2)
    return time.monotonic() - start


def partition_bytes(c: Cluster, broker_id: int) -> int:
    return sum(f.stat().st_size for f in (c.broker(broker_id).log_dir / f"{TOPIC}-0").glob("*.log"))


async def create(bootstrap: str) -> None:
    async with KafkaAdmin(bootstrap) as admin:
        done = await admin.create_topics([NewTopic(TOPIC, assignment={0: [0]})])
        assert all(code == 0 for code, _ in done.values()), done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=20)
    ap.add_argument("--throttles", default="2,4,8", help="MB/s, comma-separated")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    throttles = [float(t) for t in args.throttles.split(",")]
    with tempfile.TemporaryDirectory(prefix="pybroker-bench-") as tmp:
        work = Path(tmp)
        with zookeeper(work) as zk:
            c = Cluster(zk, work, size=3, overrides={"log.level": "WARN"})
            with c:
                asyncio.run(create(c.bootstrap))
                fill(c.bootstrap, args.mb)
                size = partition_bytes(c, 0)
                where = 0
                rates: dict[float | None, list[float]] = {}
                for t in [*throttles, None]:
                    for _ in range(args.repeat):
                        target = (where + 1) % 3
                        seconds = move(c, work, target, None if t is None else int(t * MB))
                        where = target
                        rates.setdefault(t, []).append(size / seconds)
    free = statistics.median(rates[None])
    print(f"# {size / MB:.1f} MB moved per run, {args.repeat} run(s) per throttle")
    for t in throttles:
        rate = statistics.median(rates[t])
        print(f"throttle {t:5.1f} MB/s   moved at {rate / MB:6.2f} MB/s   "
              f"{rate / (t * MB):5.2f} x the throttle   unthrottled {free / rate:5.1f} x faster")
    print(f"no throttle        moved at {free / MB:6.2f} MB/s")
    print(f"# reproduce: {command_line()}")


if __name__ == "__main__":
    main()
