"""The long fault campaign (``make fault``): repeated faults for N minutes under an
idempotent acks=all load, then the full check. Not part of ``make test``.

    .venv/bin/python tests/fault/campaign.py --minutes 10 [--seed 1] [--brokers 3]
        [--partitions 6] [--rate 500] [--keep]

Each round picks a fault at random (seeded; the log prints every step so a failing
run can be replayed), waits for the cluster to notice it, lets the load run on, then
heals and waits for every ISR to be full again:

  kill-leader       SIGKILL the leader of a random partition, restart it
  kill-controller   SIGKILL the controller, restart it
  kill-follower     SIGKILL a broker that leads nothing of ours (or any broker)
  pause-leader      SIGSTOP a leader past the session timeout, then SIGCONT
  pause-short       SIGSTOP a leader for less than the session timeout, SIGCONT
  shutdown          SIGTERM a broker (controlled shutdown), restart it
  kill-all          SIGKILL every broker at once, restart them in a random order

Exit status 0 only when the checker, the invariant monitor and the log comparison
all pass; the summary gives the counts and the first violations.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.fault import checker  # noqa: E402
from tests.fault.cluster_faults import FaultCluster, FaultError, wait_for, zookeeper  # noqa: E402
from tests.fault.workload import LiveConsumer, LoadProducer, Monitor, final_check  # noqa: E402

TOPIC = "campaign"
FAULTS = ["kill-leader", "kill-leader", "kill-controller", "kill-follower", "pause-leader",
          "pause-short", "shutdown", "kill-all"]


class Campaign:
    def __init__(self, fc: FaultCluster, parts: list[int], rng: random.Random,
                 session_s: float, faults: list[str] | None = None) -> None:
        self.fc, self.parts, self.rng, self.session_s = fc, parts, rng, session_s
        self.faults = faults or FAULTS
        self.t0 = time.monotonic()
        self.counts: dict[str, int] = {}

    def log(self, msg: str) -> None:
        print(f"[{time.monotonic() - self.t0:8.2f}s] {msg}", flush=True)

    def heal(self) -> None:
        for b in self.fc.brokers:
            if b.broker_id in self.fc.paused:
                self.fc.sigcont(b)
        for b in self.fc.brokers:
            if not b.running:
                self.fc.restart(b, timeout=60)
        self.fc.wait_isr_full(TOPIC, len(self.parts), timeout=90)

    def round(self, history: checker.History) -> None:
        fault = self.rng.choice(self.faults)
        self.counts[fault] = self.counts.get(fault, 0) + 1
        fc = self.fc
        md = fc.metadata(TOPIC)
        p = self.rng.choice(self.parts)
        leader = fc.broker(md[p].leader)
        acked = history.acked_count()
        if fault == "kill-leader":
            self.log(f"{fault}: SIGKILL broker {leader.broker_id} (leader of p{p})")
            fc.sigkill(leader)
            fc.wait_leaders(TOPIC, self.parts, {leader.broker_id}, self.session_s + 20)
        elif fault == "kill-controller":
            ctl = fc.broker(fc.controller_id())
            self.log(f"{fault}: SIGKILL broker {ctl.broker_id}")
            fc.sigkill(ctl)
            wait_for("a new controller", lambda: fc.zk_controller() not in (None, ctl.broker_id),
                     self.session_s + 20)
        elif fault == "kill-follower":
            leaders = {pi.leader for pi in md.values()}
            cands = [b for b in fc.brokers if b.broker_id not in leaders] or fc.brokers
            b = self.rng.choice(cands)
            self.log(f"{fault}: SIGKILL broker {b.broker_id}")
            fc.sigkill(b)
        elif fault in ("pause-leader", "pause-short"):
            pause = self.session_s + 3 if fault == "pause-leader" else self.session_s / 3
            self.log(f"{fault}: SIGSTOP broker {leader.broker_id} for {pause:.1f}s")
            fc.sigstop(leader)
            time.sleep(pause)
            fc.sigcont(leader)
        elif fault == "shutdown":
            self.log(f"{fault}: SIGTERM broker {leader.broker_id}")
            code, took = fc.sigterm(leader, timeout=60)
            self.log(f"  exited with {code} after {took:.2f}s")
        elif fault == "kill-all":
            order = self.rng.sample(fc.brokers, len(fc.brokers))
            self.log(f"{fault}: SIGKILL all; restart order {[b.broker_id for b in order]}")
            for b in fc.brokers:
                fc.sigkill(b)
            for b in order:
                fc.restart(b, timeout=60)
                time.sleep(self.rng.uniform(0, 2))
        time.sleep(self.rng.uniform(0.5, 3))
        self.heal()
        self.log(f"  healed; acks {acked} -> {history.acked_count()}")


def describe(fc: FaultCluster) -> str:
    """Who is running, the controller and each partition's ZooKeeper state."""
    parts = []
    for p in range(64):
        try:
            st = fc.zk_partition_state(TOPIC, p)
        except Exception:  # noqa: BLE001 - past the last partition
            break
        parts.append(f"p{p}: leader {st['leader']} epoch {st['leader_epoch']} isr {st['isr']}")
    running = [b.broker_id for b in fc.live()]
    return (f"running {running}, registered {sorted(fc.zk_registered())}, controller "
            f"{fc.zk_controller()}; " + "; ".join(parts))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--rate", type=float, default=500.0, help="records/s")
    ap.add_argument("--max-rounds", type=int, default=1000)
    ap.add_argument("--faults", default=",".join(sorted(set(FAULTS))),
                    help="comma-separated subset of: " + ", ".join(sorted(set(FAULTS))))
    ap.add_argument("--keep", action="store_true", help="keep the work dir (broker logs)")
    args = ap.parse_args()
    print(f"# campaign seed={args.seed} minutes={args.minutes} brokers={args.brokers} "
          f"partitions={args.partitions}", flush=True)
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="pybroker-campaign-"))
    parts = list(range(args.partitions))
    ok = False
    try:
        with zookeeper(work) as zk:
            fc = FaultCluster(zk, work, args.brokers).start()
            try:
                fc.create_topic(TOPIC, args.partitions, min(3, args.brokers),
                                {"min.insync.replicas": "2"})
                history = checker.History()
                prod = LoadProducer(fc.bootstrap, TOPIC, parts, history, rate=args.rate).start()
                cons = LiveConsumer(fc.bootstrap, TOPIC, parts, history).start()
                mon = Monitor(fc, TOPIC, parts, interval=0.5).start()
                fc.cleanups += [mon.stop, cons.stop, prod.close]
                chosen = [f for f in FAULTS if f in args.faults.split(",")]
                if not chosen:
                    raise SystemExit(f"--faults: none of {args.faults!r} is known")
                camp = Campaign(fc, parts, rng, 4.0, chosen)
                deadline = time.monotonic() + args.minutes * 60
                rounds = 0
                try:
                    while time.monotonic() < deadline and rounds < args.max_rounds:
                        camp.round(history)
                        rounds += 1
                        if history.fatal:
                            camp.log(f"producer fatal error: {history.fatal}")
                            break
                except FaultError as e:
                    stuck = str(e)
                    camp.log(f"cluster did not recover: {e}")
                    camp.log(f"  state: {describe(fc)}")
                else:
                    stuck = ""
                undelivered = prod.stop(90)
                cons.stop()
                # A cluster that did not heal is checked anyway (leaders only, no log
                # comparison): acknowledged records must still all be there.
                res = final_check(fc, TOPIC, parts, history, mon, converge_timeout=120,
                                  compare_logs=not stuck, require_full_isr=not stuck)
                print(f"# rounds {rounds} {camp.counts}; sent {prod.sent()} undelivered "
                      f"{undelivered}; producer errors {prod.errors}; fatal {history.fatal}; "
                      f"consumer saw {cons.count}; monitor samples {mon.inv.samples} "
                      f"(skipped {mon.skipped})")
                print(res.summary())
                if stuck:
                    print(f"# NOT HEALED: {stuck}")
                ok = res.ok and not history.fatal and not stuck
            finally:
                fc.stop()
    finally:
        if args.keep or not ok:
            print(f"# work dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("# campaign " + ("PASSED" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
