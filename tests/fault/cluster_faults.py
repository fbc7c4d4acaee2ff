"""Multi-broker fault harness on top of tests/integration/cluster.py.

    with zookeeper(work) as zk:
        fc = FaultCluster(zk, work, size=3, overrides={...}).start()
        fc.create_topic("t", partitions=3, rf=3, configs={"min.insync.replicas": "2"})
        load = LoadProducer(fc.bootstrap, "t", [0, 1, 2], history).start()
        fc.sigkill(fc.broker(fc.leader("t", 0)))
        ...
        fc.stop()

Faults are signals sent by pid: SIGKILL, SIGSTOP/SIGCONT (a paused broker keeps its
sockets but answers nothing, so its ZooKeeper session expires), SIGTERM (controlled
shutdown). Cluster state is read the way a client would (Metadata, ListOffsets), or
from ZooKeeper with kazoo (test side only). Every wait is bounded; every process is
stopped by pid (paused ones are continued first so SIGTERM can land).

The load: ``LoadProducer`` (confluent-kafka, enable.idempotence, acks=all) records every
delivery callback in a ``checker.History``; ``LiveConsumer`` reads along and records
what it saw; ``Monitor`` samples HW / ISR / replica LEOs into a
``checker.InvariantMonitor``. ``final_check`` reads every partition back and runs
the checker, the invariant monitor and the byte comparison of the replicas' logs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from protocol import records
from protocol.api_keys import ApiKey
from protocol.spec import api
from storage import filenames
from tests.fault import checker
from tests.integration.cluster import BrokerProcess, Cluster, WireClient
from tests.integration.zookeeper import zookeeper_server

T = TypeVar("T")

# On top of tests/integration/cluster.DEFAULT_OVERRIDES: a short ZooKeeper session so a
# dead or paused broker is noticed in a few seconds, a short replica lag time so a
# stuck follower leaves the ISR quickly.
FAULT_OVERRIDES: dict[str, str] = {
    "zookeeper.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "3000",
    "auto.create.topics.enable": "false",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "log.segment.bytes": str(256 * 1024),     # several segments per run
    "log.level": "INFO",
}


class FaultError(AssertionError):
    pass


# --------------------------------------------------------------------------------------
# ZooKeeper


@contextlib.contextmanager
def zookeeper(work: Path) -> Iterator[str]:
    """The shared test ZooKeeper (tests/integration/zookeeper.py) under ``work/zk``."""
    with zookeeper_server(work / "zk") as connect:
        yield connect


def wait_for(what: str, fn: Callable[[], T | None], timeout: float, interval: float = 0.1) -> T:
    """Call ``fn`` until it returns something other than None/False; FaultError after
    ``timeout`` seconds, naming ``what`` and the last exception."""
    deadline = time.monotonic() + timeout
    last: str = ""
    while True:
        try:
            got = fn()
            if got is not None and got is not False:
                return got
        except Exception as e:  # noqa: BLE001 - reported in the timeout message
            last = f" (last error: {type(e).__name__}: {e})"
        if time.monotonic() > deadline:
            raise FaultError(f"timed out after {timeout:g}s waiting for {what}{last}")
        time.sleep(interval)


# --------------------------------------------------------------------------------------
# the cluster


class LeoReader:
    """A replica's log end offset read from its files while the broker writes them:
    the last complete batch of the newest segment. Incremental: it remembers where the
    last batch it saw starts and its 61 header bytes, and rescans the segment from 0
    when those bytes changed (truncation) or the newest segment is another one."""

    def __init__(self) -> None:
        self._at: dict[str, tuple[int, int, bytes, int]] = {}   # dir -> (segment, pos, header, leo)
        self._lock = threading.Lock()

    def leo(self, part_dir: str) -> int:
        try:
            names = os.listdir(part_dir)
        except FileNotFoundError:
            return 0
        bases = [filenames.parse_base_offset(n) for n in names
                 if n.endswith(filenames.LOG) and n[:-len(filenames.LOG)].isdigit()]
        if not bases:
            return 0
        base = max(bases)
        with self._lock, open(filenames.log_file(part_dir, base), "rb") as f:
            seg, pos, head, leo = self._at.get(part_dir, (base, 0, b"", base))
            if seg != base or os.pread(f.fileno(), len(head), pos) != head:
                pos, head, leo = 0, b"", base
            f.seek(pos)
            buf = f.read()
            found: tuple[int, bytes, int] | None = None
            for at, h in records.iter_batches(buf):
                found = (at, bytes(buf[at:at + records.HEADER_SIZE]), h.next_offset)
            if found is None:            # nothing complete from pos: rescan next time
                pos, head, leo = 0, b"", base if pos == 0 else leo
            else:
                pos, head, leo = pos + found[0], found[1], found[2]
            self._at[part_dir] = (base, pos, head, leo)
            return leo


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    error: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class FaultCluster:
    def __init__(self, zk_connect: str, base_dir: Path, size: int = 3,
                 overrides: dict[str, str] | None = None) -> None:
        self.cluster = Cluster(zk_connect, base_dir, size,
                               overrides={**FAULT_OVERRIDES, **(overrides or {})})
        self.paused: set[int] = set()
        self._zk: Any = None
        self.cleanups: list[Callable[[], Any]] = []   # run first by stop(): load threads
        self.leos = LeoReader()

    # -- processes ---------------------------------------------------------------------

    @property
    def brokers(self) -> list[BrokerProcess]:
        return self.cluster.brokers

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def broker(self, broker_id: int) -> BrokerProcess:
        return self.cluster.broker(broker_id)

    def start(self) -> FaultCluster:
        self.cluster.start()
        return self

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM every running broker once (paused ones continued first), wait up to
        ``timeout`` s for each, SIGKILL what is left. (One signal only: a second
        SIGTERM makes a broker exit without its clean shutdown.)"""
        while self.cleanups:
            with contextlib.suppress(Exception):
                self.cleanups.pop()()
        for b in self.brokers:
            self.sigcont(b)
            if b.running:
                b.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
        deadline = time.monotonic() + timeout
        for b in self.brokers:
            if b.proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    b.proc.wait(max(0.1, deadline - time.monotonic()))
                b.kill9()
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()
            self._zk = None

    def live(self) -> list[BrokerProcess]:
        """Running and not paused."""
        return [b for b in self.brokers if b.running and b.broker_id not in self.paused]

    def sigkill(self, b: BrokerProcess) -> None:
        self.sigcont(b)
        b.kill9()

    def sigstop(self, b: BrokerProcess) -> None:
        assert b.pid is not None and b.running
        os.kill(b.pid, signal.SIGSTOP)
        self.paused.add(b.broker_id)

    def sigcont(self, b: BrokerProcess) -> None:
        if b.broker_id in self.paused and b.running and b.pid is not None:
            os.kill(b.pid, signal.SIGCONT)
        self.paused.discard(b.broker_id)

    def sigterm(self, b: BrokerProcess, timeout: float = 30.0) -> tuple[int | None, float]:
        """Controlled shutdown: SIGTERM and wait for the exit. -> (exit code, seconds)."""
        self.sigcont(b)
        t0 = time.monotonic()
        code = b.stop(timeout)
        return code, time.monotonic() - t0

    def restart(self, b: BrokerProcess, timeout: float = 40.0) -> None:
        """Start a stopped/killed broker again once ZooKeeper dropped its old session."""
        self.sigcont(b)
        self.cluster.restart(b, timeout)

    # -- ZooKeeper (test side) ---------------------------------------------------------

    def zk(self) -> Any:
        if self._zk is None:
            from kazoo.client import KazooClient

            self._zk = KazooClient(hosts=self.cluster.zk_connect, timeout=10)
            self._zk.start(timeout=10)
        return self._zk

    def zk_controller(self) -> int | None:
        import json

        try:
            data, _ = self.zk().get("/controller")
        except Exception:  # noqa: BLE001 - NoNodeError: no controller right now
            return None
        return int(json.loads(data)["brokerid"])

    def zk_registered(self) -> set[int]:
        try:
            return {int(x) for x in self.zk().get_children("/brokers/ids")}
        except Exception:  # noqa: BLE001
            return set()

    def zk_partition_state(self, topic: str, p: int) -> dict[str, Any]:
        import json

        data, _ = self.zk().get(f"/brokers/topics/{topic}/partitions/{p}/state")
        return dict(json.loads(data))

    # -- requests ----------------------------------------------------------------------

    def client(self, broker_id: int | None = None, timeout: float = 3.0) -> WireClient:
        """A connection to ``broker_id``, or to the first live broker that answers."""
        cands = [self.broker(broker_id)] if broker_id is not None else self.live()
        last: Exception | None = None
        for b in cands:
            try:
                return WireClient(b.port, timeout=timeout)
            except OSError as e:
                last = e
        raise FaultError(f"no live broker answers ({last})")

    def metadata(self, topic: str, broker_id: int | None = None) -> dict[int, PartitionInfo]:
        """Partition -> leader/epoch/replicas/ISR from one broker's metadata cache."""
        with self.client(broker_id) as c:
            md = c.metadata([topic], version=7)
        out: dict[int, PartitionInfo] = {}
        for t in md.topics:
            for p in t.partitions:
                out[p.partition_index] = PartitionInfo(
                    p.partition_index, int(p.error_code), int(p.leader_id),
                    int(p.leader_epoch), tuple(p.replica_nodes), tuple(p.isr_nodes))
        return out

    def controller_id(self, broker_id: int | None = None) -> int:
        with self.client(broker_id) as c:
            return int(c.metadata([], version=7).controller_id)

    def leader(self, topic: str, p: int) -> int:
        return self.metadata(topic)[p].leader

    def create_topic(self, name: str, partitions: int = 1, rf: int = 3,
                     configs: dict[str, str] | None = None,
                     assignment: Sequence[Sequence[int]] | None = None,
                     timeout: float = 60.0) -> None:
        """CreateTopics v5 (explicit ``assignment[p] = [replicas]`` when given), then
        wait until every partition has a leader and a full ISR in Metadata."""
        req = api(ApiKey.CREATE_TOPICS).request
        cfg = [req.structs["CreatableTopicConfig"].new(name=k, value=v)
               for k, v in (configs or {}).items()]
        assigns = [req.structs["CreatableReplicaAssignment"].new(partition_index=i,
                                                                 broker_ids=list(r))
                   for i, r in enumerate(assignment or [])]
        topic = req.structs["CreatableTopic"].new(
            name=name, num_partitions=-1 if assignment else partitions,
            replication_factor=-1 if assignment else rf, assignments=assigns, configs=cfg)
        with self.client(timeout=timeout) as c:
            resp = c.request(ApiKey.CREATE_TOPICS, 5, req.new(topics=[topic],
                                                              timeout_ms=int(timeout * 1000)))
        err = int(resp.topics[0].error_code)
        if err != 0:
            raise FaultError(f"CreateTopics {name}: error {err} {resp.topics[0].error_message}")
        n = len(assignment) if assignment else partitions
        self.wait_isr_full(name, n, timeout)

    def wait_isr_full(self, topic: str, partitions: int, timeout: float = 60.0) -> dict[int, PartitionInfo]:
        """Until every partition has a live leader and ISR == replicas (as sets), seen
        consistently by every live broker's metadata."""
        def full() -> dict[int, PartitionInfo] | None:
            live = {b.broker_id for b in self.live()}
            seen: dict[int, PartitionInfo] | None = None
            for bid in sorted(live):
                md = self.metadata(topic, bid)
                if len(md) != partitions:
                    return None
                for pi in md.values():
                    if pi.error != 0 or pi.leader not in live or set(pi.isr) != set(pi.replicas):
                        return None
                seen = md
            return seen
        return wait_for(f"{topic}: all {partitions} partitions with leaders and full ISR", full,
                        timeout, 0.2)

    def wait_leaders(self, topic: str, partitions: Sequence[int], avoid: set[int],
                     timeout: float = 30.0, interval: float = 0.05) -> dict[int, PartitionInfo]:
        """Until each of ``partitions`` has a leader that is live and not in ``avoid``."""
        def ok() -> dict[int, PartitionInfo] | None:
            live = {b.broker_id for b in self.live()} - avoid
            md = self.metadata(topic)
            if all(p in md and md[p].error == 0 and md[p].leader in live for p in partitions):
                return md
            return None
        return wait_for(f"{topic}: leaders outside {sorted(avoid)} for {len(partitions)} partitions",
                        ok, timeout, interval)

    def list_offset(self, broker_id: int, topic: str, p: int, timestamp: int = -1) -> tuple[int, int]:
        with self.client(broker_id, timeout=2.0) as c:
            return c.list_offset(topic, p, timestamp)

    def read_partition(self, topic: str, p: int, timeout: float = 30.0) -> list[tuple[int, bytes | None]]:
        """(offset, value) of every data record below the HW, fetched from the leader."""
        def attempt() -> list[tuple[int, bytes | None]]:
            leader = self.leader(topic, p)
            out: list[tuple[int, bytes | None]] = []
            offset = 0
            with self.client(leader, timeout=10.0) as c:
                for _ in range(100_000):
                    err, hw, data = c.fetch_batches(topic, p, offset)
                    if err != 0:
                        raise FaultError(f"fetch {topic}-{p}@{offset} from {leader}: error {err}")
                    if offset >= hw:
                        return out
                    got = False
                    for pos, h in records.iter_batches(data):
                        if h.last_offset < offset or h.is_control:
                            offset = max(offset, h.next_offset)
                            continue
                        for r in records.iter_records(data, pos):
                            if offset <= r.offset < hw:
                                out.append((r.offset, r.value))
                        offset = h.next_offset
                        got = True
                    if not got and offset < hw:
                        raise FaultError(f"fetch {topic}-{p}@{offset} returned no batch below HW {hw}")
            raise FaultError("read_partition: too many fetches")
        return wait_for(f"read {topic}-{p}", attempt, timeout, 0.5)

    # -- files -------------------------------------------------------------------------

    def partition_dir(self, b: BrokerProcess, topic: str, p: int) -> str:
        return str(b.log_dir / filenames.partition_dir_name(topic, p))

    def disk_leo(self, broker_id: int, topic: str, p: int) -> int:
        return self.leos.leo(self.partition_dir(self.broker(broker_id), topic, p))

    def checkpointed_hw(self, b: BrokerProcess, topic: str, p: int) -> int | None:
        cp = checker.read_checkpoint(str(b.log_dir / filenames.REPLICATION_CHECKPOINT))
        return cp.get((topic, p))


# --------------------------------------------------------------------------------------
# load


class LoadProducer:
    """confluent-kafka, enable.idempotence=true, acks=all, in a thread: round-robin over
    ``partitions``, values from ``checker.make_value``; every delivery report goes to
    ``history``. ``rate`` = records/s (None = as fast as the queue allows)."""

    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int],
                 history: checker.History, tag: str | None = None, value_size: int = 100,
                 rate: float | None = 500.0, max_records: int = 10_000_000,
                 conf: dict[str, Any] | None = None) -> None:
        from confluent_kafka import Producer

        self.topic, self.partitions, self.history = topic, list(partitions), history
        self.tag = tag or f"p{uuid.uuid4().hex[:6]}"
        self.value_size, self.rate, self.max_records = value_size, rate, max_records
        self.seq = {p: 0 for p in self.partitions}
        self.errors: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "linger.ms": 2, "message.timeout.ms": 60_000, "request.timeout.ms": 10_000,
            "retry.backoff.ms": 50, "retry.backoff.max.ms": 500,
            "topic.metadata.refresh.interval.ms": 2000,
            "error_cb": self._on_error, "log_level": 3, **(conf or {})})

    def _on_error(self, err: Any) -> None:
        if err.fatal():
            self.history.on_fatal(str(err))

    def _report(self, err: Any, msg: Any) -> None:
        value = msg.value()
        if err is not None:
            self.errors[err.name()] = self.errors.get(err.name(), 0) + 1
            self.history.on_error(value, str(err))
        else:
            self.history.on_ack(value, msg.partition(), msg.offset())

    def send_one(self, p: int) -> None:
        value = checker.make_value(self.tag, p, self.seq[p], self.value_size)
        self.seq[p] += 1
        self.history.on_send()
        while True:
            try:
                self.producer.produce(self.topic, value, partition=p, on_delivery=self._report)
                return
            except BufferError:
                self.producer.poll(0.05)

    def _run(self) -> None:
        sent, t0 = 0, time.monotonic()
        while not self._stop.is_set() and sent < self.max_records and not self.history.fatal:
            for p in self.partitions:
                self.send_one(p)
                sent += 1
            self.producer.poll(0)
            if self.rate:
                ahead = sent / self.rate - (time.monotonic() - t0)
                if ahead > 0:
                    self._stop.wait(ahead)

    def start(self) -> LoadProducer:
        self._thread = threading.Thread(target=self._run, name=f"load-{self.tag}", daemon=True)
        self._thread.start()
        return self

    def stop(self, flush_timeout: float = 60.0) -> int:
        """Stop sending, wait for outstanding deliveries; -> records still undelivered."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        return int(self.producer.flush(flush_timeout))

    def close(self) -> None:
        """Teardown after a failure: stop at once, drop what is queued."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.producer.purge()
        self.producer.flush(1)

    def drain(self, timeout: float = 60.0) -> int:
        """Let the thread send its ``max_records`` (bounded by ``timeout``), then
        ``stop``; -> records still undelivered."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.stop(timeout)

    def sent(self) -> int:
        return sum(self.seq.values())


class LiveConsumer:
    """A confluent-kafka consumer (assign, no group commits) reading every partition
    from the start while faults happen; what it sees goes to ``history.on_seen``."""

    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int],
                 history: checker.History) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.history = history
        self.count = 0
        self._stop = threading.Event()
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": f"live-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 2000, "log_level": 3,
            "fetch.wait.max.ms": 100})
        self.consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        self._thread = threading.Thread(target=self._run, name="live-consumer", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for m in self.consumer.consume(500, 0.2):
                if m.error() is None:
                    self.history.on_seen(m.partition(), m.offset(), m.value())
                    self.count += 1

    def start(self) -> LiveConsumer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


class Monitor:
    """Samples every partition every ``interval`` s into an InvariantMonitor: Metadata
    (leader, epoch, ISR), then the leader's HW (ListOffsets latest), then each ISR
    member's LEO from its files. Errors (a broker just died) skip the sample."""

    def __init__(self, fc: FaultCluster, topic: str, partitions: Sequence[int],
                 interval: float = 0.25) -> None:
        self.fc, self.topic, self.partitions, self.interval = fc, topic, list(partitions), interval
        self.inv = checker.InvariantMonitor()
        self.skipped = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="monitor", daemon=True)
        self.t0 = time.monotonic()

    def sample_once(self) -> None:
        md = self.fc.metadata(self.topic)
        for p in self.partitions:
            pi = md.get(p)
            if pi is None or pi.error != 0 or pi.leader < 0:
                continue
            err, hw = self.fc.list_offset(pi.leader, self.topic, p)
            if err != 0:
                continue
            leos = {r: self.fc.disk_leo(r, self.topic, p) for r in pi.isr}
            self.inv.observe(checker.Sample(p, pi.leader, pi.leader_epoch, pi.isr, hw, leos,
                                            time.monotonic() - self.t0))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sample_once()
            except Exception:  # noqa: BLE001 - a broker went away mid-sample
                self.skipped += 1

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(10)
        return self.inv.violations


# --------------------------------------------------------------------------------------
# the end of a run


@dataclass
class FinalResult:
    report: checker.Report
    invariant_violations: list[str]
    log_problems: list[str]
    hws: dict[int, int]

    @property
    def ok(self) -> bool:
        return self.report.ok and not self.invariant_violations and not self.log_problems

    def summary(self) -> str:
        lines = [self.report.summary()]
        lines += [f"  invariant: {v}" for v in self.invariant_violations[:10]]
        lines += [f"  logs: {v}" for v in self.log_problems[:10]]
        return "\n".join(lines)


def final_check(fc: FaultCluster, topic: str, partitions: Sequence[int],
                history: checker.History, monitor: Monitor | None = None,
                converge_timeout: float = 60.0, compare_logs: bool = True) -> FinalResult:
    """After the load stopped: wait for full ISRs, read every partition back and run
    the checker; then stop the cluster cleanly (SIGTERM, so HW checkpoints are
    written) and compare the replicas' files byte for byte below the HW."""
    fc.wait_isr_full(topic, len(partitions), converge_timeout)
    final: dict[int, list[tuple[int, bytes | None]]] = {}
    hws: dict[int, int] = {}
    for p in partitions:
        final[p] = fc.read_partition(topic, p)
        err, hws[p] = fc.list_offset(fc.leader(topic, p), topic, p)
    inv = monitor.stop() if monitor is not None else []
    if monitor is not None:
        for p, hw in hws.items():
            monitor.inv.check_final(p, hw)
        inv = monitor.inv.violations
    report = checker.check(history, final)
    problems: list[str] = []
    if compare_logs:
        md = fc.metadata(topic)
        replicas = {p: [fc.broker(r) for r in md[p].replicas] for p in partitions}

        def caught_up() -> bool:    # no writes any more: every replica at the same LEO
            return all(len({fc.disk_leo(b.broker_id, topic, p) for b in replicas[p]}) == 1
                       for p in partitions)
        with contextlib.suppress(FaultError):
            wait_for("replicas' LEOs equal", caught_up, 20.0, 0.2)
        fc.stop()    # SIGTERM: the HW checkpoints are written on the way out
        for p in partitions:
            reps = {b.broker_id: checker.read_partition_dir(fc.partition_dir(b, topic, p))
                    for b in replicas[p]}
            cps = {b.broker_id: fc.checkpointed_hw(b, topic, p) for b in replicas[p]}
            hw = max([hws[p]] + [h for h in cps.values() if h is not None])
            for bid, h in cps.items():
                end = reps[bid][-1].last_offset + 1 if reps[bid] else 0
                if h is not None and h > end:
                    problems.append(f"p{p}: broker {bid} checkpointed HW {h} > its LEO {end}")
            problems += checker.compare_replica_logs(reps, hw, label=f"p{p}:")
    return FinalResult(report, inv, problems, hws)
