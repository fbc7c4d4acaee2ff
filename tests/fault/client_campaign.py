"""The client campaign (issue 30; part of ``make fault``): how long each stock client,
on its default settings, takes to write again to every partition when a leader is
cut off from ZooKeeper and its peers while the clients still reach it.

    .venv/bin/python tests/fault/client_campaign.py [--rounds 5] [--kinds a,b]
        [--clients a,b,...] [--session-ms 6000] [--rate 60] [--seed N] [--keep]

The cluster: ZooKeeper (host zk) and three brokers (b0-b2) on virtual hosts, a topic of
6 partitions, RF 3, min.insync.replicas 2, ``zookeeper.session.timeout.ms`` S. On the
client host, one producer loop per client of tests/fault/produce_loops.CLIENTS (the
Java client's by tests/fault/JavaProduceLoop.java), each writing every partition in
turn at ``--rate`` values/s, acks=all.

Fault kinds (``--rounds`` of each, in turn):

  leader-isolated      a broker that leads partitions, not the controller, cut from
                       ZooKeeper and the other brokers; the client host still reaches it
  controller-isolated  the same for the controller's broker (it leads partitions too)

Each fault holds S + 8 s (past the target S + 5 s), then heals; the run waits for full
ISRs and puts the preferred leaders back before the next. Every partition keeps a
connected majority through these faults, so each must take a write from every client
within S + 5 s of the cut. Per fault kind and client the table gives the seconds from
the cut to the slowest partition's first acknowledged write sent at or after the cut,
and from the heal likewise (target 5 s): medians and maxima.

At the end the loops flush and stop, every partition is read whole: an acknowledged
value missing is lost (none may be), a value written twice a duplicate (none may be
for the idempotent clients). Exit status 0 only when nothing was lost or duplicated
and every target was met; the brokers' logs and each loop's stderr are kept under the
work dir on failure or with ``--keep``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.fault.cluster_faults import FaultError, wait_for  # noqa: E402
from tests.fault.netns_cluster import NetFaultCluster  # noqa: E402
from tests.fault.produce_loops import CLIENTS, ProduceLoop  # noqa: E402

TOPIC = "clients"
PARTITIONS = 6
BROKER_HOSTS = ["b0", "b1", "b2"]
KINDS = ("leader-isolated", "controller-isolated")
BASE_STRIDE = 1_000_000_000          # client k's values start at k * BASE_STRIDE
HOLD_PAST_TARGET_S = 3.0             # a fault lasts S + 5 s + this
HEAL_TARGET_S = 5.0


@dataclass
class Figures:
    """Per (kind, client): the slowest partition's seconds from the cut and from the
    heal, one entry per fault (None: no write before the heal / within 60 s)."""

    from_fault: dict[tuple[str, str], list[float | None]] = field(default_factory=dict)
    from_heal: dict[tuple[str, str], list[float | None]] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)

    def add(self, kind: str, client: str, round_no: int, fault: float | None,
            heal: float | None, fault_target: float) -> None:
        self.from_fault.setdefault((kind, client), []).append(fault)
        self.from_heal.setdefault((kind, client), []).append(heal)
        if fault is None or fault > fault_target:
            self.misses.append(f"{kind} round {round_no} {client}: from the cut "
                               f"{_secs(fault)} (target {fault_target:.1f}s)")
        if heal is None or heal > HEAL_TARGET_S:
            self.misses.append(f"{kind} round {round_no} {client}: from the heal "
                               f"{_secs(heal)} (target {HEAL_TARGET_S:.1f}s)")

    def table(self) -> str:
        def col(vals: list[float | None]) -> str:
            got = [v for v in vals if v is not None]
            if len(got) < len(vals):
                return f"{'none':>7} /{len(vals) - len(got):>2} of {len(vals)}"
            return f"{statistics.median(got):7.2f} /{max(got):7.2f}"
        lines = [f"{'fault kind':20} {'client':22} {'n':>2} {'from cut med/max':>17} "
                 f"{'from heal med/max':>17}"]
        for (kind, client), vals in self.from_fault.items():
            lines.append(f"{kind:20} {client:22} {len(vals):2} {col(vals):>17} "
                         f"{col(self.from_heal[(kind, client)]):>17}")
        return "\n".join(lines)


def _secs(v: float | None) -> str:
    return "none" if v is None else f"{v:.2f}s"


def _leader_view(lp: ProduceLoop, led: Sequence[int], t_cut: float, t_heal: float) -> str:
    """When a client that reports its metadata (the Java loop) saw the cut leader's
    partitions move: '; saw p0: -1 @4.1s, 2 @6.5s'."""
    moves = [(t - t_cut, p, node) for t, p, node in list(lp.leaders)
             if p in led and t_cut <= t <= t_heal]
    if not moves:
        return ""
    return "; saw " + ", ".join(f"p{p}->{node} @{dt:.1f}s" for dt, p, node in moves)


class Campaign:
    def __init__(self, fc: NetFaultCluster, loops: list[ProduceLoop], session_s: float,
                 rng: random.Random) -> None:
        self.fc, self.loops, self.session_s, self.rng = fc, loops, session_s, rng
        self.figures = Figures()
        self.t0 = time.monotonic()

    def log(self, msg: str) -> None:
        print(f"[{time.monotonic() - self.t0:8.2f}s] {msg}", flush=True)

    def leaders(self) -> dict[int, int]:
        return {p: pi.leader for p, pi in self.fc.metadata(TOPIC).items()}

    def victim(self, kind: str) -> int:
        ctl = self.fc.controller_id()
        leaders = set(self.leaders().values())
        if kind == "controller-isolated":
            if ctl not in leaders:
                raise FaultError(f"the controller {ctl} leads no partition of {TOPIC}")
            return ctl
        return self.rng.choice(sorted(leaders - {ctl}))

    def slowest(self, loop: ProduceLoop, since: float, until: float) -> float | None:
        """Seconds from ``since`` to the last partition's first ack of a send made at
        or after ``since`` (None if one has none before ``until``)."""
        worst = 0.0
        for p in range(PARTITIONS):
            a = loop.first_ack(p, since)
            if a is None or a > until:
                return None
            worst = max(worst, a - since)
        return worst

    def round(self, kind: str, i: int) -> None:
        fc, net = self.fc, self.fc.net
        victim = self.victim(kind)
        host = fc.host_of(victim)
        led = sorted(p for p, b in self.leaders().items() if b == victim)
        others = [h for h in net.hosts if h not in (host, fc.client_host)]
        hold = self.session_s + 5 + HOLD_PAST_TARGET_S
        self.log(f"{kind} round {i}: broker {victim} (leads {led}) | {others}; hold {hold:.1f}s")
        t_cut = time.monotonic()
        fault = net.partition([host], others)
        time.sleep(hold)
        t_heal = time.monotonic()
        net.heal(fault)
        wait_for("every partition writable by every client after the heal",
                 lambda: all(self.slowest(lp, t_heal, float("inf")) is not None
                             for lp in self.loops), 60, 0.1)
        for lp in self.loops:
            cut = self.slowest(lp, t_cut, t_heal)
            healed = self.slowest(lp, t_heal, float("inf"))
            self.figures.add(kind, lp.client, i, cut, healed, self.session_s + 5)
            self.log(f"  {lp.client:22} from cut {_secs(cut):>7}  from heal {_secs(healed):>7}"
                     + _leader_view(lp, led, t_cut, t_heal))
        self.settle()

    def settle(self) -> None:
        everyone = {b.broker_id for b in self.fc.brokers}
        wait_for("every broker registered", lambda: everyone <= self.fc.zk_registered(), 60, 0.2)
        self.fc.wait_isr_full(TOPIC, PARTITIONS, 60)
        self.preferred_leaders()

    def preferred_leaders(self) -> None:
        """ElectLeaders (preferred) until every partition is led by its first replica
        again, so that each broker leads two partitions in the next round."""
        from protocol.api_keys import ApiKey
        from protocol.spec import api

        req = api(ApiKey.ELECT_LEADERS).request
        tps = [req.structs["TopicPartitions"].new(topic=TOPIC, partitions=list(range(PARTITIONS)))]

        def elected() -> bool:
            with self.fc.client(self.fc.zk_controller()) as c:
                c.request(ApiKey.ELECT_LEADERS, 1, req.new(election_type=0,
                                                           topic_partitions=tps,
                                                           timeout_ms=10_000))
            md = self.fc.metadata(TOPIC)        # every partition, not all() of none
            return set(md) == set(range(PARTITIONS)) and all(pi.leader == pi.replicas[0]
                                                             for pi in md.values())
        wait_for("preferred leaders", elected, 60, 0.5)

    def check(self) -> list[str]:
        """Lost acknowledged values (any client) and duplicates (idempotent clients)."""
        problems: list[str] = []
        seen: dict[int, int] = {}
        for p in range(PARTITIONS):
            for _offset, value in self.fc.read_partition(TOPIC, p, timeout=60):
                v = int(value or b"-1")
                seen[v] = seen.get(v, 0) + 1
        for lp in self.loops:
            acked = [v for vs in lp.acked_values().values() for v in vs]
            lost = sorted(v for v in acked if v not in seen)
            mine = {v: n for v, n in seen.items() if lp.base <= v < lp.base + BASE_STRIDE}
            dups = sorted(v for v, n in mine.items() if n > 1)
            self.log(f"{lp.client:22} sent {lp.sent}, acked {len(acked)}, in the log "
                     f"{len(mine)}, lost {len(lost)}, duplicated {len(dups)}, "
                     f"errors {lp.errors or 'none'}")
            if lost:
                problems.append(f"{lp.client}: {len(lost)} acknowledged values lost, e.g. {lost[:5]}")
            if dups and lp.idempotent:
                problems.append(f"{lp.client} (idempotent): {len(dups)} values written twice, "
                                f"e.g. {dups[:5]}")
        return problems


def run(kinds: Sequence[str], clients: Sequence[str], rounds: int, session_ms: int,
        rate: float, seed: int, keep: bool = False, work: Path | None = None) -> int:
    from tests.fault.netns_cluster import virtual_cluster

    work = work or Path(tempfile.mkdtemp(prefix="pybroker-client-campaign-"))
    ok = False
    java_cp = None
    if "java" in clients:
        from tests.oracle import install_java_client
        java_cp = install_java_client.classpath()
    try:
        overrides = {"zookeeper.session.timeout.ms": str(session_ms)}
        with virtual_cluster(work, BROKER_HOSTS, overrides=overrides) as (net, fc):
            fc.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
            loops = [ProduceLoop(c, fc.bootstrap, TOPIC, PARTITIONS,
                                 k * BASE_STRIDE, rate, java_cp, work)
                     for k, c in enumerate(clients)]
            try:
                for lp in loops:
                    lp.start(lambda argv, **kw: net.popen(fc.client_host, argv, **kw))
                camp = Campaign(fc, loops, session_ms / 1000, random.Random(seed))
                t = time.monotonic()
                wait_for("every client writing every partition",
                         lambda: all(camp.slowest(lp, t, float("inf")) is not None
                                     for lp in loops), 90, 0.2)
                camp.settle()
                for i in range(rounds):
                    for kind in kinds:
                        camp.round(kind, i)
            finally:
                for lp in loops:
                    lp.stop()
            for lp in loops:
                if lp.proc is not None and lp.proc.returncode not in (0, None):
                    print(f"# {lp.client} exited {lp.proc.returncode}:\n{lp.stderr_tail()}")
            problems = camp.check()
            print(f"# client campaign: {rounds} rounds of {list(kinds)}, session "
                  f"{session_ms} ms, target from the cut {session_ms / 1000 + 5:.1f}s, "
                  f"from the heal {HEAL_TARGET_S:.1f}s")
            print(camp.figures.table())
            for m in camp.figures.misses:
                print(f"# target missed: {m}")
            for pr in problems:
                print(f"# {pr}")
            ok = not problems and not camp.figures.misses
    finally:
        if keep or not ok:
            print(f"# work dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("# client campaign " + ("PASSED" if ok else "FAILED"), flush=True)
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--session-ms", type=int, default=6000)
    ap.add_argument("--rate", type=float, default=60.0, help="values/s per client")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    clients = [c for c in args.clients.split(",") if c]
    if bad := [k for k in kinds if k not in KINDS]:
        ap.error(f"--kinds: unknown {bad}; of {list(KINDS)}")
    if bad := [c for c in clients if c not in CLIENTS]:
        ap.error(f"--clients: unknown {bad}; of {list(CLIENTS)}")
    print(f"# client campaign seed={args.seed} rounds={args.rounds} kinds={kinds} "
          f"clients={clients}", flush=True)
    return run(kinds, clients, args.rounds, args.session_ms, args.rate, args.seed, args.keep)


if __name__ == "__main__":
    sys.exit(main())
