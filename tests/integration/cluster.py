"""Test harness: real broker processes on 127.0.0.1 against a real ZooKeeper.

    cluster = Cluster(zk_connect="127.0.0.1:2181", base_dir=tmp_path, size=1)
    cluster.start()                 # every broker answers ApiVersions and is in Metadata
    cluster.bootstrap               # "127.0.0.1:p1,127.0.0.1:p2"
    cluster.kill9(cluster.brokers[0]); cluster.restart(cluster.brokers[0])
    cluster.stop()                  # SIGTERM, then SIGKILL after a timeout

Each broker is ``sys.executable -m broker config/server.properties --override ...``
with its own port (kept across restarts so clients reconnect), its own log dir
and its stderr appended to ``<base_dir>/broker-<id>/stderr.log``. When a broker
fails to come up, the exception carries the tail of that file.

Each cluster gets its own ZooKeeper chroot (``<zk>/pybroker-<random>``) so that
clusters of different test modules sharing one ZooKeeper never see each other's
broker ids, topics or controller.

``WireClient`` is a small blocking Kafka-protocol client over one socket, built
on ``protocol/`` only: the harness uses it for its readiness probe and the
bad-input tests use it to send exactly the bytes they mean.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from protocol import codec
from protocol.api_keys import ApiKey
from protocol.headers import RequestHeader, decode_response, encode_request_header
from protocol.schema import Struct
from protocol.spec import api
from tests.integration.zookeeper import free_port

REPO = Path(__file__).resolve().parents[2]
SERVER_PROPERTIES = REPO / "config" / "server.properties"
HOST = "127.0.0.1"

# What every test broker runs with, on top of config/server.properties.
# A short ZooKeeper session so a kill -9'd broker's ephemeral znode goes quickly.
DEFAULT_OVERRIDES: dict[str, str] = {
    "zookeeper.session.timeout.ms": "6000",
    "zookeeper.connection.timeout.ms": "10000",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "log.level": "INFO",
}

CLEAN_SHUTDOWN_SKIP_LINE = "recovery skipped: clean shutdown"


class BrokerStartError(RuntimeError):
    pass


# --------------------------------------------------------------------------------------
# A blocking wire client


class WireClient:
    """One blocking connection: send frames (well formed or not), read responses."""

    def __init__(self, port: int, host: str = HOST, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._next_id = 1

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- raw ---------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def _recv_exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionResetError(f"EOF after {len(out)} of {n} bytes")
            out += chunk
        return bytes(out)

    def recv_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._recv_exact(4))
        return self._recv_exact(size)

    def is_closed_by_peer(self, wait: float = 5.0) -> bool:
        """True when the broker closes the connection within ``wait`` seconds
        (EOF or reset); False if it stays open and silent. Data read is an error."""
        self.sock.settimeout(wait)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True
        if data:
            raise AssertionError(f"expected the broker to close, got {len(data)} bytes: "
                                 f"{data[:64]!r}")
        return True

    # -- well formed -------------------------------------------------------------------

    def header_bytes(self, api_key: int, version: int, client_id: str | None = "wire-test"
                     ) -> tuple[int, bytes]:
        cid = self._next_id
        self._next_id += 1
        return cid, bytes(encode_request_header(RequestHeader(api_key, version, cid, client_id)))

    def request_bytes(self, api_key: int, version: int, body: Struct) -> tuple[int, bytes]:
        cid, head = self.header_bytes(api_key, version)
        return cid, head + codec.encode(body, version)

    def request(self, api_key: int, version: int, body: Struct | None = None, **fields: Any
                ) -> Struct:
        """Send one request (body built from ``fields`` when not given) and decode
        its response; asserts the correlation id matches."""
        if body is None:
            body = api(api_key).request.new(**fields)
        cid, payload = self.request_bytes(api_key, version, body)
        self.send_frame(payload)
        frame = self.recv_frame()
        got_cid, resp = decode_response(api_key, version, frame)
        assert got_cid == cid, f"correlation id {got_cid}, expected {cid}"
        return resp

    def api_versions(self, version: int = 3) -> Struct:
        return self.request(ApiKey.API_VERSIONS, version, client_software_name="wire-test",
                            client_software_version="1")

    def metadata(self, topics: list[str] | None, version: int = 1) -> Struct:
        req = api(ApiKey.METADATA).request
        ts = None if topics is None else [req.structs["MetadataRequestTopic"].new(name=t)
                                          for t in topics]
        return self.request(ApiKey.METADATA, version, req.new(
            topics=ts, allow_auto_topic_creation=False))


    def create_topic(self, name: str, partitions: int = 1, version: int = 5,
                     configs: dict[str, str] | None = None) -> int:
        """CreateTopics; -> the topic's error code (0 = created)."""
        req = api(ApiKey.CREATE_TOPICS).request
        cfg = [req.structs["CreatableTopicConfig"].new(name=k, value=v)
               for k, v in (configs or {}).items()]
        topic = req.structs["CreatableTopic"].new(name=name, num_partitions=partitions,
                                                  replication_factor=1, configs=cfg)
        resp = self.request(ApiKey.CREATE_TOPICS, version, req.new(topics=[topic],
                                                                     timeout_ms=20000))
        return int(resp.topics[0].error_code)

    def produce(self, topic: str, partition: int, records: bytes | bytearray,
                version: int = 8, acks: int = 1) -> Struct:
        """One Produce with one partition's records; -> that partition's response."""
        req = api(ApiKey.PRODUCE).request
        pd = req.structs["PartitionProduceData"].new(index=partition, records=bytes(records))
        td = req.structs["TopicProduceData"].new(name=topic, partition_data=[pd])
        resp = self.request(ApiKey.PRODUCE, version, req.new(acks=acks, timeout_ms=10000,
                                                             topic_data=[td]))
        return resp.responses[0].partition_responses[0]

    def list_offset(self, topic: str, partition: int, timestamp: int = -1,
                    version: int = 5) -> tuple[int, int]:
        """ListOffsets (-1 latest, -2 earliest, or a timestamp) -> (error, offset)."""
        req = api(ApiKey.LIST_OFFSETS).request
        lp = req.structs["ListOffsetsPartition"].new(partition_index=partition,
                                                     timestamp=timestamp)
        lt = req.structs["ListOffsetsTopic"].new(name=topic, partitions=[lp])
        resp = self.request(ApiKey.LIST_OFFSETS, version, req.new(replica_id=-1,
                                                                  topics=[lt]))
        pr = resp.topics[0].partitions[0]
        return int(pr.error_code), int(pr.offset)

    def fetch_batches(self, topic: str, partition: int, offset: int, version: int = 4,
                      max_bytes: int = 8 << 20) -> tuple[int, int, bytes]:
        """One Fetch v4 (no topic ids) -> (error, high watermark, records bytes)."""
        req = api(ApiKey.FETCH).request
        fp = req.structs["FetchPartition"].new(partition=partition, fetch_offset=offset,
                                               partition_max_bytes=max_bytes)
        ft = req.structs["FetchTopic"].new(topic=topic, partitions=[fp])
        resp = self.request(ApiKey.FETCH, version, req.new(
            replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes,
            isolation_level=0, topics=[ft]))
        pr = resp.responses[0].partitions[0]
        return int(pr.error_code), int(pr.high_watermark), bytes(pr.records or b"")


# --------------------------------------------------------------------------------------
# Broker processes


@dataclass
class BrokerProcess:
    broker_id: int
    port: int
    dir: Path
    zk_connect: str
    overrides: dict[str, str]
    properties: Path = SERVER_PROPERTIES
    proc: subprocess.Popen[bytes] | None = None
    # more listeners beside PLAINTEXT (which the readiness probe uses): name -> port
    extra_listeners: dict[str, int] = field(default_factory=dict)
    starts: int = 0
    _log_mark: int = 0           # stderr.log size when the current run started
    _stderr: Any = field(default=None, repr=False)

    @property
    def log_dir(self) -> Path:
        return self.dir / "logs"

    @property
    def stderr_path(self) -> Path:
        return self.dir / "stderr.log"

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def argv(self) -> list[str]:
        ov = {**self.overrides,
              "broker.id": str(self.broker_id),
              "listeners": ",".join([f"PLAINTEXT://{HOST}:{self.port}"] + [
                  f"{name}://{HOST}:{port}" for name, port in self.extra_listeners.items()]),
              "log.dirs": str(self.log_dir),
              "zookeeper.connect": self.zk_connect}
        args = [sys.executable, "-m", "broker", str(self.properties)]
        for k, v in ov.items():
            args += ["--override", f"{k}={v}"]
        return args

    # -- lifecycle -------------------------------------------------------------------

    def spawn(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(exist_ok=True)
        self.starts += 1
        self._stderr = open(self.stderr_path, "ab")
        self._stderr.write(f"==== start #{self.starts}: {' '.join(self.argv())}\n".encode())
        self._stderr.flush()
        self._log_mark = self.stderr_path.stat().st_size
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(self.argv(), cwd=REPO, stdin=subprocess.DEVNULL,
                                     stdout=self._stderr, stderr=self._stderr, env=env)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Until the port answers ApiVersions and Metadata lists this broker."""
        deadline = time.monotonic() + timeout
        last: str = "never connected"
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise BrokerStartError(f"broker {self.broker_id} exited with "
                                       f"{self.proc.returncode} during start-up\n{self.tail()}")
            try:
                with WireClient(self.port, timeout=2.0) as c:
                    av = c.api_versions()
                    if av.error_code != 0:
                        last = f"ApiVersions error {av.error_code}"
                    else:
                        md = c.metadata([])
                        ids = sorted(b.node_id for b in md.brokers)
                        if self.broker_id in ids:
                            return
                        last = f"Metadata lists brokers {ids}"
            except (OSError, ValueError, AssertionError) as e:
                last = f"{type(e).__name__}: {e}"
            time.sleep(0.1)
        raise BrokerStartError(f"broker {self.broker_id} on port {self.port} not ready "
                               f"after {timeout:g}s ({last})\n{self.tail()}")

    def start(self, timeout: float = 30.0) -> None:
        self.spawn()
        self.wait_ready(timeout)

    def stop(self, timeout: float = 20.0, *, already_signalled: bool = False) -> int | None:
        """SIGTERM (unless the caller already sent it), wait up to ``timeout`` s,
        then SIGKILL. -> exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            if not already_signalled:
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self._reaped()

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reaped()

    def _reaped(self) -> int | None:
        assert self.proc is not None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        return self.proc.returncode

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- logs -----------------------------------------------------------------------

    def log_text(self, current_run_only: bool = True) -> str:
        """The broker's stderr (only the current/last run by default)."""
        try:
            data = self.stderr_path.read_bytes()
        except FileNotFoundError:
            return ""
        return data[self._log_mark if current_run_only else 0:].decode("utf-8", "replace")

    def tail(self, lines: int = 60) -> str:
        text = self.log_text(current_run_only=False).splitlines()[-lines:]
        return f"---- tail of {self.stderr_path} ----\n" + "\n".join(text)


class Cluster:
    """N brokers sharing one ZooKeeper chroot; see the module docstring."""

    def __init__(self, zk_connect: str, base_dir: Path | str, size: int = 1, *,
                 overrides: dict[str, str] | None = None, chroot: str | None = None,
                 first_id: int = 0, listeners: tuple[str, ...] = ()) -> None:
        """``listeners``: names of listeners each broker opens beside PLAINTEXT, each
        on a port of its own (``BrokerProcess.extra_listeners``); their protocols and
        security settings come from ``overrides``."""
        self.zk_hosts = zk_connect.split("/", 1)[0]
        self.chroot = chroot or f"/pybroker-{uuid.uuid4().hex[:10]}"
        self.zk_connect = self.zk_hosts + self.chroot
        self.base_dir = Path(base_dir)
        ov = {**DEFAULT_OVERRIDES, **(overrides or {})}
        self.brokers = [BrokerProcess(first_id + i, free_port(), self.base_dir / f"broker-{first_id + i}",
                                      self.zk_connect, ov,
                                      extra_listeners={n: free_port() for n in listeners})
                        for i in range(size)]

    def bootstrap_on(self, listener: str) -> str:
        """host:port of every broker's ``listener``."""
        return ",".join(f"{HOST}:{b.extra_listeners[listener]}" for b in self.brokers)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def broker(self, broker_id: int) -> BrokerProcess:
        return next(b for b in self.brokers if b.broker_id == broker_id)

    def start(self, timeout: float = 40.0) -> Cluster:
        for b in self.brokers:
            b.spawn()
        try:
            for b in self.brokers:
                try:
                    b.wait_ready(timeout)
                except BrokerStartError as e:
                    # free_port() only found the port free: something else may bind it before
                    # the broker does. On a first start nobody knows the ports yet: new ones.
                    if b.starts != 1 or "Address already in use" not in str(e):
                        raise
                    b.port = free_port()
                    b.extra_listeners = {n: free_port() for n in b.extra_listeners}
                    b.spawn()
                    b.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        # SIGTERM every broker first so they shut down in parallel; exactly once each
        # (a second SIGTERM makes a broker exit without a clean shutdown)
        for b in self.brokers:
            if b.running:
                b.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
        for b in self.brokers:
            b.stop(already_signalled=True)

    def kill9(self, broker: BrokerProcess) -> None:
        broker.kill9()

    def restart(self, broker: BrokerProcess, timeout: float = 40.0) -> None:
        """Stop (SIGTERM) if running, wait until ZooKeeper forgot its old session's
        ephemeral /brokers/ids/<id> (after a kill -9 that takes the session
        timeout), then start it again and wait until it is ready."""
        if broker.running:
            broker.stop()
        self.wait_broker_unregistered(broker.broker_id)
        broker.start(timeout)

    def wait_broker_unregistered(self, broker_id: int, timeout: float = 30.0) -> None:
        from kazoo.client import KazooClient  # test-side only; the broker uses controller/zk.py

        zk = KazooClient(hosts=self.zk_connect, timeout=10)
        zk.start(timeout=10)
        try:
            deadline = time.monotonic() + timeout
            while zk.exists(f"/brokers/ids/{broker_id}") is not None:
                if time.monotonic() > deadline:
                    raise BrokerStartError(f"/brokers/ids/{broker_id} still registered after "
                                           f"{timeout:g}s")
                time.sleep(0.2)
        finally:
            zk.stop()
            zk.close()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class MakeCluster(Protocol):
    """The integration tests' cluster factory, the ``make_cluster`` fixture of
    tests/integration/conftest.py: ``make_cluster(name, size, overrides={...})`` builds a
    ``Cluster`` on the module's ZooKeeper in a fresh directory ``mktemp(name)``, starts it
    (unless ``start=False``: the caller adjusts the brokers, then calls ``start`` itself)
    and returns it; the fixture stops every cluster it made when the module ends.
    ``cluster_kwargs``: Cluster's keywords (overrides, chroot, first_id, listeners)."""

    def __call__(self, name: str, size: int = 1, *, start: bool = True,
                 timeout: float = 40.0, **cluster_kwargs: Any) -> Cluster: ...
