"""Multi-broker fault harness on top of tests/integration/cluster.py.

    with zookeeper(work) as zk:
        fc = FaultCluster(zk, work, size=3, overrides={...}).start()
        fc.create_topic("t", partitions=3, rf=3, configs={"min.insync.replicas": "2"})
        load = workload.LoadProducer(fc.bootstrap, "t", [0, 1, 2], history).start()
        fc.sigkill(fc.broker(fc.leader("t", 0)))
        ...
        fc.stop()

Faults are signals sent by pid: SIGKILL, SIGSTOP/SIGCONT (a paused broker keeps its
sockets but answers nothing, so its ZooKeeper session expires), SIGTERM (controlled
shutdown). Cluster state is read the way a client would (Metadata, ListOffsets), or
from ZooKeeper with kazoo (test side only). Every wait is bounded; every process is
stopped by pid (paused ones are continued first so SIGTERM can land).

The load (LoadProducer, LiveConsumer, Monitor) and the end-of-run check
(final_check) are in tests/fault/workload.py.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
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


# The test's own ZooKeeper calls wait this long at most: kazoo queues a call while it
# is disconnected and would wait for ever while ZooKeeper is down or paused.
ZK_CALL_TIMEOUT = 5.0


def harness_kazoo(connect: str) -> Any:
    """The test side's kazoo client: started, reconnecting at most 1 s apart (kazoo's
    default backoff grows to an hour, far past a fault's heal)."""
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry

    zk = KazooClient(hosts=connect, timeout=10,
                     connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0))
    zk.start(timeout=10)
    return zk


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
    the end of the last good batch of the newest segment.

    The active segment is a sparse, mmap'd file that the broker fills in place: a
    batch is copied in first and its base offset (and leader epoch) patched after,
    so a reader can meet a batch that is half copied or not yet patched. A batch
    counts only if its CRC holds and its base offset continues the previous batch
    (the segment's base offset for the first one); the walk stops at the first
    that does not. Incremental: it remembers where the last good batch starts and
    its 61 header bytes, and rescans the segment when those bytes changed
    (truncation) or the newest segment is another one."""

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
            if seg != base or not head or os.pread(f.fileno(), len(head), pos) != head:
                pos, head, leo = 0, b"", base
            start = pos
            f.seek(start)
            buf = f.read()
            expected = records.read_header(head).base_offset if head else base
            for at, h in records.iter_batches(buf):
                if h.base_offset != expected or not records.crc_ok(buf, at, h):
                    break
                pos, head, leo = start + at, bytes(buf[at:at + records.HEADER_SIZE]), h.next_offset
                expected = h.next_offset
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

    def restart_at_once(self, b: BrokerProcess, timeout: float = 40.0) -> None:
        """Start a killed broker again now, as a process supervisor would: its dead
        session may still hold its registration, which it replaces on start-up
        (controller/zk.py ``register_broker``); ready once Metadata names it."""
        self.sigcont(b)
        if b.running:
            b.stop()
        b.start(timeout)

    # -- ZooKeeper (test side) ---------------------------------------------------------

    def zk(self) -> Any:
        if self._zk is None:
            self._zk = harness_kazoo(self.cluster.zk_connect)
        return self._zk

    def zk_controller(self) -> int | None:
        import json

        try:
            data, _ = self.zk().get_async("/controller").get(timeout=ZK_CALL_TIMEOUT)
        except Exception:  # noqa: BLE001 - NoNodeError: no controller right now; timeout
            return None
        return int(json.loads(data)["brokerid"])

    def zk_registered(self) -> set[int]:
        try:
            return {int(x) for x in
                    self.zk().get_children_async("/brokers/ids").get(timeout=ZK_CALL_TIMEOUT)}
        except Exception:  # noqa: BLE001
            return set()

    def zk_partition_state(self, topic: str, p: int) -> dict[str, Any]:
        return self.zk_partition_state_versioned(topic, p)[0]

    def zk_partition_state_versioned(self, topic: str, p: int) -> tuple[dict[str, Any], int]:
        """(state JSON: leader, leader_epoch, isr, controller_epoch; znode version)."""
        import json

        data, stat = self.zk().get_async(f"/brokers/topics/{topic}/partitions/{p}/state").get(
            timeout=ZK_CALL_TIMEOUT)
        return dict(json.loads(data)), int(stat.version)

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
