"""Client quotas against a real broker and ZooKeeper, with stock clients (issue 17).

* A 1 MB/s produce quota on one client id holds that client to 1 MB/s +-10% over 30 s,
  and the client sees throttling -- librdkafka (confluent-kafka: the stats' broker
  ``throttle`` window) and the Java client (``produce-throttle-time-avg``) -- while a
  client id without a quota, producing at the same time, runs at full speed without
  being throttled. All four producers run at once, 30 s each.
* A fetch quota holds a librdkafka consumer near its rate; another consumer is not
  held.
* Quotas set and described by ``pybroker configs`` and by the Java Admin client
  (AlterClientQuotas / DescribeClientQuotas on the wire), each seeing the other's;
  quota changes apply to running clients without a restart (the fetch test lifts the
  quota and the same consumer speeds up).

Measured rates are printed (run with -s to see them).
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.clients.test_java_client import java_classpath  # noqa: F401
from tests.integration.cluster import REPO, Cluster, MakeCluster
from tests.integration.multi import wait_until

pytestmark = pytest.mark.integration

ck = pytest.importorskip("confluent_kafka")
ck_admin = pytest.importorskip("confluent_kafka.admin")

MB = 1024 * 1024
SECONDS = 30
RECORD = 10 * 1024
PROGRAM = Path(__file__).with_name("JavaQuotaClient.java")


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("quotas")


def configs_tool(bootstrap: str, *argv: str) -> str:
    from tools import configs
    out, err = io.StringIO(), io.StringIO()
    status = configs.main(["--bootstrap-server", bootstrap, *argv], stdout=out, stderr=err)
    assert status == 0, err.getvalue()
    return out.getvalue()


def log_marks(cluster: Cluster) -> dict[int, int]:
    """Each broker's log length now (``BrokerProcess.log_text``): ``wait_quota_applied``
    looks only at what the brokers log after these marks."""
    return {b.broker_id: len(b.log_text()) for b in cluster.brokers}


def wait_quota_applied(cluster: Cluster, marks: dict[int, int], *client_ids: str,
                       timeout: float = 10.0) -> None:
    """Until every broker logged, after its mark, that it applied a quota change of each
    of ``client_ids``. A broker applies a quota only when ZooKeeper's change notification
    reaches it, in the background (broker/quotas/client_quotas.py, ``reload``), even the
    broker that took the request: a fixed sleep could end first on a loaded machine, and
    a client started then was not held to the quota (or not freed from it)."""
    lines = [f"applied client quota change for clients/{c}:" for c in client_ids]
    wait_until(lambda: all(line in b.log_text()[marks[b.broker_id]:]
                           for b in cluster.brokers for line in lines),
               timeout, f"every broker applying the quota change of {', '.join(client_ids)}")


def create_topics(bootstrap: str, *names: str, partitions: int = 1) -> None:
    admin = ck_admin.AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([ck_admin.NewTopic(n, partitions, 1) for n in names])
    for f in futures.values():
        f.result(30)


class RdkafkaProducer(threading.Thread):
    """librdkafka producing RECORD-byte values as fast as it may for ``seconds``."""

    def __init__(self, bootstrap: str, topic: str, client_id: str, seconds: float) -> None:
        super().__init__(daemon=True)
        self.topic, self.seconds = topic, seconds
        self.acked = 0
        self.throttle_max = 0
        self.producer: Any = ck.Producer({
            "bootstrap.servers": bootstrap, "client.id": client_id, "acks": 1,
            "enable.idempotence": False, "linger.ms": 5, "batch.size": 262144,
            "queue.buffering.max.kbytes": 8192, "statistics.interval.ms": 1000,
            "stats_cb": self._stats})

    def _stats(self, text: str) -> None:
        for b in json.loads(text).get("brokers", {}).values():
            self.throttle_max = max(self.throttle_max, int(b.get("throttle", {}).get("max", 0)))

    def run(self) -> None:
        """Produce until ``seconds`` after the first acknowledgement (start-up excluded),
        counting the bytes acknowledged within them."""
        value = b"r" * RECORD
        first_ack: list[float] = []

        def delivered(err: Any, msg: Any) -> None:
            now = time.monotonic()
            if not first_ack:
                first_ack.append(now)
            if err is None and now <= first_ack[0] + self.seconds:
                self.acked += len(value)
        while not first_ack or time.monotonic() < first_ack[0] + self.seconds:
            try:
                self.producer.produce(self.topic, value, on_delivery=delivered)
            except BufferError:
                self.producer.poll(0.01)
            self.producer.poll(0)
        self.producer.purge()
        self.producer.flush(5)
        self.producer = None      # closed here, not when the broker is already gone

    @property
    def rate(self) -> float:
        return self.acked / self.seconds


def java_producer(classpath: str, bootstrap: str, topic: str, client_id: str
                  ) -> subprocess.Popen[str]:
    return subprocess.Popen(["java", "-cp", classpath, str(PROGRAM), "produce", bootstrap,
                             topic, client_id, str(SECONDS), str(RECORD)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)


def java_result(proc: subprocess.Popen[str]) -> dict[str, float]:
    out, err = proc.communicate(timeout=SECONDS + 90)
    assert proc.returncode == 0, f"java exited {proc.returncode}\n{out[-2000:]}\n{err[-4000:]}"
    m = re.search(r"RESULT (.*)", out)
    assert m, out
    return {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}


def test_produce_quota_holds_one_client_id_and_not_another(cluster: Cluster,
                                                           java_classpath: str) -> None:
    bootstrap = cluster.bootstrap
    run = uuid.uuid4().hex[:6]
    topics = [f"quota-{n}-{run}" for n in ("rdk-slow", "rdk-fast", "java-slow", "java-fast")]
    create_topics(bootstrap, *topics)
    marks = log_marks(cluster)
    for client_id in (f"rdk-slow-{run}", f"java-slow-{run}"):
        out = configs_tool(bootstrap, "--alter", "--entity-type", "clients", "--entity-name",
                           client_id, "--add-config", f"producer_byte_rate={MB}")
        assert out == f"Completed updating config for client {client_id}.\n"
    described = configs_tool(bootstrap, "--describe", "--entity-type", "clients",
                             "--entity-name", f"rdk-slow-{run}")
    assert described == (f"Quota configs for client-id 'rdk-slow-{run}' are "
                         f"producer_byte_rate={float(MB)}\n")
    wait_quota_applied(cluster, marks, f"rdk-slow-{run}", f"java-slow-{run}")

    java_slow = java_producer(java_classpath, bootstrap, topics[2], f"java-slow-{run}")
    java_fast = java_producer(java_classpath, bootstrap, topics[3], f"java-fast-{run}")
    rdk_slow = RdkafkaProducer(bootstrap, topics[0], f"rdk-slow-{run}", SECONDS)
    rdk_fast = RdkafkaProducer(bootstrap, topics[1], f"rdk-fast-{run}", SECONDS)
    rdk_slow.start()
    rdk_fast.start()
    rdk_slow.join(SECONDS + 60)
    rdk_fast.join(SECONDS + 60)
    js, jf = java_result(java_slow), java_result(java_fast)
    java_slow_rate, java_fast_rate = js["acked_bytes"] / SECONDS, jf["acked_bytes"] / SECONDS
    print(f"\nproduce over {SECONDS} s, quota {MB} B/s:"
          f"\n  librdkafka quota'd {rdk_slow.rate / MB:.3f} MB/s (throttle max "
          f"{rdk_slow.throttle_max} ms), free {rdk_fast.rate / MB:.2f} MB/s (throttle max "
          f"{rdk_fast.throttle_max} ms)"
          f"\n  Java quota'd {java_slow_rate / MB:.3f} MB/s (produce-throttle-time-avg "
          f"{js['throttle_avg']:.1f} ms, max {js['throttle_max']:.0f}), free "
          f"{java_fast_rate / MB:.2f} MB/s (avg {jf['throttle_avg']:.1f} ms)")
    assert 0.9 * MB <= rdk_slow.rate <= 1.1 * MB
    assert 0.9 * MB <= java_slow_rate <= 1.1 * MB
    assert rdk_slow.throttle_max > 0 and js["throttle_avg"] > 0
    assert rdk_fast.throttle_max == 0 and jf["throttle_max"] == 0
    assert rdk_fast.rate > 3 * MB and java_fast_rate > 3 * MB


def consume_for(bootstrap: str, topic: str, client_id: str, seconds: float,
                stop_at: int | None = None) -> tuple[int, int, float]:
    """(bytes consumed in ``seconds`` -- or until ``stop_at`` bytes --, the largest
    broker throttle librdkafka saw, the seconds it took)."""
    throttle = [0]

    def stats(text: str) -> None:
        for b in json.loads(text).get("brokers", {}).values():
            throttle[0] = max(throttle[0], int(b.get("throttle", {}).get("max", 0)))
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "client.id": client_id,
                            "group.id": f"g-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                            "auto.offset.reset": "earliest", "statistics.interval.ms": 500,
                            "stats_cb": stats})
    consumer.assign([ck.TopicPartition(topic, 0, 0)])
    started = time.monotonic()
    got, end = 0, started + seconds
    try:
        while time.monotonic() < end and (stop_at is None or got < stop_at):
            for msg in consumer.consume(100, timeout=0.2):
                if msg.error() is None:
                    got += len(msg.value() or b"")
        took = time.monotonic() - started
        consumer.poll(0.6)          # one more stats callback
    finally:
        consumer.close()
    return got, throttle[0], took


def test_fetch_quota_holds_a_consumer_and_changes_apply_live(cluster: Cluster) -> None:
    bootstrap = cluster.bootstrap
    run = uuid.uuid4().hex[:6]
    topic = f"quota-fetch-{run}"
    create_topics(bootstrap, topic)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for _ in range(1200):                          # ~12 MB
        producer.produce(topic, b"f" * RECORD)
        producer.poll(0)
    assert producer.flush(30) == 0
    slow, rate = f"consumer-slow-{run}", MB // 2
    marks = log_marks(cluster)
    configs_tool(bootstrap, "--alter", "--client", slow, "--add-config",
                 f"consumer_byte_rate={rate}")
    wait_quota_applied(cluster, marks, slow)
    total = 1200 * RECORD
    free_bytes, free_throttle, free_took = consume_for(bootstrap, topic, f"consumer-free-{run}",
                                                       20, stop_at=total)
    slow_bytes, slow_throttle, _ = consume_for(bootstrap, topic, slow, 8)
    print(f"\nfetch over 8 s, quota {rate} B/s: quota'd {slow_bytes / 8 / MB:.3f} MB/s "
          f"(throttle max {slow_throttle} ms); free: all {total / MB:.1f} MB in "
          f"{free_took:.2f} s ({free_bytes / free_took / MB:.1f} MB/s)")
    assert free_bytes >= total and free_took < 8 and free_throttle == 0
    assert 0.7 * rate * 8 <= slow_bytes <= 1.2 * rate * 9     # one window of burst at most
    assert slow_throttle > 0
    # lifted without a restart: the same client id now reads at full speed
    marks = log_marks(cluster)
    configs_tool(bootstrap, "--alter", "--client", slow, "--delete-config", "consumer_byte_rate")
    wait_quota_applied(cluster, marks, slow)
    lifted_bytes, _, lifted_took = consume_for(bootstrap, topic, slow, 20, stop_at=total)
    assert lifted_bytes >= total and lifted_took < 8


def test_java_admin_and_the_tool_see_each_others_quotas(cluster: Cluster,
                                                        java_classpath: str) -> None:
    bootstrap = cluster.bootstrap
    configs_tool(bootstrap, "--alter", "--entity-type", "users", "--entity-name", "alice",
                 "--entity-type", "clients", "--entity-default",
                 "--add-config", "request_percentage=25.5,producer_byte_rate=5000")
    res = subprocess.run(["java", "-cp", java_classpath, str(PROGRAM), "admin", bootstrap],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert res.returncode == 0, f"{res.stdout[-2000:]}\n{res.stderr[-4000:]}"
    lines = set(res.stdout.splitlines())
    assert ("QUOTA {client-id=null, user=alice} {producer_byte_rate=5000.0, "
            "request_percentage=25.5}") in lines, res.stdout
    assert "QUOTA {client-id=java-app} {producer_byte_rate=2048.0}" in lines, res.stdout
    assert "QUOTA {user=null} {consumer_byte_rate=4096.0}" in lines, res.stdout
    assert "ONE 1 {producer_byte_rate=2048.0}" in lines, res.stdout
    assert configs_tool(bootstrap, "--describe", "--entity-type", "clients",
                        "--entity-name", "java-app") == \
        "Quota configs for client-id 'java-app' are producer_byte_rate=2048.0\n"
    assert configs_tool(bootstrap, "--describe", "--entity-type", "users",
                        "--entity-default") == \
        "Quota configs for the default user-principal are consumer_byte_rate=4096.0\n"
    # the default user's fetch quota applies to every unauthenticated client: lift it so it
    # does not outlive this test
    configs_tool(bootstrap, "--alter", "--entity-type", "users", "--entity-default",
                 "--delete-config", "consumer_byte_rate")


def test_request_percentage_quota_throttles_and_mutes(cluster: Cluster) -> None:
    """0.0001% of the event loop for client id wire-test: a Metadata request costs more,
    so its response carries a throttle time (at most one window, 1 s) and the broker
    reads the next request only after it (KIP-219 muting)."""
    from tests.integration.cluster import WireClient
    bootstrap = cluster.bootstrap
    marks = log_marks(cluster)
    configs_tool(bootstrap, "--alter", "--client", "wire-test", "--add-config",
                 "request_percentage=0.0001")
    wait_quota_applied(cluster, marks, "wire-test")
    try:
        with WireClient(cluster.brokers[0].port) as wire:
            first = wire.metadata(None, version=9)
            started = time.monotonic()
            second = wire.metadata(None, version=9)
            waited = time.monotonic() - started
        print(f"\nrequest quota: throttle {first.throttle_time_ms} ms, next answer after "
              f"{waited * 1000:.0f} ms")
        assert 0 < first.throttle_time_ms <= 1000
        assert waited >= 0.9 * first.throttle_time_ms / 1000
        assert second.throttle_time_ms > 0
    finally:
        configs_tool(bootstrap, "--alter", "--client", "wire-test", "--delete-config",
                     "request_percentage")
