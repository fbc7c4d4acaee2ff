"""Consumer-group benchmarks (issue 5's targets in brackets), driven over the Kafka protocol
with the broker's own asyncio client (client/), so the figures are the broker's:

1. rebalance: 10 members join an empty group at once (group.initial.rebalance.delay.ms=0);
   time until all 10 hold an assignment of one generation. Members behave as Kafka's
   classic consumers: KIP-394 member-id-required join, the leader assigns (range over 20
   partitions), SyncGroup, heartbeats every 50 ms, rejoin on REBALANCE_IN_PROGRESS.  [<= 1 s]
2. commits: OffsetCommit requests (one partition each; standalone, generation -1) to one
   coordinator from 8 connections x 16 in flight, for --commit-s seconds. [>= 5,000 /s]
3. failover: 3 brokers, __consumer_offsets RF 3 (50 partitions), 1,000 groups with
   committed offsets (10 partitions x 3 commit rounds each). kill -9 the broker leading the most
   __consumer_offsets partitions; time from the moment Metadata shows new leaders for all
   of its partitions until every one of its groups answers OffsetFetch with its offsets at
   the new coordinator.                                                   [<= 3 s]

    .venv/bin/python bench/groups.py [--only rebalance,commits,failover] [--commit-s 5]
        [--groups 1000]

ZooKeeper and brokers run under a temp dir (tests/integration/cluster.py) and are stopped by
pid at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._env import Figures, command_line, zookeeper  # noqa: E402
from coordinator.group.classic import partition_for_group  # noqa: E402
from client import KafkaAdmin, KafkaConnection  # noqa: E402
from client.groups import (find_coordinator, heartbeat, join_group, offset_commit,  # noqa: E402
                           offset_fetch, sync_group)
from protocol.errors import ErrorCode  # noqa: E402
from tests.integration.cluster import HOST, Cluster  # noqa: E402
from tests.integration.multi import create_topic  # noqa: E402

TARGETS = {"rebalance_10_members_s": ("<=", 1.0), "offset_commits_per_s": (">=", 5000.0),
           "coordinator_failover_s": ("<=", 3.0)}
ROUNDS = 3           # commits per partition of each failover group
BASE = {"log.level": "WARN", "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false"}
FIGURES = Figures(TARGETS, width=28)
report = FIGURES.report


async def coordinator_conn(port: int, group: str) -> KafkaConnection:
    """A connection to the group's coordinator (retrying while it loads)."""
    async with await KafkaConnection.open(HOST, port) as conn:
        for _ in range(300):
            c = await find_coordinator(conn, group)
            if c.error == 0:
                return await KafkaConnection.open(c.host, c.port)
            await asyncio.sleep(0.05)
    raise RuntimeError(f"no coordinator for {group}")


# -- 1. rebalance ---------------------------------------------------------------------------

def subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: int16 version, [topic], null user data."""
    t = topic.encode()
    return struct.pack(">hih", 0, 1, len(t)) + t + struct.pack(">i", -1)


def range_assign(topic: str, members: list[str], partitions: int) -> dict[str, bytes]:
    """Kafka's RangeAssignor for one topic, as ConsumerProtocolAssignment v0 bytes."""
    out: dict[str, bytes] = {}
    ordered = sorted(members)
    per, extra = divmod(partitions, len(ordered))
    start = 0
    t = topic.encode()
    for i, m in enumerate(ordered):
        n = per + (1 if i < extra else 0)
        parts = list(range(start, start + n))
        start += n
        out[m] = (struct.pack(">hih", 0, 1, len(t)) + t + struct.pack(">i", n)
                  + b"".join(struct.pack(">i", p) for p in parts) + struct.pack(">i", -1))
    return out


class SimMember:
    def __init__(self, conn: KafkaConnection, group: str, topic: str) -> None:
        self.conn, self.group, self.topic = conn, group, topic
        self.member_id = ""
        self.generation = -1
        self.assignment = b""
        self.stop = False

    async def join_and_sync(self) -> None:
        while True:
            r = await join_group(self.conn, self.group, member_id=self.member_id,
                                 protocol_type="consumer",
                                 protocols=[("range", subscription(self.topic))],
                                 session_timeout_ms=10000, rebalance_timeout_ms=10000)
            if r.error == ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = r.member_id
                continue
            assert r.error == 0, ErrorCode.from_code(r.error).name
            self.member_id, generation = r.member_id, r.generation_id
            plan = (range_assign(self.topic, [m.member_id for m in r.members], 20)
                    if r.is_leader else None)
            error, assignment = await sync_group(
                self.conn, self.group, generation_id=generation, member_id=self.member_id,
                assignments=plan, protocol_type="consumer", protocol_name="range")
            if error == ErrorCode.REBALANCE_IN_PROGRESS:
                continue
            assert error == 0, ErrorCode.from_code(error).name
            self.generation, self.assignment = generation, assignment
            return

    async def run(self) -> None:
        await self.join_and_sync()
        while not self.stop:
            await asyncio.sleep(0.05)
            error = await heartbeat(self.conn, self.group, generation_id=self.generation,
                                    member_id=self.member_id)
            if error == ErrorCode.REBALANCE_IN_PROGRESS:
                self.assignment = b""
                await self.join_and_sync()


async def bench_rebalance(port: int, members: int = 10, rounds: int = 3) -> None:
    times = []
    for i in range(rounds):
        group = f"bench-rebalance-{i}-{time.time_ns()}"
        conns = [await coordinator_conn(port, group) for _ in range(members)]
        sims = [SimMember(c, group, "bench-topic") for c in conns]
        t0 = time.perf_counter()
        tasks = [asyncio.create_task(s.run()) for s in sims]
        while True:
            gens = {s.generation for s in sims}
            if len(gens) == 1 and all(s.assignment for s in sims) and gens != {-1}:
                break
            for t in tasks:
                if t.done():
                    t.result()
            await asyncio.sleep(0.002)
        times.append(time.perf_counter() - t0)
        gen = sims[0].generation
        for s in sims:
            s.stop = True
        await asyncio.gather(*tasks, return_exceptions=True)
        for c in conns:
            await c.close()
        print(f"  round {i}: {times[-1] * 1000:.0f} ms, generation {gen}", flush=True)
    report("rebalance_10_members_s", max(times), "s",
           f"(worst of {rounds}; best {min(times):.3f} s)")


# -- 2. offset commits ----------------------------------------------------------------------

async def bench_commits(port: int, seconds: float, conns_n: int = 8, window: int = 16) -> None:
    group = "bench-commits"
    conns = [await coordinator_conn(port, group) for _ in range(conns_n)]
    done = 0
    deadline = 0.0

    async def worker(conn: KafkaConnection, w: int) -> None:
        nonlocal done
        offset = 0
        while time.perf_counter() < deadline:
            offset += 1
            errors = await offset_commit(conn, group, {("bench-topic", w % 50): offset})
            assert not any(errors.values()), errors
            done += 1
    # warm up, then measure
    deadline = time.perf_counter() + 0.5
    await asyncio.gather(*(worker(c, i * window + j) for i, c in enumerate(conns)
                           for j in range(window)))
    done = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    await asyncio.gather(*(worker(c, i * window + j) for i, c in enumerate(conns)
                           for j in range(window)))
    elapsed = time.perf_counter() - t0
    for c in conns:
        await c.close()
    report("offset_commits_per_s", done / elapsed, "/s",
           f"({done} commits in {elapsed:.1f} s; {conns_n} connections x {window} in flight)")


# -- 3. coordinator failover ----------------------------------------------------------------

async def offsets_leaders(port: int) -> dict[int, int]:
    """__consumer_offsets partition -> its leader (-1: none), as broker ``port`` sees it."""
    async with KafkaAdmin(f"{HOST}:{port}") as admin:
        cluster = await admin.metadata(["__consumer_offsets"], allow_auto_create=False)
    topic = cluster.topics.get("__consumer_offsets")
    return {} if topic is None else {p: info.leader for p, info in topic.partitions.items()}


async def fetch_ok(conn: KafkaConnection, group: str, want: dict[int, int]) -> bool:
    fetched = await offset_fetch(conn, group)
    if fetched.error:
        return False
    return {p: o.offset for (_, p), o in fetched.partitions.items()} == want


async def bench_failover(cluster: Cluster, groups_n: int) -> None:
    ports = {b.broker_id: b.port for b in cluster.brokers}
    groups = [f"bench-fo-{i}" for i in range(groups_n)]
    want = {p: ROUNDS * 100 + p for p in range(10)}
    t0 = time.perf_counter()
    leaders: dict[int, int] = {}
    for _ in range(600):  # __consumer_offsets is created on the first FindCoordinator
        await (await coordinator_conn(cluster.brokers[0].port, groups[0])).close()
        leaders = await offsets_leaders(cluster.brokers[0].port)
        if len(leaders) == 50 and all(v >= 0 for v in leaders.values()):
            break
        await asyncio.sleep(0.1)
    pool = {b: [await KafkaConnection.open(HOST, port) for _ in range(32)]
            for b, port in ports.items()}

    async def commit_group(i: int, g: str) -> None:
        # one request per round with all ten partitions, as a consumer commits; the rounds
        # go down one connection in order, so the last one is what stays committed
        conn = pool[leaders[partition_for_group(g, 50)]][i % 32]
        for rnd in range(1, ROUNDS + 1):
            errors = await offset_commit(conn, g, {("bench-topic", p): rnd * 100 + p
                                                   for p in range(10)})
            assert not any(errors.values()), errors
    await asyncio.gather(*(commit_group(i, g) for i, g in enumerate(groups)))
    print(f"  {groups_n} groups x 10 partitions x {ROUNDS} commits (acks=all, RF 3) in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    for conns_of in pool.values():
        for c in conns_of:
            await c.close()
    counts: dict[int, int] = {}
    for leader in leaders.values():
        counts[leader] = counts.get(leader, 0) + 1
    victim = max(counts, key=lambda b: counts[b])
    moved = {p for p, leader in leaders.items() if leader == victim}
    affected = [g for g in groups if partition_for_group(g, 50) in moved]
    survivor = next(b for b in cluster.brokers if b.broker_id != victim)

    cluster.kill9(cluster.broker(victim))
    t_kill = time.perf_counter()
    while True:
        now = await offsets_leaders(survivor.port)
        if all(now[p] not in (-1, victim) for p in moved):
            break
        await asyncio.sleep(0.02)
    t_elected = time.perf_counter()
    new_conns = {b: await KafkaConnection.open(HOST, ports[b]) for b in set(now.values())}
    pending = set(affected)
    while pending:
        results = await asyncio.gather(*(fetch_ok(new_conns[now[partition_for_group(g, 50)]],
                                                  g, want) for g in sorted(pending)))
        pending = {g for g, ok in zip(sorted(pending), results) if not ok}
        if pending:
            await asyncio.sleep(0.01)
    t_ready = time.perf_counter()
    for c in new_conns.values():
        await c.close()
    report("coordinator_failover_s", t_ready - t_elected, "s",
           f"(after election; {len(affected)} groups on {len(moved)} partitions moved off "
           f"broker {victim}; election itself {t_elected - t_kill:.1f} s after kill -9)")


# -- main -----------------------------------------------------------------------------------

def run(coro: Any) -> Any:
    """asyncio.run, on uvloop when it is installed (as the broker runs)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="rebalance,commits,failover")
    ap.add_argument("--commit-s", type=float, default=5.0)
    ap.add_argument("--groups", type=int, default=1000)
    args = ap.parse_args()
    only = set(args.only.split(","))
    print(f"# {command_line()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="pybroker-bench-groups-") as tmp:
        work = Path(tmp)
        with zookeeper(work) as zk:
            if only & {"rebalance", "commits"}:
                c = Cluster(zk, work / "one", size=1, overrides=BASE)
                c.start()
                try:
                    assert create_topic(c.brokers[0].port, "bench-topic", 50, 1) == 0
                    if "rebalance" in only:
                        run(bench_rebalance(c.brokers[0].port))
                    if "commits" in only:
                        run(bench_commits(c.brokers[0].port, args.commit_s))
                finally:
                    c.stop()
            if "failover" in only:
                c = Cluster(zk, work / "three", size=3, overrides={
                    **BASE, "offsets.topic.replication.factor": "3",
                    "offsets.topic.num.partitions": "50", "min.insync.replicas": "2"})
                c.start()
                try:
                    assert create_topic(c.brokers[0].port, "bench-topic", 50, 3) == 0
                    run(bench_failover(c, args.groups))
                finally:
                    c.stop()
    print("# " + "  ".join(f"{k}={v:.3f}" for k, v in FIGURES.values.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
