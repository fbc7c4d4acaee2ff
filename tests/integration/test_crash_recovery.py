"""kill -9 and SIGTERM of a broker under load, then restart.

- acks=1 producer writing while the broker is killed -9: after the restart every
  acknowledged record is at the offset it was acknowledged with, and the
  partition's offsets are dense (no holes, no torn batch served).
- idempotent producers (confluent-kafka with enable.idempotence=true; kafka-python
  3 by default) keep sending across kill -9 and restart: every record is there
  exactly once, in send order (the broker rebuilds producer state from the log).
- SIGTERM then restart: the broker logs ``recovery skipped: clean shutdown`` and
  serves everything; after a kill -9 it must not log that line.
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.integration.cluster import (CLEAN_SHUTDOWN_SKIP_LINE, BrokerProcess, Cluster,
                                      MakeCluster, WireClient)

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("crash", overrides={
        "auto.create.topics.enable": "false",
        # small segments so a crash also lands mid-roll sometimes
        "log.segment.bytes": str(256 * 1024),
    })


@pytest.fixture(scope="module")
def broker(cluster: Cluster) -> BrokerProcess:
    return cluster.brokers[0]


def create(broker: BrokerProcess, topic: str, partitions: int = 1) -> None:
    with WireClient(broker.port) as w:
        assert w.create_topic(topic, partitions) == 0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with WireClient(broker.port) as w:
            t = w.metadata([topic]).topics[0]
        if t.error_code == 0 and all(p.leader_id >= 0 for p in t.partitions) and t.partitions:
            return
        time.sleep(0.1)
    raise AssertionError(f"{topic} has no leader")


def read_partition(bootstrap: str, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "error"})
    try:
        c.assign([TopicPartition(topic, partition, 0)])
        out: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == ck.KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(f"consume error {m.error()}")
            out.append((m.offset(), m.value()))
        raise AssertionError(f"no EOF within 60 s ({len(out)} records read)")
    finally:
        c.close()


class ProducerThread(threading.Thread):
    """confluent-kafka producer sending value b"<seq>" as fast as the broker takes
    it until told to stop, then flushing for up to ``flush_timeout`` s."""

    def __init__(self, bootstrap: str, topic: str, conf: dict[str, object],
                 flush_timeout: float = 60.0) -> None:
        super().__init__(daemon=True)
        self.p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2,
                           "reconnect.backoff.max.ms": 200, **conf})
        self.topic = topic
        self.flush_timeout = flush_timeout
        self.stop_flag = threading.Event()
        self.sent = 0
        self.acked: dict[int, int] = {}        # seq -> offset
        self.failed: dict[int, str] = {}       # seq -> error
        self.left = -1

    def _report(self, err, msg) -> None:  # type: ignore[no-untyped-def]
        seq = int(msg.value())
        if err is None:
            self.acked[seq] = msg.offset()
        else:
            self.failed[seq] = str(err)

    def run(self) -> None:
        while not self.stop_flag.is_set():
            try:
                self.p.produce(self.topic, value=str(self.sent).encode(), partition=0,
                               on_delivery=self._report)
                self.sent += 1
            except BufferError:
                self.p.poll(0.05)
                continue
            if self.sent % 100 == 0:
                self.p.poll(0)
                time.sleep(0.001)
        self.left = self.p.flush(self.flush_timeout)


def wait_for(cond, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_kill9_during_acks1_produce(cluster: Cluster, broker: BrokerProcess) -> None:
    topic = "crash-acks1"
    create(broker, topic)
    prod = ProducerThread(cluster.bootstrap, topic, {"acks": "1", "enable.idempotence": False,
                                                      "message.timeout.ms": 60000})
    prod.start()
    wait_for(lambda: len(prod.acked) >= 20000, 60, "20000 acknowledged records")
    cluster.kill9(broker)
    acked_before_kill = dict(prod.acked)
    in_flight = prod.sent - len(acked_before_kill) - len(prod.failed)
    prod.stop_flag.set()
    assert in_flight > 0, "nothing was in flight when the broker was killed"
    cluster.restart(broker)
    assert CLEAN_SHUTDOWN_SKIP_LINE not in broker.log_text(), \
        "recovery was skipped after a kill -9"
    prod.join(90)
    assert prod.left == 0, f"{prod.left} records undelivered after restart"

    log = read_partition(cluster.bootstrap, topic)
    offsets = [o for o, _ in log]
    assert offsets == list(range(len(log))), "offsets are not dense from 0"
    by_offset = dict(log)
    missing = {s: o for s, o in acked_before_kill.items() if by_offset.get(o) != str(s).encode()}
    assert not missing, (f"{len(missing)} of {len(acked_before_kill)} acknowledged records not at "
                         f"their offset, e.g. {list(missing.items())[:5]}")
    for seq, off in prod.acked.items():  # acknowledged after the restart too
        assert by_offset.get(off) == str(seq).encode(), f"seq {seq} acked at {off}"
    with WireClient(broker.port) as w:
        assert w.list_offset(topic, 0) == (0, len(log))


def test_kill9_confluent_idempotent_no_duplicates(cluster: Cluster, broker: BrokerProcess) -> None:
    topic = "crash-idem-ck"
    create(broker, topic)
    prod = ProducerThread(cluster.bootstrap, topic, {"enable.idempotence": True,
                                                      "message.timeout.ms": 120000},
                          flush_timeout=120)
    prod.start()
    wait_for(lambda: len(prod.acked) >= 20000, 60, "20000 acknowledged records")
    cluster.kill9(broker)
    time.sleep(0.5)
    prod.stop_flag.set()  # what was queued keeps being retried across the restart
    cluster.restart(broker)
    prod.join(150)
    assert prod.left == 0, f"{prod.left} records undelivered"
    assert not prod.failed, f"{len(prod.failed)} failed, e.g. {list(prod.failed.items())[:3]}"

    log = read_partition(cluster.bootstrap, topic)
    assert [o for o, _ in log] == list(range(len(log)))
    seqs = [int(v) for _, v in log]
    assert seqs == list(range(prod.sent)), (
        f"sent {prod.sent}, log has {len(seqs)}; duplicates: {len(seqs) - len(set(seqs))}; "
        f"first out-of-order at {next((i for i, s in enumerate(seqs) if s != i), None)}")
    for seq, off in prod.acked.items():
        assert log[off][1] == str(seq).encode()


def test_kill9_kafka_python_idempotent_no_duplicates(cluster: Cluster,
                                                    broker: BrokerProcess) -> None:
    kafka = pytest.importorskip("kafka")
    topic = "crash-idem-kp"
    create(broker, topic)
    p = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap, linger_ms=2,
                            reconnect_backoff_max_ms=200, delivery_timeout_ms=120000,
                            request_timeout_ms=5000)  # enable_idempotence defaults to True
    futs = []
    killed = False
    n = 6000
    for i in range(n):
        futs.append(p.send(topic, value=str(i).encode(), partition=0))
        if i == n // 2:
            p.flush(30)  # the first half is acknowledged ...
        if i == n // 2 + 500 and not killed:
            cluster.kill9(broker)  # ... and the second half is in flight or queued
            killed = True
    cluster.restart(broker)
    p.flush(120)
    offsets = [f.get(timeout=60).offset for f in futs]
    p.close(10)

    log = read_partition(cluster.bootstrap, topic)
    assert [o for o, _ in log] == list(range(len(log)))
    seqs = [int(v) for _, v in log]
    assert seqs == list(range(n)), (f"log has {len(seqs)} records for {n} sent; duplicates: "
                                    f"{len(seqs) - len(set(seqs))}")
    assert offsets == list(range(n))


def test_sigterm_restart_skips_recovery(cluster: Cluster, broker: BrokerProcess) -> None:
    topic = "clean-stop"
    create(broker, topic)
    with WireClient(broker.port) as w:
        from protocol.records import build_batch
        for i in range(50):
            r = w.produce(topic, 0, build_batch([(b"k", b"v%d" % i, 1_700_000_000_000 + i)] * 1))
            assert (r.error_code, r.base_offset) == (0, i)
    rc = broker.stop()
    assert rc == 0, f"clean shutdown exit code {rc}\n{broker.tail()}"
    cluster.restart(broker)
    text = broker.log_text()
    assert CLEAN_SHUTDOWN_SKIP_LINE in text, (
        f"no {CLEAN_SHUTDOWN_SKIP_LINE!r} after a SIGTERM restart\n{broker.tail(40)}")
    log = read_partition(cluster.bootstrap, topic)
    assert [v for _, v in log] == [b"v%d" % i for i in range(50)]
    with WireClient(broker.port) as w:
        assert w.list_offset(topic, 0) == (0, 50)
        assert w.list_offset(topic, 0, 1_700_000_000_000 + 17) == (0, 17)
