"""Replication benchmarks: three brokers on this machine, RF 3, acks=all,
min.insync.replicas=2, 1 KiB records (issue 4's targets in brackets).

1. produce throughput, idempotent confluent-kafka producer            [>= 60 MB/s]
2. end-to-end latency produce -> consumer receipt at 5 MB/s, p99      [<= 10 ms]
   with a producer that keeps one request in flight per broker (acks=all, ordered,
   linger.ms=0); then, without a target, the idempotent producer at linger.ms=0,
   which busy-polls (see bench_latency) and takes one of the two cores
3. failover: 1,000 partitions led by the broker that is SIGKILLed; time from its
   ZooKeeper session expiry until every partition has a new leader that took an
   acks=all write (Produce straight to the leaders; also through 4
   confluent-kafka producers, client back-off included)               [<= 2 s]
4. controlled shutdown (SIGTERM) of a broker leading 1,000 partitions: time until
   none is led by it (and until the process exited)                   [<= 3 s]
5. controller failover with 10,000 partitions: the controller is SIGKILLed; time from
   its session expiry until a new controller is in /controller and until every
   partition the old one led has a live leader                        [<= 10 s]

    .venv/bin/python bench/replication.py [--only produce,latency,failover,shutdown,controller]
        [--produce-mb 200] [--latency-s 15] [--partitions 1000] [--failover-writers 4]
        [--controller-partitions 10000]

Everything runs under a temp dir (ZooKeeper + brokers started with
tests/fault/cluster_faults.py) and is stopped by pid at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._env import Figures  # noqa: E402
from tests.fault.cluster_faults import FaultCluster, FaultError, wait_for, zookeeper  # noqa: E402

RECORD = 1024
SESSION_MS = 6000
OVERRIDES = {
    "log.level": "WARN", "zookeeper.session.timeout.ms": str(SESSION_MS),
    "replica.lag.time.max.ms": "10000", "min.insync.replicas": "2",
    "log.segment.bytes": str(1 << 30), "num.partitions": "1",
}
TARGETS = {"produce_mb_s": (">=", 60.0), "e2e_p99_ms": ("<=", 10.0),
           "failover_s": ("<=", 2.0), "controlled_shutdown_s": ("<=", 3.0),
           "controller_failover_s": ("<=", 10.0)}
FIGURES = Figures(TARGETS, width=24)
report = FIGURES.report


def producer(bootstrap: str, **conf: Any) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                     "log_level": 3, **conf})


# -- 1. throughput ---------------------------------------------------------------------


def bench_produce(fc: FaultCluster, mb: int, rf: int = 3, max_s: float = 90.0) -> None:
    fc.create_topic("tput", 6, rf, {"min.insync.replicas": str(min(2, rf))})
    p = producer(fc.bootstrap, **{"linger.ms": 5, "batch.size": 1_000_000,
                                  "queue.buffering.max.kbytes": 512 * 1024})
    value = b"x" * RECORD
    n = mb * 1024
    acked = [0]

    def cb(err: Any, _msg: Any) -> None:
        if err is None:
            acked[0] += 1
    for _ in range(200):   # warm-up: connections, producer id, metadata
        p.produce("tput", value, on_delivery=cb)
    p.flush(30)
    acked[0] = 0
    t0 = time.monotonic()
    sent = 0
    while sent < n and time.monotonic() - t0 < max_s:
        try:
            p.produce("tput", value, partition=sent % 6, on_delivery=cb)
            sent += 1
        except BufferError:
            p.poll(0.005)
    p.flush(max(1.0, max_s - (time.monotonic() - t0)) + 30)
    dt = time.monotonic() - t0
    report("produce_mb_s", acked[0] * RECORD / dt / 1e6, "MB/s",
           f"({acked[0]} of {sent} records acked in {dt:.1f}s)")


# -- 2. end-to-end latency ---------------------------------------------------------------


def bench_latency(fc: FaultCluster, seconds: float, rf: int = 3, mb_s: float = 5.0) -> None:
    """Two producers, one after the other, each on a topic of its own.

    The target figure uses acks=all with max.in.flight=1 (records stay in order
    without idempotence). The idempotent producer at linger.ms=0 is reported too,
    without a target: librdkafka caps an idempotent partition at 5 *messages* in
    flight, and when it is at the cap with records waiting it still sets its
    wake-up to "now" before finding it may not send (rd_kafka_toppar_producer_serve
    in rdkafka_broker.c), so its broker thread spins until the response comes and
    takes one of this machine's two cores away from the three brokers."""
    e2e_latency(fc, "lat", seconds, rf, mb_s, "",
                {"enable.idempotence": False, "max.in.flight": 1})
    e2e_latency(fc, "lat_idem", seconds, rf, mb_s, "_idempotent", {})   # no target


def e2e_latency(fc: FaultCluster, topic: str, seconds: float, rf: int, mb_s: float,
                suffix: str, conf: dict[str, Any]) -> None:
    from confluent_kafka import Consumer, TopicPartition

    fc.create_topic(topic, 3, rf, {"min.insync.replicas": str(min(2, rf))})
    lat_ms: list[float] = []
    stop = threading.Event()
    c = Consumer({"bootstrap.servers": fc.bootstrap, "group.id": topic, "log_level": 3,
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                  "fetch.min.bytes": 1})
    c.assign([TopicPartition(topic, i, 0) for i in range(3)])

    def consume() -> None:
        while not stop.is_set():     # poll: consume(n, t) would wait for n records
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                lat_ms.append((time.time_ns() - int(m.value()[:19])) / 1e6)
    t = threading.Thread(target=consume, daemon=True)
    t.start()
    p = producer(fc.bootstrap, **{"linger.ms": 0, **conf})
    rate = mb_s * 1e6 / RECORD
    pad = b"x" * (RECORD - 19)
    t0 = time.monotonic()
    cpu0 = time.process_time()
    sent = 0
    while time.monotonic() - t0 < seconds:
        due = int((time.monotonic() - t0) * rate)
        while sent < due:
            p.produce(topic, b"%019d" % time.time_ns() + pad, partition=sent % 3)
            sent += 1
        p.poll(0)
        time.sleep(0.0005)
    p.flush(30)
    cpu = (time.process_time() - cpu0) / (time.monotonic() - t0) * 100
    wait_for("the consumer to catch up", lambda: len(lat_ms) >= sent, 20, 0.1)
    stop.set()
    t.join(5)
    c.close()
    warm = lat_ms[int(len(lat_ms) * 0.1):]          # skip the first 10 % (warm-up)
    q = statistics.quantiles(warm, n=1000)
    settings = ", ".join(f"{k}={v}" for k, v in {"linger.ms": 0, **conf}.items())
    report(f"e2e{suffix}_p50_ms", q[499], "ms")
    report(f"e2e{suffix}_p99_ms", q[989], "ms",
           f"({len(warm)} records at {mb_s:g} MB/s, p99.9 {q[998]:.2f} ms, "
           f"max {max(warm):.2f} ms; producer {settings}; client process CPU {cpu:.0f} %)")


# -- 3. failover -------------------------------------------------------------------------


def led_by(victim: int, ids: list[int], n: int) -> list[list[int]]:
    """n partitions whose preferred (and so initial) leader is ``victim``."""
    rest = [i for i in ids if i != victim]
    return [[victim] + (rest if k % 2 == 0 else rest[::-1]) for k in range(n)]


def one_write_each(p: Any, topic: str, n: int, what: str = "",
                   only: range | None = None) -> list[float]:
    """Produce one record to each of n partitions (or those in ``only``) now;
    -> monotonic ack times."""
    done: list[float] = []
    errors: list[str] = []

    def cb(err: Any, _m: Any) -> None:
        if err is None:
            done.append(time.monotonic())
        else:
            errors.append(str(err))
    parts = range(n) if only is None else only
    for i in parts:
        p.produce(topic, b"y" * RECORD, partition=i, on_delivery=cb)
    p.flush(60)
    if errors or len(done) != len(parts):
        raise FaultError(f"{topic} {what}: {len(done)} of {len(parts)} acked within 60 s, "
                         f"errors {errors[:3]}")
    return done


def wire_ack_all_every(fc: FaultCluster, topic: str, n: int, avoid: int,
                       timeout: float = 30.0) -> tuple[float, float]:
    """Until every partition took a one-record acks=all write: read Metadata, send
    each live leader ONE Produce (acks=all, client.verbs.produce) holding every
    partition still pending there, drop the ones that succeeded, repeat every 10 ms.
    -> (monotonic time all partitions had a live leader in Metadata, time the last
    partition accepted its write). No producer library in between: this is when the
    brokers accept writes, not when a producer's retry and back-off get there."""
    return asyncio.run(_wire_ack_all_every(fc, topic, n, avoid, timeout))


async def _wire_ack_all_every(fc: FaultCluster, topic: str, n: int, avoid: int,
                              timeout: float) -> tuple[float, float]:
    from client import BrokerPool
    from client.verbs import produce
    from protocol import records

    pending = set(range(n))
    t_md: float | None = None
    deadline = time.monotonic() + timeout
    pool = BrokerPool(timeout=15)
    try:
        while pending:
            if time.monotonic() > deadline:
                raise FaultError(f"{len(pending)} partitions still refuse acks=all writes")
            try:
                md = fc.metadata(topic)   # from a live broker (the harness knows which)
            except Exception:  # noqa: BLE001 - a broker in transition: ask again
                await asyncio.sleep(0.01)
                continue
            by_leader: dict[int, list[int]] = {}
            for i in pending:
                pi = md.get(i)
                if pi is not None and pi.leader not in (-1, avoid):
                    by_leader.setdefault(pi.leader, []).append(i)
            if t_md is None and all(md.get(i) is not None and md[i].leader not in (-1, avoid)
                                    for i in range(n)):
                t_md = time.monotonic()
            for leader, parts in by_leader.items():
                batch = bytes(records.build_batch([(None, b"w" * RECORD, int(time.time() * 1000))]))
                try:
                    conn = await pool.get("127.0.0.1", fc.broker(leader).port)
                    answers = await produce(conn, {(topic, i): batch for i in parts}, acks=-1,
                                            timeout_ms=10000)
                except Exception:  # noqa: BLE001 - the pool reconnects next round
                    continue
                assert answers is not None
                pending -= {i for (_, i), r in answers.items() if r.error == 0}
            if pending:
                await asyncio.sleep(0.01)
    finally:
        await pool.close()
    return (t_md if t_md is not None else time.monotonic()), time.monotonic()


def bench_failover(fc: FaultCluster, n: int, writers: int = 4) -> None:
    ids = [b.broker_id for b in fc.brokers]
    victim = fc.controller_id()
    victim = next(i for i in ids if i != victim)   # not the controller: measure failover alone
    fc.create_topic("fo", assignment=led_by(victim, ids, n), timeout=180,
                    configs={"min.insync.replicas": "2"})
    p = producer(fc.bootstrap, **{"linger.ms": 5, "retry.backoff.ms": 20,
                                  "retry.backoff.max.ms": 100,
                                  "topic.metadata.refresh.fast.interval.ms": 20})
    one_write_each(p, "fo", n, "(before the kill)")
    # One producer per writer thread, each owning a slice of the partitions: a broker
    # answers one request per connection at a time (as Kafka) and librdkafka puts one
    # partition in each ProduceRequest, so a single producer measures 1,000 acks=all
    # round trips in a row rather than when the partitions became writable.
    extra = [producer(fc.bootstrap, **{"linger.ms": 5, "retry.backoff.ms": 20,
                                       "retry.backoff.max.ms": 100,
                                       "topic.metadata.refresh.fast.interval.ms": 20})
             for _ in range(writers - 1)]
    producers = [p, *extra]
    for k, q in enumerate(extra, 1):        # warm up: metadata and connections
        one_write_each(q, "fo", n, "(before the kill)", only=range(k, n, writers))
    t_kill = time.monotonic()
    fc.sigkill(fc.broker(victim))
    wait_for("session expiry", lambda: victim not in fc.zk_registered(), 30, 0.005)
    t_exp = time.monotonic()
    got: dict[int, list[float]] = {}

    def write(k: int) -> None:
        got[k] = one_write_each(producers[k], "fo", n, "(after the session expired)",
                                only=range(k, n, writers))
    threads = [threading.Thread(target=write, args=(k,), daemon=True) for k in range(writers)]
    for t in threads:
        t.start()
    t_md, t_wire = wire_ack_all_every(fc, "fo", n, victim)
    for t in threads:
        t.join(90)
    if len(got) != writers:
        raise FaultError("a confluent-kafka writer did not finish")
    acks = [a for k in range(writers) for a in got[k]]
    report("failover_s", t_wire - t_exp, "s",
           f"({n} partitions: each accepted an acks=all Produce sent straight to its new "
           f"leader, retried every 10 ms; session expired {t_exp - t_kill:.2f}s after SIGKILL)")
    report("failover_metadata_s", t_md - t_exp, "s", "(every partition led by a live broker "
           "in Metadata)")
    report("failover_clients_s", max(acks) - t_exp, "s",
           f"(the same through {writers} confluent-kafka producers, their metadata refresh and "
           f"retry back-off included; median partition {statistics.median(acks) - t_exp:.3f}s)")
    fc.restart(fc.broker(victim), timeout=120)


def bench_controlled_shutdown(fc: FaultCluster, n: int) -> None:
    ids = [b.broker_id for b in fc.brokers]
    ctl = fc.controller_id()
    victim = next(i for i in ids if i != ctl)
    fc.create_topic("cs", assignment=led_by(victim, ids, n), timeout=180,
                    configs={"min.insync.replicas": "2"})
    other = next(i for i in ids if i != victim)
    b = fc.broker(victim)
    assert b.proc is not None
    t0 = time.monotonic()
    b.proc.send_signal(15)

    def moved() -> bool:
        md = fc.metadata("cs", other)
        return len(md) == n and all(pi.leader not in (victim, -1) for pi in md.values())
    wait_for("leaders moved off the stopping broker", moved, 60, 0.01)
    t_moved = time.monotonic() - t0
    b.proc.wait(60)
    t_exit = time.monotonic() - t0
    b.kill9()    # reap, close its log
    report("controlled_shutdown_s", t_moved, "s",
           f"({n} partitions moved; process exited after {t_exit:.2f}s, code {b.proc.returncode})")
    fc.restart(b, timeout=120)


FDS_PER_REPLICA = 1          # the .log (index maps keep no fd: storage/fdless_mmap.py)


def bench_controller_failover(fc: FaultCluster, n: int) -> None:
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    fit = (soft - 4000) // FDS_PER_REPLICA     # every broker holds every partition (RF 3 of 3)
    if n > fit:
        print(f"  NOTE: {n} partitions need ~{n * FDS_PER_REPLICA} descriptors per broker; "
              f"the limit here is {soft} and cannot be raised: measuring {fit} instead",
              flush=True)
        n = fit
    t0 = time.monotonic()
    fc.create_topic("big", n, 3, {"min.insync.replicas": "2"}, timeout=900)
    fds = {b.broker_id: len(os.listdir(f"/proc/{b.pid}/fd")) for b in fc.brokers if b.pid}
    print(f"  (created {n} partitions x RF 3 in {time.monotonic() - t0:.1f}s; open file "
          f"descriptors per broker {fds})", flush=True)
    old = fc.controller_id()
    md = fc.metadata("big")
    led = [p for p, pi in md.items() if pi.leader == old]
    t_kill = time.monotonic()
    fc.sigkill(fc.broker(old))
    wait_for("session expiry", lambda: old not in fc.zk_registered(), 60, 0.005)
    t_exp = time.monotonic()
    new = wait_for("a new controller", lambda: (c := fc.zk_controller()) is not None and c != old
                   and c, 120, 0.01)
    t_new = time.monotonic()
    fc.wait_leaders("big", led, avoid={old}, timeout=300, interval=0.2)
    t_led = time.monotonic()
    report("controller_elected_s", t_new - t_exp, "s", f"(broker {new})")
    report("controller_failover_s", t_led - t_exp, "s",
           f"({n} partitions, {len(led)} led by the old controller; session expired "
           f"{t_exp - t_kill:.2f}s after SIGKILL)")


def raise_fd_limit(want: int = 262_144) -> tuple[int, int]:
    """Brokers inherit our RLIMIT_NOFILE: a broker keeps a few descriptors per
    partition replica, so 10,000 partitions need more than the usual 1,024-20,000
    (Kafka's docs ask for 100,000+ too). Raises soft (and, as root, hard) limits."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for new in ((max(soft, want), max(hard, want)), (max(soft, min(want, hard)), hard)):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, new)
            break
        except (ValueError, OSError):
            continue
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="produce,latency,failover,shutdown,controller")
    ap.add_argument("--produce-mb", type=int, default=200)
    ap.add_argument("--latency-s", type=float, default=15.0)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--failover-writers", type=int, default=4,
                    help="producers writing the partitions after the failover (1 = one "
                         "producer: 1,000 acks=all round trips in a row)")
    ap.add_argument("--controller-partitions", type=int, default=10_000)
    ap.add_argument("--rf", type=int, default=3,
                    help="replication factor for produce/latency (1 = a baseline without replication)")
    ap.add_argument("--log-level", default="WARN", help="the brokers' log.level")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (broker logs)")
    args = ap.parse_args()
    only = set(args.only.split(","))
    print("# " + " ".join([".venv/bin/python", os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]))
    print(f"# RLIMIT_NOFILE (soft, hard) for the brokers: {raise_fd_limit()}; "
          f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    work = Path(tempfile.mkdtemp(prefix="pybroker-bench-repl-"))
    failed: list[str] = []
    steps = [("produce", lambda fc: bench_produce(fc, args.produce_mb, args.rf)),
             ("latency", lambda fc: bench_latency(fc, args.latency_s, args.rf)),
             ("failover", lambda fc: bench_failover(fc, args.partitions, args.failover_writers)),
             ("shutdown", lambda fc: bench_controlled_shutdown(fc, args.partitions)),
             ("controller", lambda fc: bench_controller_failover(fc, args.controller_partitions))]
    try:
        with zookeeper(work) as zk:
            for name, step in steps:
                if name not in only:
                    continue
                fc = FaultCluster(zk, work / name, 3,
                                  {**OVERRIDES, "log.level": args.log_level}).start()
                try:
                    step(fc)
                except Exception as e:  # noqa: BLE001 - report and go on to the next figure
                    failed.append(f"{name}: {type(e).__name__}: {e}")
                    print(f"{name}: FAILED {type(e).__name__}: {e}", flush=True)
                finally:
                    fc.stop()
    finally:
        if not args.keep:
            import shutil
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"# logs kept under {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
