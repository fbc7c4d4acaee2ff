"""100 members join one group: time to a stable assignment, the consumer protocol (KIP-848)
against the classic protocol (eager range and cooperative-sticky), with confluent-kafka.

Per run and protocol: one broker (ZooKeeper, tests/integration/cluster.py) and a fresh group
on a topic of --partitions partitions (default 2 per member). --members librdkafka consumers
live in --procs worker processes (this file with --worker); each worker creates its consumers,
says it is ready, and on "go" (written to every worker at once, time t0) subscribes them all
and polls them round-robin. Their rebalance callbacks (assign, revoke, lost) come back as JSON
lines stamped with CLOCK_MONOTONIC. The assignment is stable when every partition is owned by
exactly one member and every member holds its share (partitions / members, +1 for the first
partitions % members); the figure is the time from t0 to the callback that made it so. It must
still hold --confirm-s later (else the run goes on). Medians over --runs runs.

Timings (--timings, each on a broker of its own; see bench/consumer_protocol_join_pause.py):
"kafka" = Kafka's defaults (classic: heartbeat 3 s, session 45 s; consumer protocol: the
broker's group.consumer.heartbeat.interval.ms 5 s, session 45 s), "500" = 500 ms heartbeats on
both. The classic groups run under each of --initial-delay-ms (the broker's
group.initial.rebalance.delay.ms: an empty classic group waits that long for more members
before its first rebalance, and each join in that time extends the wait, up to the rebalance
timeout): Kafka's default 3000 and 0 (config/server.properties). The consumer protocol has no
such delay and runs once.

    .venv/bin/python bench/consumer_protocol_join.py [--runs 3] [--members 100] [--procs 4]
        [--protocols consumer,eager,cooperative] [--timings kafka,500] [--initial-delay-ms 3000,0]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# -- the worker: N consumers in one process ----------------------------------------------------


def worker(bootstrap: str, topic: str, group: str, protocol: str, first: int, count: int,
           heartbeat_ms: int, session_ms: int) -> None:
    from confluent_kafka import Consumer

    from tests.integration.groups.protocol_member import member_config

    lock = threading.Lock()

    def emit(member: int, ev: str, parts: list[Any]) -> None:
        line = json.dumps({"t": time.monotonic_ns(), "m": member, "ev": ev,
                           "p": [p.partition for p in parts]})
        with lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def callbacks(member: int) -> dict[str, Any]:
        return {"on_assign": lambda c, ps: emit(member, "assign", ps),
                "on_revoke": lambda c, ps: emit(member, "revoke", ps),
                "on_lost": lambda c, ps: emit(member, "lost", ps)}

    cfg = member_config(bootstrap, group, protocol, None, session_ms, heartbeat_ms)
    consumers = [Consumer({**cfg, "client.id": f"m{first + i}"}) for i in range(count)]
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return
    for i, c in enumerate(consumers):
        c.subscribe([topic], **callbacks(first + i))
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    while not stop.is_set():
        for c in consumers:
            c.poll(0)
        time.sleep(0.005)
    closers = [threading.Thread(target=c.close) for c in consumers]
    for t in closers:
        t.start()
    for t in closers:
        t.join(30)
    os._exit(0)


# -- the driver ------------------------------------------------------------------------------


class Workers:
    """The worker processes of one run, their events merged into one queue."""

    def __init__(self, bootstrap: str, topic: str, group: str, protocol: str, members: int,
                 procs: int, env: dict[str, str]) -> None:
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.procs: list[subprocess.Popen[str]] = []
        per, extra = divmod(members, procs)
        first = 0
        for i in range(procs):
            n = per + (1 if i < extra else 0)
            argv = [sys.executable, __file__, "--worker", bootstrap, topic, group, protocol,
                    str(first), str(n), env["MEMBER_HEARTBEAT_MS"],
                    env["MEMBER_SESSION_TIMEOUT_MS"]]
            first += n
            self.procs.append(subprocess.Popen(argv, stdin=subprocess.PIPE,
                                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                               text=True, cwd=REPO))
        for p in self.procs:
            assert p.stdout is not None
            line = p.stdout.readline()
            if line.strip() != "ready":
                raise RuntimeError(f"worker {p.pid} did not start: {line!r}")
        for p in self.procs:
            threading.Thread(target=self._read, args=(p,), daemon=True).start()

    def _read(self, p: subprocess.Popen[str]) -> None:
        assert p.stdout is not None
        for line in p.stdout:
            if line.startswith("{"):
                self.events.put(json.loads(line))

    def say(self, word: str) -> None:
        for p in self.procs:
            assert p.stdin is not None
            try:
                p.stdin.write(word + "\n")
                p.stdin.flush()
            except BrokenPipeError:
                pass

    def stop(self, timeout: float = 60.0) -> None:
        """Tell the workers to close their consumers; SIGKILL by pid whoever is still there."""
        self.say("stop")
        deadline = time.monotonic() + timeout
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(10)


def shares(members: int, partitions: int) -> list[int]:
    per, extra = divmod(partitions, members)
    return sorted(per + (1 if i < extra else 0) for i in range(members))


class Ownership:
    """Member -> partitions it owns, from the callbacks; ``stable()`` per the docstring."""

    def __init__(self, members: int, partitions: int) -> None:
        self.owned: dict[int, set[int]] = {m: set() for m in range(members)}
        self.want = shares(members, partitions)
        self.partitions = partitions
        self.callbacks = 0

    def apply(self, e: dict[str, Any]) -> None:
        self.callbacks += 1
        if e["ev"] == "assign":
            self.owned[e["m"]] |= set(e["p"])
        else:
            self.owned[e["m"]] -= set(e["p"])

    def stable(self) -> bool:
        every = [p for ps in self.owned.values() for p in ps]
        return (len(every) == self.partitions == len(set(every))
                and sorted(len(ps) for ps in self.owned.values()) == self.want)

    def summary(self) -> str:
        every = [p for ps in self.owned.values() for p in ps]
        return (f"{sum(1 for ps in self.owned.values() if ps)} members own something, "
                f"{len(set(every))} of {self.partitions} partitions owned, "
                f"{len(every) - len(set(every))} owned twice")


def one_run(bootstrap: str, protocol: str, args: argparse.Namespace, env: dict[str, str]
            ) -> dict[str, float]:
    from bench._env import create_topic
    partitions = args.partitions or 2 * args.members
    topic = create_topic(bootstrap, partitions, prefix=f"join100-{protocol}")
    group = f"join100-{protocol}-{uuid.uuid4().hex[:8]}"
    workers = Workers(bootstrap, topic, group, protocol, args.members, args.procs, env)
    own = Ownership(args.members, partitions)
    try:
        t0 = time.monotonic_ns()
        workers.say("go")
        deadline = time.monotonic() + args.limit_s
        # (when seen stable, the last callback's time then, callbacks until then)
        stable: tuple[int, int, int] | None = None
        last_t = t0
        while time.monotonic() < deadline:
            try:
                e: dict[str, Any] | None = workers.events.get(timeout=0.05)
            except queue.Empty:
                e = None
            if e is not None:
                own.apply(e)
                last_t = max(last_t, e["t"])
                if not own.stable():
                    stable = None
                elif stable is None:
                    stable = (time.monotonic_ns(), last_t, own.callbacks)
            if stable is not None and time.monotonic_ns() - stable[0] > args.confirm_s * 1e9:
                return {"stable_s": (stable[1] - t0) / 1e9, "callbacks": float(stable[2])}
        raise RuntimeError(f"{protocol}: no stable assignment within {args.limit_s:g}s "
                           f"({own.summary()})")
    finally:
        workers.stop()


def report(name: str, results: dict[str, list[dict[str, float]]],
           args: argparse.Namespace) -> None:
    from bench.consumer_protocol_join_pause import PROTOCOL_NAMES
    print(f"medians of {args.runs} runs (timings {name}): {args.members} members, "
          f"{args.partitions or 2 * args.members} partitions")
    med = {k: statistics.median(r["stable_s"] for r in rs) for k, rs in results.items()}
    for key, m in med.items():
        protocol, _, delay = key.partition("@")
        label = PROTOCOL_NAMES.get(protocol, protocol) + (f", initial delay {delay} ms"
                                                          if delay else "")
        rs = [r["stable_s"] for r in results[key]]
        line = (f"{label:<50} stable after {m:7.2f} s (min {min(rs):.2f}, max {max(rs):.2f}, "
                f"{statistics.median(r['callbacks'] for r in results[key]):g} callbacks)")
        if "consumer" in med and key != "consumer":
            line += f"  x{m / med['consumer']:.2f} the consumer protocol's"
        print(line, flush=True)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        a = sys.argv[2:]
        worker(a[0], a[1], a[2], a[3], int(a[4]), int(a[5]), int(a[6]), int(a[7]))
        return 0
    from bench._env import command_line, one_broker
    from bench.consumer_protocol_join_pause import timing

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--members", type=int, default=100)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--partitions", type=int, default=0, help="default: 2 per member")
    ap.add_argument("--protocols", default="consumer,eager,cooperative")
    ap.add_argument("--timings", default="kafka,500")
    ap.add_argument("--initial-delay-ms", default="3000,0",
                    help="group.initial.rebalance.delay.ms values (comma list)")
    ap.add_argument("--limit-s", type=float, default=180.0)
    ap.add_argument("--confirm-s", type=float, default=2.0)
    args = ap.parse_args()
    protocols = [p for p in args.protocols.split(",") if p]
    delays = [int(d) for d in str(args.initial_delay_ms).split(",") if d]
    print(f"# {command_line()}", flush=True)
    failed = False
    for name in [t for t in args.timings.split(",") if t]:
        broker_overrides, env = timing(name)
        results: dict[str, list[dict[str, float]]] = {}
        for i, delay in enumerate(delays):
            # the delay matters to classic groups only: the consumer protocol runs once
            runs_here = [p for p in protocols if i == 0 or p != "consumer"]
            overrides = {**broker_overrides, "group.initial.rebalance.delay.ms": str(delay)}
            print(f"\n## timings {name}: broker {overrides}, classic members {env}", flush=True)
            with one_broker(overrides) as broker:
                for run in range(args.runs):
                    for protocol in runs_here:
                        key = protocol if protocol == "consumer" else f"{protocol}@{delay}"
                        try:
                            r = one_run(broker.bootstrap, protocol, args, env)
                        except RuntimeError as e:
                            print(f"  run {run} {key:<16} FAILED: {e}", flush=True)
                            failed = True
                            continue
                        results.setdefault(key, []).append(r)
                        print(f"  run {run} {key:<16} stable after {r['stable_s']:.2f}s "
                              f"({r['callbacks']:g} callbacks)", flush=True)
        report(name, results, args)
    print(f"# {command_line()}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
