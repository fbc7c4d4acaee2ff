"""The transactional fault campaign (``make fault-txn``): consume-transform-produce
over N records on three brokers (every topic at replication factor 3, min ISR 2) while
the transaction coordinator's broker, a partition leader and the controller are each
killed -9 (or stopped past the ZooKeeper session) K times, then the checker
(tests/fault/txn_checker.py).

    .venv/bin/python tests/fault/txn_campaign.py --records 100000 --kills 10 [--seed 1]
        [--kinds coordinator,leader,controller] [--stop] [--recover-limit 11]
        [--processors 2] [--input-partitions 4] [--output-partitions 3] [--batch 200]
        [--timeout 1800] [--restart-after-expiry] [--keep]

The kills are spread over the run by progress: after each 1/(kinds*K+1) of the input
has been committed, the next victim (in turn the broker coordinating a processor's
transactional id, found by FindCoordinator, the leader of a random output or input
partition, and the controller) is killed -9 and started again 0.5-2 s later, as a
process supervisor would (it replaces its dead session's registration and never leaves
the cluster's metadata: controller/zk.py ``register_broker``), and the run waits for
every ISR to be full again before the next fault. ``--restart-after-expiry`` starts it
only once ZooKeeper dropped its session: the broker is out of the metadata meanwhile,
and librdkafka, which forgets a broker that leaves the metadata even when its group
coordinator is cached there (confluentinc/librdkafka#5511), can hang in
``send_offsets_to_transaction``; the processors abandon such a call (counted as hangs,
tests/fault/txn_workload.py) and go on. With
``--stop`` every other fault is a SIGSTOP held past the session timeout (the broker is
fenced and replaced meanwhile), then SIGCONT.

Liveness is measured, not only safety: for each fault, the seconds from the signal to
the first commit any processor completes after it. A fault after which no commit comes
within ``--recover-limit`` seconds (issue 27: zookeeper.session.timeout.ms + 5 s) is an
error, reported with the brokers' logs' tails. When the processors are
done, the output topic is read to its end read_committed and read_uncommitted and the
checker reports lost and duplicated inputs, G1a (aborted reads), reads of uncommitted
data and phantom reads. Exit status 0 only when it finds nothing and every kill was made.
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.fault.cluster_faults import FaultCluster, wait_for, zookeeper  # noqa: E402
from tests.fault.txn_checker import TxnHistory, TxnReport, check  # noqa: E402
from tests.fault.txn_workload import (Observer, Processor, input_values, prefill,  # noqa: E402
                                      read_log, stable_ends, txn_coordinator)

SOURCE, SINK, GROUP = "txn-in", "txn-out", "txn-campaign"
KINDS = ("coordinator", "leader", "controller")
SESSION_S = 6.0     # the harness's zookeeper.session.timeout.ms
OVERRIDES = {"transaction.state.log.replication.factor": "3",
             "transaction.state.log.min.isr": "2",
             "transaction.state.log.num.partitions": "3",
             "offsets.topic.num.partitions": "3",
             "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
             "log.segment.bytes": str(1024 * 1024)}


@dataclass
class Outcome:
    report: TxnReport
    kills: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    commits: int = 0
    aborts: int = 0
    restarts: int = 0
    consumer_restarts: int = 0      # input consumers rebuilt after stalling below the LSO
    hangs: int = 0                  # librdkafka calls abandoned (txn_workload._bounded)
    errors: list[str] = field(default_factory=list)
    # per fault: (kind, signal, seconds from it to the next commit; None: none came)
    recoveries: list[tuple[str, str, float | None]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.report.ok and not self.errors

    def summary(self) -> str:
        return (f"{self.seconds:.0f} s; kills {self.kills}; transactions committed "
                f"{self.commits}, aborted {self.aborts}, producers recreated "
                f"{self.restarts}, consumers recreated {self.consumer_restarts}, "
                f"librdkafka calls abandoned as hung {self.hangs}\n"
                + (f"seconds from a fault to the next commit: {self.recovery_text()}\n"
                   if self.recoveries else "")
                + f"{self.report.summary()}"
                + "".join(f"\nerror: {e}" for e in self.errors))

    def recovery_text(self) -> str:
        return ", ".join(f"{k}/{sig} {'none' if s is None else f'{s:.1f}'}"
                         for k, sig, s in self.recoveries)


def run(work: Path, *, records: int, kills: int, seed: int = 1, processors: int = 2,
        input_partitions: int = 4, output_partitions: int = 3, batch: int = 200,
        timeout: float = 1800.0, log: bool = True,
        kinds: tuple[str, ...] = ("coordinator", "leader"), stop: bool = False,
        recover_limit: float | None = None, restart_at_once: bool = False) -> Outcome:
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    log_path = work / "campaign.log"

    def say(s: str) -> None:
        """A campaign line: printed when ``log``, and always kept in <work>/campaign.log,
        so a run that passed slowly (a client hang waited out) can be read afterwards."""
        line = f"[{time.strftime('%H:%M:%S')}] {s}"
        if log:
            print(line, flush=True)
        with open(log_path, "a", encoding="utf-8") as out:
            out.write(line + "\n")
    t0 = time.monotonic()
    with zookeeper(work) as zk:
        fc = FaultCluster(zk, work, size=3, overrides=OVERRIDES).start()
        try:
            return _campaign(fc, rng, say, t0, records=records, kills=kills,
                             processors=processors, input_partitions=input_partitions,
                             output_partitions=output_partitions, batch=batch,
                             timeout=timeout, kinds=kinds, stop=stop,
                             recover_limit=recover_limit, restart_at_once=restart_at_once)
        finally:
            fc.stop()


def _campaign(fc: FaultCluster, rng: random.Random, say: Any, t0: float, *, records: int,
              kills: int, processors: int, input_partitions: int, output_partitions: int,
              batch: int, timeout: float, kinds: tuple[str, ...], stop: bool,
              recover_limit: float | None, restart_at_once: bool = False,
              stall_s: float = 120.0) -> Outcome:
    fc.create_topic(SOURCE, input_partitions, 3, {"min.insync.replicas": "2"})
    fc.create_topic(SINK, output_partitions, 3, {"min.insync.replicas": "2"})
    # The input arrives in stages, each one reaching half-way past the next kill's goal:
    # the processors cannot finish before every kill is made, however slow the restarts
    # (a loaded CI machine), and each kill still lands in the middle of the work.
    schedule = [kinds[i % len(kinds)] for i in range(len(kinds) * kills)]
    stages = [records * (2 * n + 1) // (2 * (len(schedule) + 1))
              for n in range(1, len(schedule) + 1)] + [records]
    inputs = input_values(records)
    prefill(fc.bootstrap, SOURCE, input_partitions, stages[0])
    produced = stages[0]
    ends = {p: len(range(p, records, input_partitions)) for p in range(input_partitions)}
    say(f"{records} input records in {input_partitions} partitions, in {len(stages)} stages")
    history, lock = TxnHistory(inputs), threading.Lock()
    deadline = time.monotonic() + timeout
    procs = [Processor(str(i), fc.bootstrap, SOURCE,
                       list(range(i, input_partitions, processors)), SINK, output_partitions,
                       GROUP, ends, history, lock, deadline, batch) for i in range(processors)]
    for p in procs:
        p.log = say
    observer = Observer(fc.bootstrap, SINK, output_partitions, history, lock)
    observer.start()
    for p in procs:
        p.start()
    outcome = Outcome(TxnReport(), {k: 0 for k in kinds})
    faults: list[tuple[str, str, float]] = []
    watchdog = _Watchdog(fc, stall_s)
    for n, kind in enumerate(schedule, 1):
        goal = records * n // (len(schedule) + 1)
        if produced < stages[n - 1]:
            prefill(fc.bootstrap, SOURCE, input_partitions, stages[n - 1], start=produced)
            produced = stages[n - 1]
        wait_for(f"{goal} inputs committed", lambda: watchdog.poll() >= goal
                 or any(p.error is not None for p in procs) or watchdog.stalled()
                 or all(p.done for p in procs) or None, timeout=timeout, interval=0.25)
        if any(p.error is not None for p in procs) or watchdog.stalled():
            break
        if all(p.done for p in procs):
            outcome.errors.append(f"the processors finished before kill {n} ({kind})")
            break
        victim = _victim(fc, kind, procs, rng, input_partitions, output_partitions)
        if victim is None:
            outcome.errors.append(f"no {kind} to kill at kill {n}")
            continue
        b = fc.broker(victim)
        if stop and n % 2 == 0:
            say(f"fault {n}: SIGSTOP broker {victim} ({kind}) for {SESSION_S + 4:g} s at "
                f"{_progress(fc)} inputs committed")
            faults.append((kind, "SIGSTOP", time.monotonic()))
            fc.sigstop(b)
            time.sleep(SESSION_S + 4)
            fc.sigcont(b)
        else:
            say(f"fault {n}: SIGKILL broker {victim} ({kind}) at {_progress(fc)} inputs "
                f"committed")
            faults.append((kind, "SIGKILL", time.monotonic()))
            fc.sigkill(b)
            time.sleep(rng.uniform(0.5, 2.0))
            if restart_at_once:
                fc.restart_at_once(b)
            else:
                fc.restart(b)
        for topic, parts in ((SOURCE, input_partitions), (SINK, output_partitions),
                             ("__transaction_state", 3), ("__consumer_offsets", 3)):
            fc.wait_isr_full(topic, parts, timeout=120)
        outcome.kills[kind] += 1
    if produced < records:
        prefill(fc.bootstrap, SOURCE, input_partitions, records, start=produced)
    while not all(p.done or p.error is not None for p in procs) and not watchdog.stalled():
        watchdog.poll()
        time.sleep(0.5)
    if watchdog.stalled():
        outcome.errors.append(f"no input committed for {stall_s:g} s: processors "
                              f"{[p.name for p in procs if not p.done]} stuck (at "
                              f"{_progress(fc)} of {records}; the input's last stable "
                              f"offsets {stable_ends(fc.bootstrap, SOURCE, range(input_partitions))}"
                              f", ends {ends})" + _stacks([p for p in procs if not p.done]))
    for p in procs:
        outcome.commits += p.commits
        outcome.aborts += p.aborts
        outcome.restarts += p.restarts
        outcome.consumer_restarts += p.consumer_restarts
        outcome.hangs += p.hangs
        if p.error is not None:
            outcome.errors.append(f"{p.name}: {p.error!r}")
    commit_times = sorted(t for p in procs for t in p.commit_times)
    for kind, sig, at in faults:
        after = next((t - at for t in commit_times if t > at), None)
        outcome.recoveries.append((kind, sig, after))
        if recover_limit is not None and (after is None or after > recover_limit):
            outcome.errors.append(
                f"no commit within {recover_limit:g} s of the {sig} of the {kind} "
                f"(next commit: {'none' if after is None else f'{after:.1f} s'})\n"
                + "\n".join(b.tail(25) for b in fc.brokers))
    out_ends = _settled_ends(fc, output_partitions)
    observer.stop()
    if observer.error is not None:
        outcome.errors.append(f"observer: {observer.error!r}")
    committed = read_log(fc.bootstrap, SINK, output_partitions, "read_committed", out_ends)
    everything = read_log(fc.bootstrap, SINK, output_partitions, "read_uncommitted", out_ends)
    outcome.report = check(history, committed, everything)
    outcome.seconds = time.monotonic() - t0
    return outcome


def _stacks(threads: list[threading.Thread]) -> str:
    """Where each stuck processor thread is blocked (its innermost Python frames): a
    stall inside a client call (librdkafka) shows here, an idle poll loop does not."""
    import traceback
    frames = sys._current_frames()
    out = []
    for t in threads:
        frame = frames.get(t.ident) if t.ident is not None else None
        if frame is not None:
            where = "".join(traceback.format_stack(frame, limit=5)).rstrip()
            out.append(f"\n{t.name} is at:\n{where}")
    return "".join(out)


class _Watchdog:
    """Stalled when the group's committed inputs did not move for ``stall_s``."""

    def __init__(self, fc: FaultCluster, stall_s: float) -> None:
        self.fc, self.stall_s = fc, stall_s
        self.last, self.since = -1, time.monotonic()

    def poll(self) -> int:
        """The inputs committed now (and the time they last moved)."""
        now = _progress(self.fc)
        if now != self.last:
            self.last, self.since = now, time.monotonic()
        return now

    def stalled(self) -> bool:
        return time.monotonic() - self.since > self.stall_s


def _progress(fc: FaultCluster) -> int:
    """Inputs whose offsets the group committed (read from a broker)."""
    import asyncio

    from client.admin import KafkaAdmin
    from client.groups import GROUP_KEY, find_coordinator, offset_fetch

    async def ask() -> int:
        admin = KafkaAdmin(fc.bootstrap, timeout=5)
        try:
            found = await find_coordinator(await admin.any_connection(), GROUP, key_type=GROUP_KEY)
            if found.error:
                return 0
            got = await offset_fetch(await admin.pool.get(found.host, found.port), GROUP)
            return sum(max(c.offset, 0) for (t, _), c in got.partitions.items() if t == SOURCE)
        finally:
            await admin.close()

    try:
        return asyncio.run(ask())
    except Exception:  # noqa: BLE001 - a broker down right now: no progress known
        return 0


def _victim(fc: FaultCluster, kind: str, procs: list[Processor], rng: random.Random,
            input_partitions: int, output_partitions: int) -> int | None:
    if kind == "coordinator":
        return txn_coordinator(fc, rng.choice(procs).transactional_id)
    if kind == "controller":
        return fc.zk_controller()
    topic, parts = rng.choice([(SOURCE, input_partitions), (SINK, output_partitions)])
    try:
        return fc.leader(topic, rng.randrange(parts))
    except Exception:  # noqa: BLE001
        return None


def _settled_ends(fc: FaultCluster, partitions: int, timeout: float = 60.0) -> dict[int, int]:
    """The output's high watermarks once no transaction is open on it (LSO == HW)."""
    import asyncio

    from client.admin import KafkaAdmin

    async def ask() -> dict[int, int] | None:
        admin = KafkaAdmin(fc.bootstrap)
        try:
            tps = {(SINK, p): -1 for p in range(partitions)}
            hw = await admin.list_offsets(tps, isolation_level=0)
            lso = await admin.list_offsets(tps, isolation_level=1)
            if any(hw[tp].error or lso[tp].offset != hw[tp].offset for tp in tps):
                return None
            return {p: hw[(SINK, p)].offset for _, p in tps}
        finally:
            await admin.close()

    return wait_for("the output's transactions settled", lambda: asyncio.run(ask()),
                    timeout=timeout, interval=0.5)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--kills", type=int, default=10, help="faults of each kind")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help="victims in turn: coordinator, leader, controller")
    ap.add_argument("--stop", action="store_true",
                    help="every other fault a SIGSTOP past the session instead of a kill")
    ap.add_argument("--recover-limit", type=float, default=SESSION_S + 5,
                    help="seconds from a fault to the next commit, at most (0: unchecked)")
    ap.add_argument("--restart-after-expiry", action="store_true",
                    help="start a killed broker again only once ZooKeeper expired its session "
                         "(it is out of the cluster metadata meanwhile), not 0.5-2 s after the "
                         "kill as a process supervisor would")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--processors", type=int, default=2)
    ap.add_argument("--input-partitions", type=int, default=4)
    ap.add_argument("--output-partitions", type=int, default=3)
    ap.add_argument("--batch", type=int, default=200, help="input records per transaction")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--keep", action="store_true", help="keep the work dir (broker logs)")
    args = ap.parse_args()
    # SIGTERM (a CI job stopped, a run's supervisor giving up) ends the run as Ctrl-C
    # would: the cluster's with-blocks stop every broker and ZooKeeper by pid. By
    # default the signal ended this process alone and left them running.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    work = Path(tempfile.mkdtemp(prefix="pybroker-txn-campaign-"))
    try:
        outcome = run(work, records=args.records, kills=args.kills, seed=args.seed,
                      processors=args.processors, input_partitions=args.input_partitions,
                      output_partitions=args.output_partitions, batch=args.batch,
                      timeout=args.timeout, kinds=tuple(args.kinds.split(",")),
                      stop=args.stop, recover_limit=args.recover_limit or None,
                      restart_at_once=not args.restart_after_expiry)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work dir kept: {work}")
    print(outcome.summary())
    made = all(n >= args.kills for n in outcome.kills.values())
    if not made:
        print(f"not every kill was made: {outcome.kills}")
    return 0 if outcome.ok and made else 1


def _exit_on_signal(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
