"""Creating a topic of many partitions on one broker: the broker's CPU and the time until
every partition has its leader.

    .venv/bin/python bench/topic_creation.py [--partitions 1000] [--runs 3]

A ZooKeeper and one broker under a temp dir (bench/_env.py: every process stopped by pid
at the end). Per run a fresh topic of ``--partitions`` partitions at replication factor 1
is created with confluent-kafka's AdminClient; the figure is the broker's CPU (user + sys,
all threads, /proc/<pid>/stat) from the CreateTopics until Metadata names a leader for
every partition, and that wall time. The LeaderAndIsr that creates the logs runs on the
event loop in 5 ms slices (ReplicaManager.become_leader_or_follower_paced), so its CPU is
also what the other connections wait behind (make fuzz's stalls). Medians over the runs;
the first run is reported apart (the broker's first topic warms its caches).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from pathlib import Path

from _env import command_line, one_broker  # type: ignore[import-not-found]

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def create_and_wait(bootstrap: str, partitions: int, pid: int) -> tuple[float, float]:
    """(broker CPU s, wall s) from CreateTopics until every partition has a leader."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"create-{uuid.uuid4().hex[:8]}"
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(120)
    deadline = t0 + 120
    while True:
        meta = admin.list_topics(topic, timeout=30).topics.get(topic)
        if meta is not None and meta.error is None and len(meta.partitions) == partitions \
                and all(p.leader >= 0 for p in meta.partitions.values()):
            break
        if time.perf_counter() > deadline:
            raise SystemExit(f"{topic}: not every partition has a leader after 120 s")
        time.sleep(0.05)
    return cpu_seconds(pid) - cpu0, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with one_broker() as broker:
        assert broker.pid is not None
        first = create_and_wait(broker.bootstrap, args.partitions, broker.pid)
        runs = [create_and_wait(broker.bootstrap, args.partitions, broker.pid)
                for _ in range(args.runs)]
    cpu = statistics.median(r[0] for r in runs)
    wall = statistics.median(r[1] for r in runs)
    print(f"# {command_line()}")
    print(f"create a {args.partitions}-partition topic (RF 1), one broker: broker CPU "
          f"{cpu:.2f} s ({1000 * cpu / args.partitions:.2f} ms a partition), "
          f"{wall:.2f} s until every partition has a leader (medians of {args.runs}; "
          f"the broker's first topic: {first[0]:.2f} s CPU, {first[1]:.2f} s)")


if __name__ == "__main__":
    main()
