"""The fault campaign on virtual hosts (``make fault``; issue 16, items 4 and 7):
seeded schedules of network, ZooKeeper, disk and process faults under a mixed queue
load, checked by the queue checker, the replicas on disk and availability figures.

    .venv/bin/python tests/fault/net_campaign.py --schedules 100 [--seed 1]
        [--kinds a,b,...] [--replay SEED] [--rate 100] [--check-every 5] [--keep]

The cluster: a 3-server ZooKeeper ensemble (hosts zk1-zk3), three brokers (b0-b2),
each with two log dirs, the second an ext4 image of its own (the disk faults' target),
and a client host running the load (tests/fault/queue_load.py: idempotent and plain
producers with acks=all, an assigned consumer and a group of two committing
consumers) on a topic of 6 partitions, RF 3, min.insync.replicas 2.

A schedule is one fault kind (tests/fault/fault_kinds.py lists them), now and then
with a second, "mixable" fault laid over it. Schedule seeds are drawn from ``--seed``
and each encodes its kind (seed % number of kinds), so ``--replay SEED`` runs exactly
that schedule again on a fresh cluster. The kinds come round in shuffled cycles, so
100 schedules hit each of the 20 kinds 5 times.

Each schedule: apply; hold; heal; then the availability figures (the slowest
partition's first acknowledged write sent after the fault, and after the heal); then
recovery (every broker registered, every ISR full); every ``--check-every``
schedules, the replicas on disk (tests/fault/replica_checks.py: byte-identical below
the HW, leader-epoch caches agree). At the end: the load stops, every partition is
read whole, the checker judges the history, and the replicas are checked once more.

Exit status 0 only when the checker finds no anomaly, the replicas agree, every
schedule healed, and (unless ``--no-availability-gate``) no availability target was
missed. The history, the broker logs and the network's fault log are kept under the
work dir on failure or with ``--keep``.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.fault.availability import AckTimes, Figures  # noqa: E402
from tests.fault.cluster_faults import FAULT_OVERRIDES, FaultError, wait_for  # noqa: E402
from tests.fault.fault_kinds import (KINDS, MIXABLE, Active, World, eligible,  # noqa: E402
                                     heal_order)
from tests.fault.netns_cluster import NetBroker, NetFaultCluster  # noqa: E402
from tests.fault.replica_checks import check_replicas  # noqa: E402

TOPIC = "queue"
ZK_HOSTS = ["zk1", "zk2", "zk3"]
BROKER_HOSTS = ["b0", "b1", "b2"]
KIND_NAMES = list(KINDS)                  # the order fixes what a seed means
SESSION_S = int(FAULT_OVERRIDES["zookeeper.session.timeout.ms"]) / 1000
MIX_CHANCE = 0.25


def schedule_seeds(seed: int, count: int, kinds: Sequence[str]) -> list[int]:
    """``count`` schedule seeds; each kind of ``kinds`` once per shuffled cycle."""
    rng = random.Random(seed)
    out: list[int] = []
    while len(out) < count:
        cycle = list(kinds)
        rng.shuffle(cycle)
        for k in cycle[:count - len(out)]:
            s = rng.randrange(1 << 40)
            out.append(s - s % len(KIND_NAMES) + KIND_NAMES.index(k))
    return out


def kind_of(seed: int) -> str:
    return KIND_NAMES[seed % len(KIND_NAMES)]


@dataclass
class DiskBroker(NetBroker):
    """A NetBroker with a second log dir, ``<dir>/disk`` (an ext4 image's mount)."""

    @property
    def disk_dir(self) -> Path:
        return self.dir / "disk"

    @property
    def log_dirs(self) -> list[Path]:
        return [self.log_dir, self.disk_dir]

    def argv(self) -> list[str]:
        one = f"log.dirs={self.log_dir}"
        return [f"{one},{self.disk_dir}" if a == one else a for a in super().argv()]


@dataclass
class Outcome:
    schedules: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    not_healed: str = ""


class Runner:
    def __init__(self, world: World, load: object, acks: AckTimes, figures: Figures,
                 check_every: int) -> None:
        self.w, self.load, self.acks, self.figures = world, load, acks, figures
        self.check_every = check_every
        self.out = Outcome()
        self.t0 = time.monotonic()

    def log(self, msg: str) -> None:
        print(f"[{time.monotonic() - self.t0:8.2f}s] {msg}", flush=True)

    def replica_hosts(self) -> dict[int, list[str]]:
        md = self.w.fc.metadata(self.w.topic)
        return {p: [self.w.host(r) for r in md[p].replicas] for p in self.w.partitions}

    def apply(self, kind: str, rng: random.Random) -> Active:
        a = KINDS[kind](self.w, rng)
        self.out.counts[kind] = self.out.counts.get(kind, 0) + 1
        self.log(f"  apply {kind}: {a.detail}; hold {a.hold:.1f}s")
        return a

    def schedule(self, i: int, seed: int) -> None:
        rng = random.Random(seed)
        kind = kind_of(seed)
        self.log(f"schedule {i} seed {seed}: {kind}")
        replicas = self.replica_hosts()
        t_fault = time.monotonic()
        actives = [self.apply(kind, rng)]
        if rng.random() < MIX_CHANCE:
            second = rng.choice([k for k in MIXABLE if k != kind])
            time.sleep(rng.uniform(0, min(2.0, actives[0].hold)))
            actives.append(self.apply(second, rng))
        must = eligible(replicas, self.w.zk_hosts, actives)
        hold = max(a.hold for a in actives)
        time.sleep(max(0.0, t_fault + hold - time.monotonic()))
        t_heal_start = time.monotonic()
        for a in heal_order(actives):
            a.heal()
        t_heal = time.monotonic()
        self.log(f"  healed in {t_heal - t_heal_start:.1f}s")
        from_fault = {}
        for p in self.w.partitions:
            first = self.acks.first_ack(p, t_fault)
            from_fault[p] = None if first is None or first > t_heal_start else first - t_fault
        from_heal = self.acks.wait_all(self.w.partitions, t_heal, 60)
        label = "+".join(a.kind for a in actives)
        self.figures.add(label if len(actives) > 1 else kind, i, from_fault, must,
                         t_heal_start - t_fault, from_heal)
        self.log(f"  writable: from fault {_fmt(from_fault)} (must: {sorted(must)}); "
                 f"from heal {_fmt(from_heal)}")
        self.recover()
        if rng.random() < 0.1:
            self.log("  restart a group consumer")
            self.load.restart_consumer()      # type: ignore[attr-defined]
        if self.check_every and (i + 1) % self.check_every == 0:
            self.check()

    def recover(self, timeout: float = 120.0) -> None:
        fc = self.w.fc
        for b in fc.brokers:                  # a schedule must leave them all running
            if not b.running:
                raise FaultError(f"broker {b.broker_id} not running after the heal")
        everyone = {b.broker_id for b in fc.brokers}
        wait_for("every broker registered", lambda: everyone <= fc.zk_registered(), timeout, 0.2)
        fc.wait_isr_full(self.w.topic, len(self.w.partitions), timeout)

    def heal_all(self) -> None:
        """After a schedule that did not heal: undo every fault there may be left (the
        network, paused or stopped ZooKeeper servers, paused or dead brokers), so that
        what was acknowledged can still be read and checked."""
        w = self.w
        w.net.heal()
        for h in w.zk_hosts:
            srv = w.ensemble.server(h)
            with contextlib.suppress(Exception):
                if srv.running:
                    srv.resume()
                else:
                    srv.start()
        with contextlib.suppress(Exception):
            w.ensemble.wait_quorum(30)
        for b in w.fc.brokers:
            with contextlib.suppress(Exception):
                w.fc.sigcont(b)
                if not b.running:
                    w.fc.restart(b, timeout=60)

    def check(self) -> None:
        def dirs(bid: int) -> list[Path]:
            b = self.w.fc.broker(bid)
            return b.log_dirs if isinstance(b, DiskBroker) else [b.log_dir]
        problems = check_replicas(self.w.fc, self.w.topic, self.w.partitions, dirs)
        self.log(f"  replicas: {'agree' if not problems else problems[:3]}")
        self.out.problems += problems

    def run(self, seeds: Sequence[int]) -> Outcome:
        try:
            for i, seed in enumerate(seeds):
                self.schedule(i, seed)
                self.out.schedules += 1
        except (FaultError, OSError) as e:
            self.out.not_healed = f"schedule {self.out.schedules}: {type(e).__name__}: {e}"
            self.log(f"NOT HEALED: {self.out.not_healed}")
        return self.out


def _fmt(d: dict[int, float | None]) -> str:
    vals = [v for v in d.values() if v is not None]
    missing = sorted(p for p, v in d.items() if v is None)
    worst = f"max {max(vals):.2f}s" if vals else "none"
    return worst + (f", none on {missing}" if missing else "")


@contextlib.contextmanager
def campaign_cluster(work: Path, disk_mb: int) -> Iterator[World]:
    """The virtual hosts, the ensemble, the disks and the brokers, all stopped and
    removed on exit."""
    from tests.fault.disk_faults import LoopDisk
    from tests.fault.netns import VirtualNetwork
    from tests.fault.zk_ensemble import ZkEnsemble

    with contextlib.ExitStack() as stack:
        net = stack.enter_context(VirtualNetwork([*ZK_HOSTS, *BROKER_HOSTS, "client"]))
        ens = stack.enter_context(ZkEnsemble(net, ZK_HOSTS, work / "zk", probe_from="client"))
        fc = NetFaultCluster(net, ens.connect, work, BROKER_HOSTS)
        fc.ensemble = ens              # type: ignore[attr-defined]   (zk_ensemble's helpers)
        fc.cluster.brokers = [DiskBroker(b.broker_id, b.port, b.dir, b.zk_connect, b.overrides,
                                         net=net, host=b.host, probe_from="client")
                              for b in fc.cluster.brokers]       # type: ignore[attr-defined]
        disks = {}
        for b in fc.cluster.brokers:
            assert isinstance(b, DiskBroker)
            b.disk_dir.mkdir(parents=True, exist_ok=True)
            disks[b.broker_id] = stack.enter_context(
                LoopDisk(b.disk_dir, work / "images", size_mb=disk_mb))
        stack.callback(fc.stop)
        fc.start()
        yield World(net, fc, ens, list(ZK_HOSTS), disks, TOPIC, [], SESSION_S)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--schedules", type=int, default=100)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--replay", type=int, action="append", default=[],
                    help="run exactly this schedule seed (repeatable)")
    ap.add_argument("--kinds", default=",".join(KIND_NAMES),
                    help="comma-separated subset of: " + ", ".join(KIND_NAMES))
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--rate", type=float, default=100.0, help="values/s per producer")
    ap.add_argument("--check-every", type=int, default=5)
    ap.add_argument("--disk-mb", type=int, default=256)
    ap.add_argument("--no-availability-gate", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    if unknown := [k for k in kinds if k not in KINDS]:
        ap.error(f"--kinds: unknown {unknown}")
    seeds = args.replay or schedule_seeds(args.seed, args.schedules, kinds)
    print(f"# net campaign seed={args.seed} schedules={len(seeds)} "
          f"partitions={args.partitions} rate={args.rate}/s per producer", flush=True)
    return run(seeds, args.partitions, args.rate, args.check_every, args.disk_mb,
               gate=not args.no_availability_gate, keep=args.keep)


def run(seeds: Sequence[int], partitions: int = 6, rate: float = 100.0,
        check_every: int = 5, disk_mb: int = 256, gate: bool = True, keep: bool = False,
        work: Path | None = None) -> int:
    from tests.fault.queue_history import QueueHistory
    from tests.fault.queue_load import QueueLoad

    work = work or Path(tempfile.mkdtemp(prefix="pybroker-net-campaign-"))
    ok = False
    try:
        with campaign_cluster(work, disk_mb) as w:
            w.partitions = list(range(partitions))
            w.fc.create_topic(TOPIC, partitions, 3, {"min.insync.replicas": "2"})
            history = QueueHistory()
            load = QueueLoad(w.fc.bootstrap, TOPIC, w.partitions, history,
                             make=w.fc.in_client, rate=rate, log_dir=work)
            w.fc.cleanups.append(load.close)
            load.start()
            acks = AckTimes(history)
            acks.wait_all(w.partitions, time.monotonic(), 30)
            figures = Figures(from_fault_target=SESSION_S + 5)
            runner = Runner(w, load, acks, figures, check_every)
            w.log = runner.log
            out = runner.run(seeds)
            if out.not_healed:
                runner.log("healing everything before the final reads")
                runner.heal_all()
            runner.log("stopping the load")
            load.stop()
            with contextlib.suppress(FaultError):
                runner.recover()
            load.final_reads(w.fc)
            report = load.check()
            history.save(work / "history.jsonl")
            if not out.not_healed:
                runner.check()
            (work / "faults.log").write_text("\n".join(w.net.log_lines()) + "\n")
            print(f"# schedules {out.schedules}/{len(seeds)}; kinds {out.counts}")
            print(report.summary())
            if not report.ok:       # tells a broker de-duplication bug from librdkafka's
                print(load.client_logs())
                print(f"# whole eos logs: {work}/producer-*.eos.log")
            print("# availability (seconds; from fault: partitions that must stay writable)")
            print(figures.table())
            for m in figures.misses:
                print(f"# availability miss: {m}")
            for pr in out.problems[:20]:
                print(f"# replicas: {pr}")
            if out.not_healed:
                print(f"# NOT HEALED: {out.not_healed}")
            ok = (report.ok and not out.problems and not out.not_healed
                  and (not gate or not figures.misses))
    finally:
        if keep or not ok:
            print(f"# work dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("# net campaign " + ("PASSED" if ok else "FAILED"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
