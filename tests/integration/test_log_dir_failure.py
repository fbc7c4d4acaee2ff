"""KIP-112 with real disks: a log dir on a loop-mounted ext4 image fills up or
fails under a 3-broker cluster (ZooKeeper mode), and only that dir goes offline.

Broker X (id 1) runs with two log dirs: A (a plain directory) and B (on a
LoopDisk, tests/fault/disk_faults.py). Each topic is RF 3, min.insync.replicas 2,
every partition led by X; AlterReplicaLogDirs puts two partitions on B and two
on A. An acks=all producer (confluent-kafka, idempotent) writes to all four and
counts what is acknowledged. Cases, in order on one cluster:

(a) B fills up (ENOSPC): X answers KAFKA_STORAGE_ERROR for B's partitions,
    leadership moves within seconds, X still leads A's; nothing acknowledged is
    lost; B never gets the clean-shutdown marker; unfilled and restarted, B is
    online again (recovered), X is back in the ISRs.
(b) the same with ext4 failing (EROFS), repaired (e2fsck) before the restart.
(c) X started with B unusable: it starts, serves A, reports B offline, and the
    controller lists X as an offline replica of B's partitions.
(d) a broker whose only log dir fails exits with code 1 and a clear line (and one
    started with no usable dir at all exits at once).

Needs root (loop devices); skipped otherwise (disk_skip_reason).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from protocol import records
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch
from protocol.spec import api
from storage import filenames
from tests.fault.disk_faults import LoopDisk, disk_skip_reason
from tests.integration.cluster import BrokerProcess, Cluster, MakeCluster, WireClient
from tests.integration.multi import until
from tests.integration.zookeeper import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SKIP = disk_skip_reason()
if SKIP:
    pytest.skip(SKIP, allow_module_level=True)

X = 1
STORAGE_ERROR = 56
MOVE_WITHIN_S = 10.0                   # "within a few seconds" (typically well under 2 s)
ASSIGNMENT = {0: [X, 0, 2], 1: [X, 2, 0], 2: [X, 0, 2], 3: [X, 2, 0]}
ON_B, ON_A = (0, 1), (2, 3)
OVERRIDES = {"auto.create.topics.enable": "false",
             "leader.imbalance.check.interval.seconds": "3600"}


@dataclass
class DirsBroker(BrokerProcess):
    """A broker whose log.dirs are ``dirs`` (the harness gives one dir per broker)."""

    dirs: list[Path] = field(default_factory=list)

    def argv(self) -> list[str]:
        args = super().argv()
        i = args.index(f"log.dirs={self.log_dir}")
        args[i] = "log.dirs=" + ",".join(str(d) for d in self.dirs)
        return args


@dataclass
class Env:
    cluster: Cluster
    disk: LoopDisk
    base: Path

    @property
    def x(self) -> DirsBroker:
        return self.cluster.broker(X)  # type: ignore[return-value]

    @property
    def dir_a(self) -> str:
        return str(self.x.log_dir)

    @property
    def dir_b(self) -> str:
        return str(self.disk.mount_point / "logs")


@pytest.fixture(scope="module")
def env(make_cluster: MakeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("log-dir-failure")
    with LoopDisk(base / "mnt", base / "images", size_mb=64) as disk:
        c = make_cluster("log-dir-failure", 3, start=False, overrides=OVERRIDES)
        old = c.brokers[X]
        c.brokers[X] = DirsBroker(old.broker_id, old.port, old.dir, old.zk_connect, old.overrides,
                                  dirs=[old.log_dir, disk.mount_point / "logs"])
        c.start()
        try:
            yield Env(c, disk, base)
        finally:
            c.stop()              # before the disk its broker writes to is unmounted
            print("\n".join(disk.log))


# --------------------------------------------------------------------------------------
# requests


def create_topic(c: Cluster, name: str) -> None:
    spec = api(ApiKey.CREATE_TOPICS).request
    topic = spec.structs["CreatableTopic"].new(
        name=name, num_partitions=-1, replication_factor=-1,
        assignments=[spec.structs["CreatableReplicaAssignment"].new(partition_index=p,
                                                                    broker_ids=r)
                     for p, r in ASSIGNMENT.items()],
        configs=[spec.structs["CreatableTopicConfig"].new(name="min.insync.replicas",
                                                          value="2")])
    with WireClient(c.brokers[0].port, timeout=20) as w:
        resp = w.request(ApiKey.CREATE_TOPICS, 5, spec.new(topics=[topic], timeout_ms=15000))
    assert resp.topics[0].error_code == 0, resp.topics[0]


@dataclass(frozen=True)
class PartInfo:
    leader: int
    isr: tuple[int, ...]
    offline: tuple[int, ...]


def partitions(port: int, topic: str) -> dict[int, PartInfo]:
    with WireClient(port, timeout=5) as w:
        md = w.metadata([topic], version=7)
    return {p.partition_index: PartInfo(p.leader_id, tuple(sorted(p.isr_nodes)),
                                        tuple(sorted(p.offline_replicas)))
            for t in md.topics if t.name == topic for p in t.partitions}


def every_partition(port: int, topic: str, holds: Callable[[PartInfo], bool]) -> bool | None:
    """True once the broker's metadata has every partition of ASSIGNMENT for the
    topic and each holds; None before (a topic the broker does not know yet has no
    partitions, and all() of nothing would be True)."""
    info = partitions(port, topic)
    return (set(info) == set(ASSIGNMENT) and all(holds(i) for i in info.values())) or None


def describe_log_dirs(port: int) -> dict[str, tuple[int, set[tuple[str, int]]]]:
    """log dir -> (error, its partitions)."""
    spec = api(ApiKey.DESCRIBE_LOG_DIRS).request
    with WireClient(port, timeout=10) as w:
        resp = w.request(ApiKey.DESCRIBE_LOG_DIRS, 1, spec.new(topics=None))
    return {r.log_dir: (r.error_code, {(t.name, p.partition_index) for t in r.topics
                                       for p in t.partitions}) for r in resp.results}


def move_to(port: int, path: str, topic: str, parts: tuple[int, ...]) -> None:
    """Move the replicas (REPLICA_NOT_AVAILABLE, a replica not yet created, is retried
    for a while)."""
    spec = api(ApiKey.ALTER_REPLICA_LOG_DIRS).request
    body = spec.new(dirs=[spec.structs["AlterReplicaLogDir"].new(path=path, topics=[
        spec.structs["AlterReplicaLogDirTopic"].new(name=topic, partitions=list(parts))])])
    deadline = time.monotonic() + 15
    while True:
        with WireClient(port, timeout=20) as w:
            resp = w.request(ApiKey.ALTER_REPLICA_LOG_DIRS, 1, body)
        errors = {p.error_code for t in resp.results for p in t.partitions}
        if errors != {ErrorCode.REPLICA_NOT_AVAILABLE} or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert errors == {0}, resp


def produce(port: int, topic: str, partition: int, acks: int = -1, size: int = 5) -> int:
    batch = build_batch([(b"probe", b"p" * size, int(time.time() * 1000))])
    with WireClient(port, timeout=20) as w:
        return int(w.produce(topic, partition, batch, acks=acks).error_code)


def fetch_error(port: int, topic: str, partition: int) -> int:
    with WireClient(port, timeout=10) as w:
        return w.fetch_batches(topic, partition, 0)[0]


def list_offsets_error(port: int, topic: str, partition: int) -> int:
    with WireClient(port, timeout=10) as w:
        return w.list_offset(topic, partition)[0]


def read_back(c: Cluster, topic: str) -> set[tuple[int, bytes]]:
    """Every record value of every partition, read from its leader up to the HW."""
    out: set[tuple[int, bytes]] = set()
    info = until(lambda: (lambda m: m if len(m) == len(ASSIGNMENT) and all(
        i.leader >= 0 for i in m.values()) else None)(partitions(c.brokers[0].port, topic)),
        20, f"leaders for every partition of {topic}")
    for p, i in info.items():
        port = c.broker(i.leader).port
        offset = 0
        while True:
            with WireClient(port, timeout=10) as w:
                error, hw, data = w.fetch_batches(topic, p, offset)
            assert error == 0, (topic, p, i.leader, error)
            if offset >= hw or not data:
                break
            for rec in records.iter_all_records(data):
                if rec.offset < hw:
                    out.add((p, bytes(rec.value or b"")))
                offset = max(offset, rec.offset + 1)
    return out


# --------------------------------------------------------------------------------------
# the producer


class Producing:
    """An idempotent acks=all producer thread writing to every partition in turn;
    ``acked`` holds (partition, value) of each acknowledged record."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "enable.idempotence": True, "linger.ms": 5,
                                  "compression.type": "none", "message.timeout.ms": 30000,
                                  "retry.backoff.ms": 100})
        self.acked: set[tuple[int, bytes]] = set()
        self.failed: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._go = threading.Event()
        self._go.set()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No new records meanwhile (those in flight still complete)."""
        self._go.clear()
        try:
            yield
        finally:
            self._go.set()

    def _delivered(self, err: Any, msg: Any) -> None:
        with self._lock:
            if err is None:
                self.acked.add((msg.partition(), msg.value()))
            else:
                self.failed.append(str(err))

    def _run(self) -> None:
        for i in itertools.count():
            if self._stop.is_set():
                return
            self._go.wait()
            p = i % len(ASSIGNMENT)
            try:
                self.producer.produce(self.topic, value=b"%d-%d" % (p, i), partition=p,
                                      on_delivery=self._delivered)
            except BufferError:
                self.producer.poll(0.1)
                continue
            self.producer.poll(0)
            time.sleep(0.004)

    def acked_on(self, parts: tuple[int, ...]) -> int:
        with self._lock:
            return sum(1 for p, _ in self.acked if p in parts)

    def __enter__(self) -> Producing:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(10)
        left = self.producer.flush(45)
        assert left == 0, f"{left} records still undelivered"


# --------------------------------------------------------------------------------------
# checks


def layout(env: Env, topic: str) -> None:
    """Every partition led by X with its full ISR; ON_B on dir B, ON_A on dir A."""
    c, x = env.cluster, env.x
    # every partition of ASSIGNMENT in one read, not just some (every_partition)
    until(lambda: every_partition(x.port, topic, lambda i: i.leader == X and i.isr == (0, 1, 2)),
          20, f"{topic} led by broker {X} with full ISRs")
    move_to(x.port, env.dir_b, topic, ON_B)
    move_to(x.port, env.dir_a, topic, ON_A)
    dirs = describe_log_dirs(x.port)
    assert {(topic, p) for p in ON_B} <= dirs[env.dir_b][1], dirs
    assert {(topic, p) for p in ON_A} <= dirs[env.dir_a][1], dirs
    assert c.broker(X).running


def whole_batches(path: Path) -> bool:
    """A segment file is whole magic-2 batches with good CRCs and no tail."""
    data = path.read_bytes()
    end = 0
    for pos, header in records.iter_batches(data):
        if pos != end or not records.crc_ok(data, pos, header):
            return False
        end = pos + header.size
    return end == len(data)


def segments_on_b(env: Env, topic: str) -> list[Path]:
    return [seg for p in ON_B for seg in sorted((Path(env.dir_b) / f"{topic}-{p}").glob("*.log"))]


def disk_fault_case(env: Env, topic: str, inject: Callable[[Producing], None],
                    before_restart: Callable[[], None]) -> None:
    c, x = env.cluster, env.x
    create_topic(c, topic)
    layout(env, topic)
    with Producing(c.bootstrap, topic) as prod:
        until(lambda: prod.acked_on(ON_B) >= 40 and prod.acked_on(ON_A) >= 40 or None, 30,
              "acknowledged records on both dirs' partitions")
        t0 = time.monotonic()
        inject(prod)
        # the produce to X for B's partitions fails with KAFKA_STORAGE_ERROR
        until(lambda: produce(x.port, topic, ON_B[0], acks=1) == STORAGE_ERROR or None,
              MOVE_WITHIN_S, "KAFKA_STORAGE_ERROR from X for a partition on dir B")
        # and their leadership moves to another replica, X out of the ISR, offline
        moved = until(lambda: (lambda m: m if all(
            m[p].leader not in (X, -1) and X not in m[p].isr and X in m[p].offline
            for p in ON_B) else None)(partitions(c.brokers[0].port, topic)),
            MOVE_WITHIN_S, "leadership of dir B's partitions moving off X")
        took = time.monotonic() - t0
        print(f"{topic}: leadership of {ON_B} moved in {took:.2f}s: {moved}")
        assert fetch_error(x.port, topic, ON_B[1]) == STORAGE_ERROR
        assert list_offsets_error(x.port, topic, ON_B[1]) == STORAGE_ERROR
        # X keeps serving its other dir: it still leads A's partitions, acks=all works
        info = partitions(x.port, topic)
        assert all(info[p].leader == X and X in info[p].isr for p in ON_A), info
        assert produce(x.port, topic, ON_A[0]) == 0
        assert fetch_error(x.port, topic, ON_A[0]) == 0
        dirs = describe_log_dirs(x.port)
        assert dirs[env.dir_b][0] == STORAGE_ERROR and dirs[env.dir_a][0] == 0, dirs
        # the producer goes on with the new leaders
        after = prod.acked_on(ON_B)
        until(lambda: prod.acked_on(ON_B) >= after + 40 or None, 20,
              "acknowledgements for dir B's partitions from their new leaders")
    assert "Stopped serving replicas in dir " + env.dir_b in x.log_text()
    lost = prod.acked - read_back(c, topic)
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {sorted(lost)[:5]}"
    print(f"{topic}: {len(prod.acked)} acknowledged, none lost; {len(prod.failed)} failed "
          f"deliveries ({set(prod.failed)})")
    # restart X: the offline dir got no clean-shutdown marker, so it is recovered
    assert x.stop() == 0, x.tail()
    assert not os.path.exists(os.path.join(env.dir_b, filenames.CLEAN_SHUTDOWN))
    assert os.path.exists(os.path.join(env.dir_a, filenames.CLEAN_SHUTDOWN))
    before_restart()
    torn = [seg for seg in segments_on_b(env, topic) if not whole_batches(seg)]
    c.restart(x)
    assert "after an unclean shutdown" in x.log_text(), x.tail()
    cut = [line for line in x.log_text().splitlines() if "recovery cut" in line]
    print(f"{topic}: torn segments before the restart: {[s.name for s in torn]}; "
          f"recovery: {cut or 'nothing to cut'}")
    for seg in torn:                      # recovery cut the torn tail off
        assert any(str(seg.parent) in line for line in cut), (seg, cut)
    dirs = describe_log_dirs(x.port)
    assert dirs[env.dir_b][0] == 0 and {(topic, p) for p in ON_B} <= dirs[env.dir_b][1], dirs
    until(lambda: every_partition(x.port, topic, lambda i: X in i.isr), 30,
          f"broker {X} back in every ISR of {topic}")
    for seg in segments_on_b(env, topic):   # X's copy: whole batches only
        assert whole_batches(seg), seg
    assert not prod.acked - read_back(c, topic)


# --------------------------------------------------------------------------------------
# the cases


def test_a_full_log_dir_goes_offline_alone(env: Env) -> None:
    def fill(prod: Producing) -> None:
        # the disk fills up in the middle of a large batch: a torn write (as a rule)
        with prod.paused():
            env.disk.fill(leave_kb=24)
            assert produce(env.x.port, "full", ON_B[0], acks=1, size=256 << 10) == STORAGE_ERROR
    disk_fault_case(env, "full", fill, env.disk.unfill)


def test_b_failed_file_system_goes_offline_alone(env: Env) -> None:
    disk_fault_case(env, "erofs", lambda _prod: env.disk.fail(), env.disk.repair)


def test_c_broker_starts_with_an_unusable_log_dir(env: Env) -> None:
    c, x = env.cluster, env.x
    earlier = [("full", p) for p in ON_B] + [("erofs", p) for p in ON_B]
    assert x.stop() == 0
    env.disk.fail()
    c.restart(x)
    log = x.log_text()
    assert f"log dir {env.dir_b} is offline from the start" in log, x.tail()
    dirs = describe_log_dirs(x.port)
    assert dirs[env.dir_b][0] == STORAGE_ERROR and dirs[env.dir_a][0] == 0, dirs
    # the partitions X had on B: offline replicas, not recreated empty on A
    for topic, p in earlier:
        until(lambda t=topic, q=p: (lambda i: X in i.offline and X not in i.isr or None)(
            partitions(c.brokers[0].port, t)[q]), MOVE_WITHIN_S, f"{topic}-{p} offline on X")
        assert not (Path(env.dir_a) / f"{topic}-{p}").exists()
    # and the rest is served: a new topic (is_new) lands on A, led by X
    create_topic(c, "fresh")
    until(lambda: every_partition(x.port, "fresh",
                                  lambda i: i.leader == X and i.isr == (0, 1, 2)), 20,
          "fresh led by X")
    assert produce(x.port, "fresh", 0) == 0
    assert {("fresh", p) for p in ASSIGNMENT} <= describe_log_dirs(x.port)[env.dir_a][1]
    assert x.running


def test_d_all_log_dirs_failing_stops_the_broker(env: Env) -> None:
    c = env.cluster
    # at start-up: no usable dir at all -> exit 1 at once, saying why
    blocker = env.base / "not-a-dir"
    blocker.write_text("a file where the log dirs should be")
    bad = DirsBroker(4, free_port(), env.base / "broker-4", c.zk_connect,
                     c.brokers[0].overrides, dirs=[blocker / "a", blocker / "b"])
    bad.spawn()
    assert bad.proc is not None and bad.proc.wait(30) == 1
    bad.stop()
    assert "Shutdown broker because none of the specified log dirs can be used" in \
        bad.log_text(), bad.tail()
    # at run time: the only dir fails under a broker serving a partition from it
    with LoopDisk(env.base / "mnt-solo", env.base / "images", size_mb=16) as solo:
        b = DirsBroker(3, free_port(), env.base / "broker-3", c.zk_connect,
                       c.brokers[0].overrides, dirs=[solo.mount_point / "logs"])
        try:
            b.start()
            spec = api(ApiKey.CREATE_TOPICS).request
            topic = spec.structs["CreatableTopic"].new(
                name="solo", num_partitions=-1, replication_factor=-1,
                assignments=[spec.structs["CreatableReplicaAssignment"].new(
                    partition_index=0, broker_ids=[3])])
            with WireClient(b.port, timeout=20) as w:
                assert w.request(ApiKey.CREATE_TOPICS, 5, spec.new(
                    topics=[topic], timeout_ms=15000)).topics[0].error_code == 0
            until(lambda: produce(b.port, "solo", 0, acks=1) == 0 or None, 20, "solo served")
            solo.fail()
            try:
                assert produce(b.port, "solo", 0, acks=1) == STORAGE_ERROR
            except OSError:
                pass                        # it may already be going away
            assert b.proc is not None
            code = b.proc.wait(30)
            b.stop()
            log = b.log_text()
            print(log[-1500:])
            assert code != 0
            assert ("Shutdown broker because all log dirs in "
                    f"{solo.mount_point / 'logs'} have failed") in log
        finally:
            b.stop()
