"""Does a member joining a busy group pause the others? The consumer protocol (KIP-848) against
the classic protocol's cooperative-sticky and eager (range) assignors, with confluent-kafka.

Per run and protocol: one broker (ZooKeeper, tests/integration/cluster.py), a fresh topic of
--partitions partitions fed at --rate records/s by an idempotent producer, --members members
(tests/integration/groups/protocol_member.py, each its own process, started a heartbeat
interval apart in all so that their heartbeats are out of phase) settled with an equal share; after --baseline-s seconds one more member joins. The join window runs from the moment
its process starts until every member holds its new share, each partition once (the members'
own assign/revoke callback logs, CLOCK_MONOTONIC; tests/integration/groups/ownership_checker.py).
Figures, medians over --runs runs:

  longest_pause_s   the longest stretch of the window in which an existing member polled no
                    record (the worst member);
  others_rate_ratio the existing members' records/s during the window over their records/s in
                    the --baseline-s before it;
  join_s            the window's length;
  revoked           partitions the existing members gave up during the window (those that
                    move to the new member, or all of them);
  kept_revoked      of those, partitions that stayed with their member yet were revoked and
                    assigned back (an eager rebalance stops them too).
The verdict is the integration test's assertion: kept_revoked == 0 and longest_pause_s under
its limit.
Members commit synchronously after each batch (at-least-once, as applications do): a commit
the client holds during a rebalance is part of the pause.

The limit is JOIN_PAUSE_LIMIT_S in tests/integration/groups/ownership_checker.py.
Timings (--timings, each on a broker of its own): "kafka" = Kafka's defaults (classic clients
heartbeat every 3 s with a 45 s session; the broker's group.consumer.heartbeat.interval.ms is 5 s,
its session 45 s), and "500" = heartbeats every 500 ms and a 6 s session on both protocols (the
integration test's setting; the classic members' client settings, the broker's group.consumer.*
for the consumer protocol).

    .venv/bin/python bench/consumer_protocol_join_pause.py [--runs 3] [--timings kafka,500]
        [--protocols consumer,cooperative,eager] [--members 3] [--partitions 12] [--rate 600]
        [--baseline-s 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._env import command_line, create_topic, one_broker  # noqa: E402
from tests.integration.groups.group_processes import OwnedMember, SteadyProducer  # noqa: E402
from tests.integration.groups.ownership_checker import (JOIN_PAUSE_LIMIT_S,  # noqa: E402
                                                        MemberLog, interrupted, longest_gap_s)



def timing(name: str) -> tuple[dict[str, str], dict[str, str]]:
    """-> (broker overrides, classic members' environment) of a --timings entry."""
    if name == "kafka":
        return {}, {"MEMBER_HEARTBEAT_MS": "3000", "MEMBER_SESSION_TIMEOUT_MS": "45000"}
    beat = int(name)
    session = max(6000, 3 * beat)
    return ({"group.consumer.session.timeout.ms": str(session),
             "group.consumer.min.session.timeout.ms": "1000",
             "group.consumer.heartbeat.interval.ms": str(beat),
             "group.consumer.min.heartbeat.interval.ms": "100"},
            {"MEMBER_HEARTBEAT_MS": str(beat), "MEMBER_SESSION_TIMEOUT_MS": str(session)})

PROTOCOL_NAMES = {"consumer": "consumer (KIP-848, uniform)",
                  "cooperative": "classic cooperative-sticky", "eager": "classic eager (range)"}


def shares(members: int, partitions: int) -> list[int]:
    per, extra = divmod(partitions, members)
    return [per + (1 if i < extra else 0) for i in range(members)]


def wait_shares(members: list[OwnedMember], topic: str, partitions: int, limit_s: float) -> int:
    """Until every member holds its share and each partition has one owner; -> when (ns)."""
    want = sorted(shares(len(members), partitions))
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        owned = [m.owned() for m in members]
        every = [tp for o in owned for tp in o]
        if (sorted(len(o) for o in owned) == want and len(every) == len(set(every)) == partitions):
            return time.monotonic_ns()
        for m in members:
            if not m.alive:
                raise RuntimeError(f"member {m.name} exited:\n{m.stderr_tail()}")
        time.sleep(0.02)
    raise RuntimeError(f"no stable assignment within {limit_s:g}s: "
                       + ", ".join(f"{m.name}={len(m.owned())}" for m in members))


def count(log: MemberLog, start: int, end: int) -> int:
    return sum(1 for t in log.record_times() if start <= t < end)


def one_run(bootstrap: str, protocol: str, args: argparse.Namespace, work: Path,
            env: dict[str, str]) -> dict[str, float]:
    # the members start a heartbeat interval apart in all, so their heartbeats are out of phase
    # as in real deployments (in phase, an eager rebalance finds everyone ready at once)
    stagger_s = int(env["MEMBER_HEARTBEAT_MS"]) / 1000 / args.members
    topic = create_topic(bootstrap, args.partitions, prefix=f"pause-{protocol}")
    group = f"pause-{protocol}-{uuid.uuid4().hex[:8]}"
    producer = SteadyProducer(bootstrap, topic, args.partitions, args.rate)
    producer.start()
    everyone: list[OwnedMember] = []
    try:
        for i in range(args.members):
            time.sleep(stagger_s if i else 0)
            everyone.append(OwnedMember("confluent", f"{protocol}-m{i}-{group}", work, bootstrap,
                                        topic, group, protocol, env=env))
        existing = list(everyone)
        wait_shares(existing, topic, args.partitions, 90)
        time.sleep(args.baseline_s)
        w0 = time.monotonic_ns()
        everyone.append(OwnedMember("confluent", f"{protocol}-join-{group}", work, bootstrap,
                                    topic, group, protocol, env=env))
        w1 = wait_shares(everyone, topic, args.partitions, 90)
        for m in existing:
            m.log.refresh()
        base0 = w0 - int(args.baseline_s * 1e9)
        before = sum(count(m.log, base0, w0) for m in existing) / args.baseline_s
        during = sum(count(m.log, w0, w1) for m in existing) / ((w1 - w0) / 1e9)
        gap = max(longest_gap_s(m.log, w0, w1) for m in existing)
        revoked = sum(len(e["tps"]) for m in existing for e in m.log.events
                      if e["ev"] in ("revoke", "lost") and w0 <= e["t"] <= w1)
        stopped = sum(len(interrupted(m.log, w0, w1)) for m in existing)
        return {"longest_pause_s": gap, "others_rate_ratio": during / max(before, 1e-9),
                "join_s": (w1 - w0) / 1e9, "revoked": revoked, "kept_revoked": stopped}
    finally:
        for m in everyone:
            m.stop()
        producer.stop(30)


def summarize(name: str, results: dict[str, list[dict[str, float]]],
              args: argparse.Namespace) -> None:
    med = {p: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
           for p, rs in results.items()}
    print(f"medians of {args.runs} runs (timings {name}): {args.members} members + 1 joining, "
          f"{args.partitions} partitions, {args.rate:g} records/s")
    print(f"{'protocol':<30} {'join_s':>8} {'longest_pause_s':>16} {'others_rate_ratio':>18}"
          f" {'revoked':>8} {'kept_revoked':>12}  the test's assertion (no kept partition "
          f"revoked, pause < {JOIN_PAUSE_LIMIT_S:g}s)")
    for p, rs in results.items():
        m = med[p]
        held = sum(1 for r in rs if r["kept_revoked"] == 0
                   and r["longest_pause_s"] < JOIN_PAUSE_LIMIT_S)
        verdict = f"holds in {held} of {len(rs)} runs" + ("" if held == len(rs) else "  FAILS")
        print(f"{PROTOCOL_NAMES.get(p, p):<30} {m['join_s']:8.2f} {m['longest_pause_s']:16.2f} "
              f"{m['others_rate_ratio']:18.2f} {m['revoked']:8g} {m['kept_revoked']:12g}  "
              f"{verdict}")
    if "consumer" in med:
        base = med["consumer"]
        for p, m in med.items():
            if p != "consumer":
                print(f"{p} / consumer: longest pause "
                      f"x{m['longest_pause_s'] / max(base['longest_pause_s'], 1e-9):.1f}, "
                      f"others' rate during the join "
                      f"x{m['others_rate_ratio'] / max(base['others_rate_ratio'], 1e-9):.2f}",
                      flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timings", default="kafka,500")
    ap.add_argument("--protocols", default="consumer,cooperative,eager")
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--rate", type=float, default=600.0)
    ap.add_argument("--baseline-s", type=float, default=3.0)
    args = ap.parse_args()
    protocols = [p for p in args.protocols.split(",") if p]
    print(f"# {command_line()}", flush=True)
    for name in [t for t in args.timings.split(",") if t]:
        broker_overrides, env = timing(name)
        results: dict[str, list[dict[str, float]]] = {p: [] for p in protocols}
        print(f"\n## timings {name}: broker {broker_overrides or 'Kafka defaults'}, "
              f"classic members {env}", flush=True)
        with tempfile.TemporaryDirectory(prefix="pybroker-bench-pause-") as tmp, \
                one_broker(broker_overrides) as broker:
            for run in range(args.runs):
                for protocol in protocols:
                    r = one_run(broker.bootstrap, protocol, args, Path(tmp), env)
                    results[protocol].append(r)
                    print(f"  run {run} {protocol:<12} join {r['join_s']:.2f}s, longest pause "
                          f"of the others {r['longest_pause_s']:.2f}s, their rate during/before "
                          f"{r['others_rate_ratio']:.2f}, revoked {r['revoked']:g} (kept "
                          f"{r['kept_revoked']:g})", flush=True)
        summarize(name, results, args)
    print(f"# {command_line()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
