"""The pybroker harness inside a ``VirtualNetwork`` (tests/fault/netns.py): a real
ZooKeeper on one host (``zookeeper_in``), brokers on others (``NetBroker``: listeners
on the host's address, port 9092), and ``NetFaultCluster`` — tests/fault's
FaultCluster whose clients (``NsWireClient``, kazoo, confluent-kafka via
``in_client``) run inside the client host — so the fault campaign's pieces work
unchanged on virtual hosts."""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tests.fault.cluster_faults import FaultCluster, FaultError, harness_kazoo, wait_for
from tests.fault.netns import BROKER_PORT, VirtualNetwork
from tests.fault.zk_ensemble import ZkEnsemble
from tests.integration.cluster import REPO, BrokerProcess, BrokerStartError, WireClient

T = TypeVar("T")


class NsWireClient(WireClient):
    """tests/integration/cluster.WireClient over a connection made inside a host."""

    def __init__(self, net: VirtualNetwork, src: str, dst: str, port: int = BROKER_PORT,
                 timeout: float = 10.0) -> None:
        self.sock = net.connect(src, dst, port, timeout)
        self.sock.settimeout(timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._next_id = 1


@contextlib.contextmanager
def zookeeper_in(net: VirtualNetwork, host: str, work: Path, probe_from: str | None = None,
                 start_timeout: float = 30.0) -> Iterator[str]:
    """A real standalone ZooKeeper (tests/fault/zk_ensemble.ZkServer: broker/
    zookeeper_runner's jars and command line) in ``host``, on <its address>:2181,
    files under ``work/<host>``; ready when it answers ``ruok`` from ``probe_from``
    (default: ``host`` itself). Yields "<address>:2181"; stopped by pid (SIGTERM,
    then SIGKILL after 10 s)."""
    with ZkEnsemble(net, [host], work, probe_from=probe_from or host,
                    start_timeout=start_timeout) as ensemble:
        yield ensemble.connect


@dataclass
class NetBroker(BrokerProcess):
    """A BrokerProcess that runs in a host and listens on the host's address."""

    net: VirtualNetwork | None = field(default=None, repr=False)
    host: str = ""
    probe_from: str = "client"

    @property
    def address(self) -> str:
        assert self.net is not None
        return self.net.ip(self.host)

    @property
    def bootstrap(self) -> str:
        return f"{self.address}:{self.port}"

    def argv(self) -> list[str]:
        ov = {**self.overrides,
              "broker.id": str(self.broker_id),
              "listeners": ",".join([f"PLAINTEXT://{self.address}:{self.port}"] + [
                  f"{n}://{self.address}:{p}" for n, p in self.extra_listeners.items()]),
              "log.dirs": str(self.log_dir),
              "zookeeper.connect": self.zk_connect}
        return [sys.executable, "-m", "broker", str(self.properties),
                *itertools.chain.from_iterable(("--override", f"{k}={v}") for k, v in ov.items())]

    def spawn(self) -> None:
        assert self.net is not None
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        self._stderr = open(self.stderr_path, "ab")
        self._stderr.write(f"==== start #{self.starts} in {self.host}: "
                           f"{' '.join(self.argv())}\n".encode())
        self._stderr.flush()
        self._log_mark = self.stderr_path.stat().st_size
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
        self.proc = self.net.popen(self.host, self.argv(), cwd=REPO, stdout=self._stderr,
                                   stderr=self._stderr, env=env)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Until ApiVersions answers (from ``probe_from``) and Metadata lists us."""
        assert self.net is not None
        deadline = time.monotonic() + timeout
        last = "never connected"
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise BrokerStartError(f"broker {self.broker_id} exited with "
                                       f"{self.proc.returncode} during start-up\n{self.tail()}")
            try:
                with NsWireClient(self.net, self.probe_from, self.host, self.port, 2.0) as c:
                    md: Any = c.metadata([])
                    ids = sorted(b.node_id for b in md.brokers)
                    if self.broker_id in ids:
                        return
                    last = f"Metadata lists brokers {ids}"
            except (OSError, ValueError, AssertionError) as e:
                last = f"{type(e).__name__}: {e}"
            time.sleep(0.1)
        raise BrokerStartError(f"broker {self.broker_id} in {self.host} not ready after "
                               f"{timeout:g}s ({last})\n{self.tail()}")


class NetFaultCluster(FaultCluster):
    """tests/fault/cluster_faults.FaultCluster with broker ``i`` in ``hosts[i]``; its
    requests, and its kazoo client, go from ``client_host``. A confluent-kafka load
    (tests/fault/workload.py) runs there when built with ``in_client``:
    ``fc.in_client(lambda: LoadProducer(fc.bootstrap, ...).start())``. ``ensemble``
    is the ZooKeeper it runs against when ``virtual_cluster`` made it (None else)."""

    def __init__(self, net: VirtualNetwork, zk_connect: str, base_dir: Path,
                 hosts: Sequence[str], client_host: str = "client",
                 overrides: dict[str, str] | None = None,
                 ensemble: ZkEnsemble | None = None) -> None:
        super().__init__(zk_connect, base_dir, len(hosts), overrides)
        self.net, self.client_host, self.ensemble = net, client_host, ensemble
        self.cluster.brokers = [
            NetBroker(b.broker_id, BROKER_PORT, b.dir, b.zk_connect, b.overrides,
                      net=net, host=h, probe_from=client_host)
            for b, h in zip(self.cluster.brokers, net._check(hosts), strict=True)]

    def host_of(self, broker_id: int) -> str:
        b = self.broker(broker_id)
        assert isinstance(b, NetBroker)
        return b.host

    def in_client(self, fn: Callable[[], T]) -> T:
        return self.net.call_in(self.client_host, fn)

    def client(self, broker_id: int | None = None, timeout: float = 3.0) -> WireClient:
        cands = [self.broker(broker_id)] if broker_id is not None else self.live()
        last: Exception | None = None
        for b in cands:
            try:
                return NsWireClient(self.net, self.client_host, self.host_of(b.broker_id),
                                    b.port, timeout)
            except OSError as e:
                last = e
        raise FaultError(f"no live broker answers ({last})")

    def zk(self) -> Any:
        if self._zk is None:
            # kazoo's connection thread starts in the client host
            self._zk = self.in_client(lambda: harness_kazoo(self.cluster.zk_connect))
        return self._zk

    def restart(self, b: BrokerProcess, timeout: float = 40.0) -> None:
        self.sigcont(b)
        if b.running:
            b.stop()
        wait_for(f"/brokers/ids/{b.broker_id} gone",
                 lambda: b.broker_id not in self.zk_registered(), 30.0, 0.2)
        b.start(timeout)


def skip_reason() -> str | None:
    """Why a virtual cluster cannot run here (no namespaces, no Java 17, no
    ZooKeeper jars), or None."""
    from broker.zookeeper_runner import find_classpath, java_major
    from tests.fault.netns import unavailable_reason
    reason = unavailable_reason()
    if reason:
        return reason
    if (java_major("java") or 0) < 17:
        return "Java 17+ is needed to run ZooKeeper"
    if not find_classpath():
        return "no ZooKeeper jars (ZOOKEEPER_HOME or pyspark)"
    return None


@contextlib.contextmanager
def virtual_cluster(work: Path, brokers: Sequence[str], zk_hosts: Sequence[str] = ("zk",),
                    overrides: dict[str, str] | None = None
                    ) -> Iterator[tuple[VirtualNetwork, NetFaultCluster]]:
    """ZooKeeper on ``zk_hosts`` (one: standalone, three: a quorum; ``fc.ensemble``
    reaches the servers, files under ``work/zk/<host>``), ``brokers`` on theirs, a
    "client" host; the brokers' settings FAULT_OVERRIDES and ``overrides``; started,
    and on exit stopped and checked: no thread of the test
    left inside a host (librdkafka may take a moment to tear a closed client down),
    nothing left with the run's prefix."""
    from tests.fault.netns import leftovers
    net = VirtualNetwork([*zk_hosts, *brokers, "client"])
    lingering: list[str] = []
    try:
        with net, ZkEnsemble(net, zk_hosts, work / "zk", probe_from="client") as ensemble:
            fc = NetFaultCluster(net, ensemble.connect, work, list(brokers),
                                 overrides=overrides, ensemble=ensemble)
            try:
                fc.start()
                yield net, fc
            finally:
                fc.stop()
            with contextlib.suppress(FaultError):
                wait_for("no test thread inside a host", lambda: not net.threads_inside(), 5)
            lingering = net.threads_inside()
    finally:
        left = leftovers(net.prefix)
    assert not lingering, f"threads of the test still inside the hosts: {lingering}"
    assert not left, f"left behind: {left}"
