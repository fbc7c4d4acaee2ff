"""Transaction latency on 3 brokers (issue 27): back-to-back transactions per second per
producer, and the time from a broker's kill -9 to the next commit.

Target: >= 200 transactions/s per producer with librdkafka (it was ~48 before issue 27's
fix, with which EndTxn is answered once the markers are written instead of the next
transaction's AddPartitionsToTxn meeting CONCURRENT_TRANSACTIONS and the client's back-off).

    .venv/bin/python bench/txn_latency.py [--only throughput,failover]
        [--clients librdkafka,java] [--runs 3] [--seconds 5] [--records 100] [--size 100]
        [--victim leader|coordinator|controller] [--failover-runs 3] [--steady-s 5]
        [--restart-after-s 8] [--broker-config KEY=VALUE ...] [--keep-dir DIR]

Set-up: a ZooKeeper and 3 broker processes under a temp dir (bench/_env.py's ``cluster``:
tests/integration/cluster.py, every process stopped by pid at the end; ``--keep-dir``
keeps it, broker logs included), with min.insync.replicas=2,
default.replication.factor=3, transaction.state.log.replication.factor=3,
transaction.state.log.min.isr=2, offsets.topic.replication.factor=3,
zookeeper.session.timeout.ms=6000, plus each ``--broker-config``. One output topic of 3 partitions at replication factor 3. Every
transaction: begin, ``--records`` records of ``--size`` zero bytes without a key, record
i to partition i % 3 (so each transaction writes to all 3 partitions and its markers go to
all 3 leaders), commit. The producers run with their client's defaults but acks=all.

1. throughput (``--only throughput``): per run and client, a producer with a fresh
   transactional id: init (not timed), 10 warm-up transactions (not timed), then
   transactions back to back for ``--seconds`` of wall time. transactions/s = committed
   transactions / that time, the median over ``--runs``; commit latency = the time of
   commit_transaction() (Java: commitTransaction()) alone, p50 / p99 over every timed
   commit of every run. librdkafka is confluent-kafka in this process; Java is
   bench/JavaTxnBench.java on kafka-clients 3.9.1 (``java -cp CP bench/JavaTxnBench.java``,
   JDK 17 source launch; one JVM serves every run, so later runs are not JIT-cold). The
   two clients alternate their order from run to run. Broker CPU per transaction = the
   3 brokers' utime + stime over a run (init and warm-up included) / its transactions
   (warm-up included), the median over runs: what bounds the rate on a 2-core machine.
2. failover (``--only failover``, librdkafka): a thread runs begin / produce / commit in a
   loop (commit_transaction(30 s); a retriable error, a time-out included: commit again;
   an abortable one: abort and go on; each error is shown with its time from the kill).
   After ``--steady-s`` of commits the victim is killed with SIGKILL (``--victim``:
   leader = the leader of the output topic's partition 0; coordinator = the transaction
   coordinator of the loop's transactional id, as FindCoordinator names it, i.e. the
   leader of its __transaction_state partition; controller = Metadata's controller id).
   It is started again ``--restart-after-s`` after the kill (once ZooKeeper dropped its
   session). Figure: seconds from the kill to the first commit_transaction() that
   returns successfully after it (~0 when a commit already answered was in flight), the
   median over ``--failover-runs``; and from the kill to the commit of the first
   transaction begun after it. Errors are timed when the client reports them (its error
   callback: at the next commit). Between runs the benchmark waits until every
   partition of the output topic and of __transaction_state has its 3 replicas in sync
   again.

Each section ends with the command that reproduces its figures alone.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from _env import (Figures, add_broker_config_option, broker_configs,  # type: ignore[import-not-found]  # noqa: E501
                  cluster, command_line, create_topic, java_classpath, percentile)

from client import KafkaConnection
from client.groups import TRANSACTION_KEY, find_coordinator
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient
from tests.integration.cluster import HOST, Cluster

T = TypeVar("T")
BENCH = Path(__file__).resolve().parent
JAVA_PROGRAM = BENCH / "JavaTxnBench.java"
PARTITIONS = 3
WARMUP_TRANSACTIONS = 10
TXN_STATE = "__transaction_state"
OVERRIDES = {"min.insync.replicas": "2", "default.replication.factor": "3",
             "transaction.state.log.replication.factor": "3",
             "transaction.state.log.min.isr": "2",
             "offsets.topic.replication.factor": "3",
             "zookeeper.session.timeout.ms": "6000"}
TARGETS = {"librdkafka transactions/s": (">=", 200.0)}
FIGURES = Figures(TARGETS, width=32)
report = FIGURES.report


def wait_for(what: str, fn: Callable[[], T | None], timeout: float, interval: float = 0.1) -> T:
    """Poll ``fn`` until it returns something other than None; RuntimeError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def section_command(section: str) -> str:
    """This run's command line with ``--only section`` in place of any --only."""
    args, skip = [], False
    for a in sys.argv[1:]:
        if skip:
            skip = False
        elif a == "--only":
            skip = True
        elif not a.startswith("--only="):
            args.append(a)
    saved, sys.argv = sys.argv, [sys.argv[0], "--only", section, *args]
    try:
        return command_line()
    finally:
        sys.argv = saved


def producer_config(bootstrap: str, transactional_id: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
            "acks": "all", "log_level": 2}   # no log line per refused connection


# -- 1. back-to-back transactions ------------------------------------------------------------

@dataclass
class Run:
    transactions: int
    elapsed_s: float
    commits_s: list[float]          # commit_transaction() alone, each timed transaction
    broker_cpu_s: float = 0.0       # the 3 brokers' utime + stime over the whole run

    @property
    def cpu_per_transaction_ms(self) -> float:
        """Broker CPU per transaction: over init, warm-up and timed ones alike."""
        return self.broker_cpu_s / (self.transactions + WARMUP_TRANSACTIONS) * 1000

    @property
    def per_s(self) -> float:
        return self.transactions / self.elapsed_s


def brokers_cpu_s(c: Cluster) -> float:
    """utime + stime of the cluster's running broker processes (/proc/<pid>/stat)."""
    total = 0
    for b in c.brokers:
        if b.pid is not None:
            fields = Path(f"/proc/{b.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def produce_transaction(p: Producer, topic: str, records: int, value: bytes,
                        on_delivery: Callable[[Any, Any], None]) -> None:
    p.begin_transaction()
    for i in range(records):
        while True:
            try:
                p.produce(topic, value, partition=i % PARTITIONS, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.001)


def librdkafka_run(bootstrap: str, topic: str, records: int, size: int,
                   seconds: float) -> Run:
    p = Producer(producer_config(bootstrap, f"bench-rdk-{uuid.uuid4().hex[:8]}"))
    failed: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(err)
    value = bytes(size)
    p.init_transactions(60)

    def transaction() -> float:
        produce_transaction(p, topic, records, value, on_delivery)
        t0 = time.perf_counter()
        p.commit_transaction(60)
        return time.perf_counter() - t0
    for _ in range(WARMUP_TRANSACTIONS):
        transaction()
    commits: list[float] = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        commits.append(transaction())
    elapsed = time.perf_counter() - start
    if failed:
        raise RuntimeError(f"librdkafka: {len(failed)} records failed ({failed[0]})")
    return Run(len(commits), elapsed, commits)


class JavaBench:
    """One JVM running bench/JavaTxnBench.java; ``run`` asks it for one run."""

    def __init__(self, bootstrap: str, topic: str, records: int, size: int, work: Path) -> None:
        self.stderr_path = work / "java-txn-bench.stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            ["java", "-cp", java_classpath(), str(JAVA_PROGRAM), bootstrap, topic,
             str(PARTITIONS), str(records), str(size)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self._expect("READY", 120.0)    # the source launch compiles the program first
        except BaseException:
            self.close()
            raise

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def _expect(self, prefix: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"java: no {prefix} line in {timeout:g} s\n{self.tail()}")
            if line is None:
                raise RuntimeError(f"java exited ({self.proc.wait(10)})\n{self.tail()}")
            if line.startswith(prefix):
                return line

    def run(self, seconds: float) -> Run:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"run bench-java-{uuid.uuid4().hex[:8]} {WARMUP_TRANSACTIONS} "
                              f"{seconds}\n")
        self.proc.stdin.flush()
        parts = self._expect("RESULT", seconds + 120.0).split(" ")
        commits = parts[3].split(",") if len(parts) > 3 else []
        return Run(int(parts[1]), int(parts[2]) / 1e9, [int(c) / 1e9 for c in commits if c])

    def tail(self) -> str:
        text = self.stderr_path.read_text(errors="replace").splitlines()[-30:]
        return "\n".join(text)

    def close(self) -> None:
        """quit on stdin, then the process by its pid (SIGKILL after 20 s)."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._stderr.close()


def bench_throughput(c: Cluster, topic: str, args: argparse.Namespace) -> None:
    clients = list(args.clients)
    if "java" in clients and shutil.which("java") is None:
        print("java: skipped (no java on PATH; JDK 17 needed)", flush=True)
        clients.remove("java")
    java = JavaBench(c.bootstrap, topic, args.records, args.size, c.base_dir) \
        if "java" in clients else None
    runs: dict[str, list[Run]] = {name: [] for name in clients}
    try:
        for i in range(args.runs):
            order = clients if i % 2 == 0 else clients[::-1]
            for name in order:
                cpu0 = brokers_cpu_s(c)
                if name == "java":
                    assert java is not None
                    run = java.run(args.seconds)
                else:
                    run = librdkafka_run(c.bootstrap, topic, args.records, args.size,
                                         args.seconds)
                run.broker_cpu_s = brokers_cpu_s(c) - cpu0
                runs[name].append(run)
            print(f"run {i + 1}: " + ", ".join(
                f"{name} {runs[name][-1].per_s:.1f} tx/s "
                f"(commit p50 {statistics.median(runs[name][-1].commits_s) * 1000:.1f} ms, "
                f"broker CPU {runs[name][-1].cpu_per_transaction_ms:.1f} ms per tx)"
                for name in clients), flush=True)
    finally:
        if java is not None:
            java.close()
    for name in clients:
        rates = [r.per_s for r in runs[name]]
        commits = [s for r in runs[name] for s in r.commits_s]
        report(f"{name} transactions/s", statistics.median(rates), "tx/s",
               f"(runs: {', '.join(f'{x:.1f}' for x in rates)}; {args.records} records each)")
        report(f"{name} commit p50", percentile(commits, 50) * 1000, "ms",
               f"({len(commits)} commits)")
        report(f"{name} commit p99", percentile(commits, 99) * 1000, "ms")
        report(f"{name} broker CPU per tx",
               statistics.median(r.cpu_per_transaction_ms for r in runs[name]), "ms",
               "(3 brokers' utime + stime over each run / its transactions, warm-up "
               "included; median of runs)")
    print(f"reproduce: {section_command('throughput')}", flush=True)


# -- 2. kill -9 to the next commit -----------------------------------------------------------

class CommitLoop(threading.Thread):
    """begin / produce / commit with librdkafka until stopped; ``done`` holds (begun,
    commit returned) per committed transaction (perf_counter seconds)."""

    def __init__(self, bootstrap: str, topic: str, records: int, size: int) -> None:
        super().__init__(daemon=True, name="commit-loop")
        self.transactional_id = f"bench-failover-{uuid.uuid4().hex[:8]}"
        self.bootstrap, self.topic, self.records, self.value = bootstrap, topic, records, \
            bytes(size)
        self.done: list[tuple[float, float]] = []
        self.errors: list[tuple[float, str]] = []     # (perf_counter, what)
        self.aborted = 0
        self.failure: BaseException | None = None
        self.stopping = threading.Event()

    def _count(self, what: str) -> None:
        self.errors.append((time.perf_counter(), what))

    def _delivered(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self._count(f"delivery:{err.name()}")

    def run(self) -> None:
        try:
            p = Producer({**producer_config(self.bootstrap, self.transactional_id),
                          "error_cb": lambda err: self._count(f"client:{err.name()}")})
            p.init_transactions(60)
            while not self.stopping.is_set():
                begun = time.perf_counter()
                produce_transaction(p, self.topic, self.records, self.value, self._delivered)
                if self._commit(p):
                    self.done.append((begun, time.perf_counter()))
        except BaseException as e:   # noqa: BLE001 - reported by the main thread
            self.failure = e

    def _commit(self, p: Producer) -> bool:
        """commit_transaction() until it succeeds (True) or the transaction must be
        aborted (then aborted: False); a fatal error raises."""
        while True:
            try:
                p.commit_transaction(30)
                return True
            except KafkaException as e:
                err = e.args[0]
                self._count(f"commit:{err.name()}")
                if err.txn_requires_abort():
                    while True:
                        try:
                            p.abort_transaction(30)
                            self.aborted += 1
                            return False
                        except KafkaException as e2:
                            self._count(f"abort:{e2.args[0].name()}")
                            if not e2.args[0].retriable():
                                raise
                if not err.retriable():
                    raise

    def check(self) -> None:
        if self.failure is not None:
            raise RuntimeError(f"commit loop failed: {self.failure!r}") from self.failure


async def _txn_coordinator(port: int, transactional_id: str) -> int | None:
    async with await KafkaConnection.open(HOST, port) as conn:
        co = await find_coordinator(conn, transactional_id, key_type=TRANSACTION_KEY)
        return co.node_id if co.error == 0 else None


def victim_roles(c: Cluster, topic: str, transactional_id: str) -> dict[int, list[str]]:
    """broker id -> its roles for this loop: leader of output partitions, coordinator,
    controller."""
    md = AdminClient({"bootstrap.servers": c.bootstrap}).list_topics(timeout=10)
    roles: dict[int, list[str]] = {b.broker_id: [] for b in c.brokers}
    for p in range(PARTITIONS):
        roles[md.topics[topic].partitions[p].leader].append(f"leader of {topic}-{p}")
    port = next(b.port for b in c.brokers if b.running)
    coordinator = wait_for("the transaction coordinator", lambda: asyncio.run(
        _txn_coordinator(port, transactional_id)), 30.0)
    roles[coordinator].append("coordinator")
    roles[md.controller_id].append("controller")
    return roles


def pick_victim(roles: dict[int, list[str]], kind: str, topic: str) -> int:
    want = {"leader": f"leader of {topic}-0", "coordinator": "coordinator",
            "controller": "controller"}[kind]
    return next(b for b, r in roles.items() if want in r)


def wait_healthy(c: Cluster, topic: str, timeout: float = 90.0) -> None:
    """Until every broker is in Metadata and every partition of ``topic`` and of
    __transaction_state has a leader and its 3 replicas in sync."""
    admin = AdminClient({"bootstrap.servers": c.bootstrap})

    def healthy() -> bool | None:
        md = admin.list_topics(timeout=10)
        if len(md.brokers) < len(c.brokers):
            return None
        for name in (topic, TXN_STATE):
            t = md.topics.get(name)
            if t is None or t.error is not None or not t.partitions:
                return None
            if any(p.leader < 0 or len(p.isrs) < len(c.brokers) for p in t.partitions.values()):
                return None
        return True
    wait_for("full ISRs after the restart", healthy, timeout, 0.5)


@dataclass
class Outcome:
    victim: int
    roles: list[str]
    to_commit_s: float | None            # kill -> first commit returning after it
    to_new_txn_s: float | None           # kill -> commit of the first txn begun after it
    back_s: float                        # kill -> the victim ready again
    errors: list[tuple[float, str]] = field(default_factory=list)   # (s after the kill, what)
    aborted: int = 0

    def error_summary(self) -> str:
        """``what xN (first at S s)`` per kind of error, in order of first sight."""
        seen: dict[str, list[float]] = {}
        for at, what in self.errors:
            seen.setdefault(what, []).append(at)
        return ", ".join(f"{what} x{len(ats)} (first at {ats[0]:+.2f} s)"
                         for what, ats in seen.items()) or "none"


def failover_run(c: Cluster, topic: str, args: argparse.Namespace) -> Outcome:
    loop = CommitLoop(c.bootstrap, topic, args.records, args.size)
    loop.start()
    try:
        def committed_since(t: float, begun: bool = False) -> float | None:
            loop.check()
            return next((r for b, r in loop.done if (b if begun else r) > t), None)
        first = wait_for("the first commit", lambda: committed_since(0.0), 60.0)
        wait_for(f"{args.steady_s:g} s of commits",
                 lambda: committed_since(first + args.steady_s), args.steady_s + 60.0)
        roles = victim_roles(c, topic, loop.transactional_id)
        victim_id = pick_victim(roles, args.victim, topic)
        victim = c.broker(victim_id)
        killed = time.perf_counter()
        c.kill9(victim)
        time.sleep(max(0.0, killed + args.restart_after_s - time.perf_counter()))
        c.restart(victim)
        back = time.perf_counter() - killed
        limit = killed + args.restart_after_s + 60.0
        try:
            wait_for("a commit after the kill", lambda: committed_since(killed, True),
                     max(0.0, limit - time.perf_counter()))
        except RuntimeError:
            pass    # reported as no commit
        loop.check()
        to_commit = committed_since(killed)
        to_new = committed_since(killed, True)
        errors, aborted = [(at - killed, what) for at, what in loop.errors], loop.aborted
    finally:
        loop.stopping.set()
        loop.join(60)
    wait_healthy(c, topic)
    return Outcome(victim_id, roles[victim_id], None if to_commit is None else to_commit - killed,
                   None if to_new is None else to_new - killed, back, errors, aborted)


def _seconds(v: float | None) -> str:
    return "none" if v is None else f"{v:.2f} s"


def bench_failover(c: Cluster, topic: str, args: argparse.Namespace) -> None:
    outcomes: list[Outcome] = []
    for i in range(args.failover_runs):
        o = failover_run(c, topic, args)
        outcomes.append(o)
        print(f"failover run {i + 1}: killed broker {o.victim} ({', '.join(o.roles)}): "
              f"first commit after {_seconds(o.to_commit_s)}, first new transaction committed "
              f"after {_seconds(o.to_new_txn_s)}; victim ready again after {o.back_s:.2f} s; "
              f"{o.aborted} aborted; errors: {o.error_summary()}",
              flush=True)
    for label, values in ((f"kill -9 {args.victim} -> commit", [o.to_commit_s for o in outcomes]),
                          (f"  -> new transaction committed", [o.to_new_txn_s for o in outcomes])):
        got = [v for v in values if v is not None]
        if got:
            report(label, statistics.median(got), "s",
                   f"(runs: {', '.join(_seconds(v) for v in values)}; median of the "
                   f"{len(got)} of {len(values)} with a commit)")
        else:
            print(f"{label}: none within {args.restart_after_s + 60:g} s of the kill in any "
                  f"run", flush=True)
    print(f"reproduce: {section_command('failover')}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="throughput,failover",
                    help="comma-separated: throughput, failover")
    ap.add_argument("--clients", default="librdkafka,java",
                    help="throughput clients, comma-separated: librdkafka, java")
    ap.add_argument("--runs", type=int, default=3, help="throughput runs per client")
    ap.add_argument("--seconds", type=float, default=5.0, help="timed seconds per run")
    ap.add_argument("--records", type=int, default=100, help="records per transaction")
    ap.add_argument("--size", type=int, default=100, help="value bytes")
    ap.add_argument("--victim", choices=("leader", "coordinator", "controller"),
                    default="coordinator")
    ap.add_argument("--failover-runs", type=int, default=3)
    ap.add_argument("--steady-s", type=float, default=5.0,
                    help="seconds of commits before the kill")
    ap.add_argument("--restart-after-s", type=float, default=8.0,
                    help="the victim starts again this long after the kill")
    ap.add_argument("--keep-dir", type=Path,
                    help="keep the cluster's directory (broker logs) under this one")
    add_broker_config_option(ap)
    args = ap.parse_args()
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    args.clients = [s.strip() for s in args.clients.split(",") if s.strip()]
    if only - {"throughput", "failover"} or set(args.clients) - {"librdkafka", "java"}:
        ap.error("--only takes throughput,failover; --clients librdkafka,java")
    overrides = {**OVERRIDES, **broker_configs(args)}
    started = time.monotonic()
    print("3 brokers, RF 3, min.insync.replicas=2; broker settings: "
          + ", ".join(f"{k}={v}" for k, v in overrides.items()), flush=True)
    with cluster(3, overrides, keep=args.keep_dir) as c:
        if args.keep_dir:
            print(f"cluster directory (kept): {c.base_dir}", flush=True)
        topic = create_topic(c.bootstrap, PARTITIONS, "bench-txn-latency", 3)
        if "throughput" in only:
            print(f"throughput: {args.runs} runs x {args.seconds:g} s per client, "
                  f"{args.records} records of {args.size} B per transaction", flush=True)
            bench_throughput(c, topic, args)
        if "failover" in only:
            print(f"failover: kill -9 the {args.victim} after {args.steady_s:g} s of commits, "
                  f"restart it {args.restart_after_s:g} s later; {args.failover_runs} runs",
                  flush=True)
            bench_failover(c, topic, args)
    print(f"total {time.monotonic() - started:.0f} s; reproduce all: {command_line()}")


if __name__ == "__main__":
    main()
