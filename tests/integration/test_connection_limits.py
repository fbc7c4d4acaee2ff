"""Connections as Kafka against a real broker, with stock clients (confluent-kafka)
producing and consuming throughout.

- max.connections: 5,000 connections beyond the limit wait (the broker stops
  accepting; none is closed), the clients already connected keep producing and
  consuming, and accepting resumes when connections close.
- max.connections.per.ip: 5,000 connections beyond it are each closed at once
  with Kafka's log line; the clients keep working.
- max.connection.creation.rate: a burst of new connections is accepted at the
  rate (KIP-612), not faster; the clients keep working.
- a raw socket sending thousands of Metadata and Fetch requests and never
  reading its responses stops being read: the broker's RSS stays bounded.
- a client trickling a request a byte at a time is closed by request.timeout.ms.
"""

from __future__ import annotations

import errno
import resource
import socket
import struct
import time
import uuid
from pathlib import Path

import pytest

from protocol.api_keys import ApiKey
from protocol.spec import api
from tests.integration.cluster import HOST, Cluster, MakeCluster, WireClient

pytestmark = pytest.mark.integration

confluent_kafka = pytest.importorskip("confluent_kafka")

TOPIC = "conn-limits"
MAX_CONNECTIONS = 40
BEYOND = 5000


def _raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _start(make_cluster: MakeCluster, name: str, overrides: dict[str, str]) -> Cluster:
    c = make_cluster(name, overrides={"auto.create.topics.enable": "false", **overrides})
    with WireClient(c.brokers[0].port) as w:
        assert w.create_topic(TOPIC, 1) == 0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with WireClient(c.brokers[0].port) as w:
            t = w.metadata([TOPIC]).topics[0]
        if t.error_code == 0 and t.partitions and t.partitions[0].leader_id >= 0:
            return c
        time.sleep(0.1)
    c.stop()
    raise AssertionError("no leader for the test topic")


class Clients:
    """A confluent-kafka producer and consumer, connected before the test's load."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = confluent_kafka.Producer({
            "bootstrap.servers": bootstrap, "linger.ms": 2, "message.timeout.ms": 20000})
        self.consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": f"unused-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False, "fetch.wait.max.ms": 50})
        self.consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, 0)])
        self.prefix = uuid.uuid4().hex[:8].encode() + b"-"   # the topic is shared
        self.sent = 0
        self.seen = 0

    def round(self, n: int = 200, limit: float = 15.0) -> float:
        """Produce ``n`` records and consume them back; the seconds it took."""
        started = time.monotonic()
        failed: list[object] = []
        for i in range(n):
            self.producer.produce(TOPIC, self.prefix + b"%d" % (self.sent + i), partition=0,
                                  on_delivery=lambda e, _m: failed.append(e) if e else None)
        assert self.producer.flush(limit) == 0, "records undelivered"
        assert not failed, failed[:3]
        self.sent += n
        deadline = started + limit
        while self.seen < self.sent:
            assert time.monotonic() < deadline, f"consumed {self.seen} of {self.sent}"
            for m in self.consumer.consume(1000, 0.5):
                if m.error() is None and m.value().startswith(self.prefix):
                    assert m.value() == self.prefix + b"%d" % self.seen
                    self.seen += 1
        return time.monotonic() - started

    def close(self) -> None:
        self.consumer.close()


def _open_nonblocking(port: int, count: int) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        err = s.connect_ex((HOST, port))
        assert err in (0, errno.EINPROGRESS, errno.EAGAIN), errno.errorcode.get(err, err)
        socks.append(s)
    return socks


def _closed_by_peer(s: socket.socket) -> bool | None:
    """True: EOF/reset; False: open and silent; None: not connected (yet)."""
    try:
        data = s.recv(1024)
    except BlockingIOError:
        return False
    except (ConnectionResetError, BrokenPipeError):
        return True
    except OSError as e:
        if e.errno in (errno.ENOTCONN, errno.EINPROGRESS):
            return None
        raise
    return data == b""


def _api_versions_frame(w: WireClient) -> bytes:
    _, payload = w.request_bytes(ApiKey.API_VERSIONS, 3, api(ApiKey.API_VERSIONS).request.new(
        client_software_name="flood", client_software_version="1"))
    return struct.pack(">i", len(payload)) + payload


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def limited(make_cluster: MakeCluster) -> Cluster:
    """max.connections and a short request.timeout.ms."""
    _raise_fd_limit()
    return _start(make_cluster, "max-connections", {
        "max.connections": str(MAX_CONNECTIONS), "request.timeout.ms": "1500"})


def test_connections_beyond_max_connections_wait_and_clients_keep_working(
        limited: Cluster) -> None:
    port = limited.brokers[0].port
    clients = Clients(limited.bootstrap)
    try:
        clients.round()
        with WireClient(port) as w:          # (a connection to build a frame with)
            frame = _api_versions_frame(w)
        flood = _open_nonblocking(port, MAX_CONNECTIONS + BEYOND)
        time.sleep(1.5)
        clients.round()                      # unaffected by 5,000 connections beyond
        statuses = [_closed_by_peer(s) for s in flood]
        assert statuses.count(True) == 0, "the broker closed connections over the limit"
        # one connection in the backlog: its request waits until others close
        waiting = flood[MAX_CONNECTIONS + 20]
        waiting.setblocking(True)
        waiting.sendall(frame)
        waiting.settimeout(1.0)
        with pytest.raises(socket.timeout):
            waiting.recv(4)                             # not accepted: no answer
        clients.round()
        for s in flood:
            if s is not waiting:
                s.close()
        waiting.settimeout(20)
        assert len(waiting.recv(4)) == 4                # accepted once there was room
        waiting.close()
        clients.round()
        log = limited.brokers[0].log_text()
        assert "Traceback" not in log
    finally:
        clients.close()


def test_a_client_that_never_reads_stays_bounded(limited: Cluster) -> None:
    """Thousands of Metadata and Fetch requests, responses never read: the broker
    stops reading that socket and its RSS stays bounded; others are served."""
    broker = limited.brokers[0]
    assert broker.pid is not None
    clients = Clients(limited.bootstrap)
    try:
        clients.round(2000)                  # data for the fetches to return
        rss_before = _rss_kib(broker.pid)
        sock = socket.create_connection((HOST, broker.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        w = WireClient.__new__(WireClient)
        w._next_id = 1
        md = api(ApiKey.METADATA).request
        freq = api(ApiKey.FETCH).request
        fp = freq.structs["FetchPartition"].new(partition=0, fetch_offset=0,
                                                partition_max_bytes=1 << 20)
        fetch = freq.new(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                         isolation_level=0, topics=[freq.structs["FetchTopic"].new(
                             topic=TOPIC, partitions=[fp])])
        chunk = b""
        for i in range(500):
            if i % 2:
                _, p = w.request_bytes(ApiKey.METADATA, 1, md.new(topics=None))
            else:
                _, p = w.request_bytes(ApiKey.FETCH, 4, fetch)
            chunk += struct.pack(">i", len(p)) + p
        sock.setblocking(False)
        sent = requests = 0
        peak = rss_before
        started = time.monotonic()
        last_progress = started
        while time.monotonic() - last_progress < 2.0 and time.monotonic() - started < 15:
            try:
                n = sock.send(chunk)
                sent += n
                requests += 500 * n // len(chunk)
                last_progress = time.monotonic()
            except BlockingIOError:
                time.sleep(0.05)
            peak = max(peak, _rss_kib(broker.pid))
        assert requests >= 2000, requests           # thousands sent before the stall
        clients.round()                              # others served meanwhile
        peak = max(peak, _rss_kib(broker.pid))
        grown_mib = (peak - rss_before) / 1024
        print(f"never-reading client: {requests} requests ({sent / 1e6:.1f} MB) accepted by "
              f"the kernel before the stall; broker RSS {rss_before / 1024:.0f} MiB -> peak "
              f"{peak / 1024:.0f} MiB (+{grown_mib:.1f} MiB)")
        assert grown_mib < 64, grown_mib
        sock.close()
    finally:
        clients.close()


def test_a_trickling_client_is_closed_by_the_request_timeout(limited: Cluster) -> None:
    port = limited.brokers[0].port
    with WireClient(port) as slow:
        frame = _api_versions_frame(slow)
        started = time.monotonic()
        closed = False
        for byte in frame:
            try:
                slow.send_raw(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            if slow.is_closed_by_peer(wait=0.25):
                closed = True
                break
        took = time.monotonic() - started
    assert closed and 1.4 <= took < 5, (closed, took)   # request.timeout.ms=1500
    assert "still incomplete" in limited.brokers[0].log_text()
    with WireClient(port) as w:
        assert w.api_versions().error_code == 0


def test_per_ip_limit_closes_5000_connections_and_clients_keep_working(
        make_cluster: MakeCluster) -> None:
    _raise_fd_limit()
    c = _start(make_cluster, "per-ip", {"max.connections.per.ip": "30"})
    clients = Clients(c.bootstrap)
    try:
        clients.round()
        flood: list[socket.socket] = []
        for _ in range(10):                       # in waves, so that the test keeps its fds
            wave = _open_nonblocking(c.brokers[0].port, 30 + BEYOND // 10)
            time.sleep(0.3)
            flood += wave
            clients.round(50)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            closed = sum(1 for s in flood if _closed_by_peer(s))
            if closed >= BEYOND:
                break
            time.sleep(0.2)
        assert closed >= BEYOND, closed
        clients.round()
        for s in flood:
            s.close()
        log = c.brokers[0].log_text()
        assert log.count("Rejected connection from 127.0.0.1, address already has the "
                         "configured maximum of 30 connections.") >= BEYOND
    finally:
        clients.close()
        c.stop()


def test_creation_rate_spreads_a_burst_and_clients_keep_working(
        make_cluster: MakeCluster) -> None:
    """100 connections/s over 2 one-second samples: about 100 are taken at once,
    then 100 a second; a burst of 400 takes about 3 s to be served."""
    c = _start(make_cluster, "rate", {
        "max.connection.creation.rate": "100", "quota.window.num": "2"})
    clients = Clients(c.bootstrap)
    try:
        clients.round()
        time.sleep(2.1)                                  # a quiet rate window
        with WireClient(c.brokers[0].port) as w:
            frame = _api_versions_frame(w)
        started = time.monotonic()
        burst = _open_nonblocking(c.brokers[0].port, 400)
        answered: set[int] = set()
        sent: set[int] = set()
        round_times = []
        while len(answered) < len(burst) and time.monotonic() - started < 20:
            for i, s in enumerate(burst):
                if i in answered:
                    continue
                try:
                    if i not in sent:
                        s.send(frame)
                        sent.add(i)
                    if s.recv(4096):
                        answered.add(i)
                except (BlockingIOError, OSError):
                    pass
            round_times.append(clients.round(20))
        took = time.monotonic() - started
        assert len(answered) == len(burst)
        assert 2.0 <= took < 12, took                  # held to the rate, not instant
        assert max(round_times) < 5, round_times       # clients unaffected meanwhile
        for s in burst:
            s.close()
    finally:
        clients.close()
        c.stop()
