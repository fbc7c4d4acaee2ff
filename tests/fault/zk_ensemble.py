"""Real ZooKeeper servers on virtual hosts (tests/fault/netns.py), and the ZooKeeper
faults of issue 16 item 2: a server killed, paused, partitioned away; one broker's
session forced to expire.

    with VirtualNetwork(["zk1", "zk2", "zk3", "b0", "client"]) as net:
        with ZkEnsemble(net, ["zk1", "zk2", "zk3"], work / "zk") as ens:
            ens.connect                     # "10.213.N.10:2181,10.213.N.11:2181,..."
            ens.server(ens.leader()).kill() # SIGKILL; .start() later, same data dir
            ens.wait_quorum(30)

One host -> a standalone server (``ZooKeeperServerMain``, as broker/zookeeper_runner
runs it); three or more -> a real quorum (``QuorumPeerMain``; in zoo.cfg
``server.<N>=<ip>:2888:3888`` for the N-th host, ``myid`` N in its data dir). Either
way: clientPort 2181 on the host's address, tickTime 500 ms (so ZooKeeper's session
expiry, done on tick boundaries, is at most half a second late), minSessionTimeout
1000 ms (the brokers ask for FAULT_OVERRIDES' 4000 ms), four-letter words ruok, srvr,
mntr and cons (who is connected), asked from ``probe_from``. Each server's files are
in ``work/<host>``: zoo.cfg, data/ (snapshots, transaction log, myid: kept across
restarts, so sessions survive a restart as ZooKeeper persists them) and zk.out (stdout
and stderr of every run, each run opened by a "==== start #k" line).

Processes are started with ``net.popen`` (``ip netns exec`` execs, so the pid is the
JVM's own) and stopped by that pid: SIGCONT first if paused, SIGTERM, SIGKILL after a
timeout. A paused server keeps its sockets: connects to it still complete (the kernel
accepts them) but nothing is answered.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from broker.zookeeper_runner import MAIN_CLASS, build_command, write_zoo_cfg
from tests.fault.cluster_faults import ZK_CALL_TIMEOUT, FaultError, wait_for
from tests.fault.netns import ZK_PORT, VirtualNetwork

if TYPE_CHECKING:
    from tests.fault.netns_cluster import NetFaultCluster

QUORUM_MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
QUORUM_PORT = 2888           # followers -> leader
ELECTION_PORT = 3888         # leader election, every server to every server
TICK_MS = 500
MODES = ("leader", "follower", "standalone")

# The JVM shares two CPUs with the brokers: C1 only and the serial collector start it
# faster and keep it small. A server that looks for a leader (after losing it, or
# partitioned away) sends its votes again after 200 ms, doubling each round up to
# this cap (ZooKeeper's default is 60 s): a healed server rejoins within 2 s.
_JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
              "-Dzookeeper.fastleader.maxNotificationInterval=2000")

_SID = re.compile(r"\bsid=0x([0-9a-f]+)")
_LOG4J2 = ("status = error\nappender.console.type = Console\n"
           "appender.console.name = console\nappender.console.layout.type = PatternLayout\n"
           "appender.console.layout.pattern = [%d] %p %m (%c{1})%n\n"
           "rootLogger.level = {level}\nrootLogger.appenderRef.console.ref = console\n")


def four_letter(net: VirtualNetwork, src: str, host: str, word: str,
                timeout: float = 1.0) -> str | None:
    """Send a four-letter word to ``host``:2181 from ``src``; -> the whole answer
    (the server closes the connection after it), or None if it did not answer."""
    try:
        with net.connect(src, host, ZK_PORT, timeout) as s:
            s.settimeout(timeout)
            s.sendall(word.encode())
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks).decode("utf-8", "replace") or None


# --------------------------------------------------------------------------------------
# one server


class ZkServer:
    """One ZooKeeper server in ``host``; ``peers`` are the ensemble's hosts in myid
    order (empty or just ``host``: standalone). Not started by the constructor."""

    def __init__(self, net: VirtualNetwork, host: str, work: Path,
                 peers: Sequence[str] = (), probe_from: str | None = None,
                 log_level: str = "WARN") -> None:
        self.net, self.host, self.work = net, host, work
        self.peers = list(peers) if len(peers) > 1 else []
        self.myid = self.peers.index(host) + 1 if self.peers else 0
        self.probe_from = probe_from or host
        self.log_level = log_level
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False
        self.starts = 0

    # -- names -----------------------------------------------------------------------

    @property
    def address(self) -> str:
        return f"{self.net.ip(self.host)}:{ZK_PORT}"

    @property
    def data_dir(self) -> Path:
        return self.work / "data"

    @property
    def out_path(self) -> Path:
        return self.work / "zk.out"

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    @property
    def running(self) -> bool:
        """The process is alive (paused included)."""
        return self.proc is not None and self.proc.poll() is None

    def config(self) -> dict[str, str]:
        cfg = {"dataDir": str(self.data_dir), "clientPort": str(ZK_PORT),
               "clientPortAddress": self.net.ip(self.host), "tickTime": str(TICK_MS),
               "maxClientCnxns": "0", "admin.enableServer": "false",
               "4lw.commands.whitelist": "ruok,srvr,mntr,cons", "minSessionTimeout": "1000"}
        if self.peers:
            # a follower has initLimit ticks to sync with a new leader, and is dropped
            # after syncLimit ticks without hearing from it
            cfg.update({"initLimit": "10", "syncLimit": "4"})
            for i, h in enumerate(self.peers, 1):
                cfg[f"server.{i}"] = f"{self.net.ip(h)}:{QUORUM_PORT}:{ELECTION_PORT}"
        return cfg

    def argv(self) -> list[str]:
        cfg, log_cfg = self.work / "zoo.cfg", self.work / "log4j2.properties"
        argv = build_command(cfg, log_cfg, shutil.which("java") or "java")
        argv[argv.index(MAIN_CLASS)] = QUORUM_MAIN_CLASS if self.peers else MAIN_CLASS
        return [argv[0], *_JVM_FLAGS, *argv[1:]]

    # -- lifecycle -------------------------------------------------------------------

    def start(self, wait: bool = True, timeout: float = 30.0) -> ZkServer:
        """Start the server (its data dir as the last run left it); with ``wait``
        until it answers ``ruok`` (a quorum member may not serve yet: see
        ZkEnsemble.wait_quorum)."""
        assert not self.running, f"ZooKeeper in {self.host} is already running"
        self.work.mkdir(parents=True, exist_ok=True)
        write_zoo_cfg(self.config(), self.work / "zoo.cfg")      # creates data/
        if self.myid:
            (self.data_dir / "myid").write_text(f"{self.myid}\n")
        (self.work / "log4j2.properties").write_text(_LOG4J2.replace("{level}",
                                                                     self.log_level))
        self.starts += 1
        with open(self.out_path, "ab") as out:
            out.write(f"==== start #{self.starts} in {self.host}\n".encode())
            out.flush()
            self.proc = self.net.popen(self.host, self.argv(), stdout=out,
                                       stderr=subprocess.STDOUT)
        self.paused = False
        if wait:
            self.wait_answering(timeout)
        return self

    def wait_answering(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.ruok():
            if not self.running or time.monotonic() > deadline:
                raise FaultError(f"ZooKeeper in {self.host} did not start "
                                 f"(pid {self.pid}):\n{self.tail()}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL (a paused server dies too)."""
        if self.running:
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait(10)
        self.paused = False

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (after SIGCONT if paused), SIGKILL after ``timeout`` s; -> exit code."""
        if self.proc is None:
            return None
        if self.running:
            self.resume()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.paused = False
        return self.proc.returncode

    def pause(self) -> None:
        """SIGSTOP: sockets stay open, nothing is answered, no session is expired."""
        assert self.running and self.pid is not None, f"ZooKeeper in {self.host} is not running"
        os.kill(self.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        """SIGCONT. ZooKeeper's session clock is wall time: sessions whose timeout
        passed while it was paused are expired at once."""
        if self.paused and self.running and self.pid is not None:
            os.kill(self.pid, signal.SIGCONT)
        self.paused = False

    # -- state -----------------------------------------------------------------------

    def ruok(self) -> bool:
        return four_letter(self.net, self.probe_from, self.host, "ruok", 0.5) == "imok"

    def mode(self) -> str | None:
        """"leader" | "follower" | "standalone" from ``srvr``; None when the server
        does not answer or does not serve (a quorum member looking for a leader)."""
        out = four_letter(self.net, self.probe_from, self.host, "srvr")
        for line in (out or "").splitlines():
            if line.startswith("Mode:"):
                mode = line.split(":", 1)[1].strip()
                return mode if mode in MODES else None
        return None

    def mntr(self) -> dict[str, str]:
        """``mntr``'s key/value lines (zk_server_state, zk_num_alive_connections, ...);
        empty when the server does not answer."""
        out = four_letter(self.net, self.probe_from, self.host, "mntr") or ""
        return dict(ln.split("\t", 1) for ln in out.splitlines() if "\t" in ln)

    def sessions(self) -> set[int]:
        """Ids of the sessions connected to this server now (``cons``); empty when it
        does not answer. A session ZooKeeper still holds but whose client has not
        reconnected yet is in no server's set."""
        out = four_letter(self.net, self.probe_from, self.host, "cons") or ""
        return {int(m, 16) for m in _SID.findall(out)}

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.out_path.read_text(errors="replace").splitlines()[-lines:]
        except FileNotFoundError:
            text = []
        return f"---- tail of {self.out_path} ----\n" + "\n".join(text)


# --------------------------------------------------------------------------------------
# the ensemble


class ZkEnsemble:
    """A ZooKeeper server on each of ``hosts`` (one: standalone; three or more: a
    quorum), files under ``work/<host>``, probed from ``probe_from``. As a context
    manager: started and waited for (``wait_quorum``) on entry, every server stopped
    by pid on exit."""

    def __init__(self, net: VirtualNetwork, hosts: Sequence[str], work: Path,
                 probe_from: str = "client", start_timeout: float = 60.0,
                 log_level: str = "WARN") -> None:
        hosts = list(hosts)
        if not hosts or len(hosts) == 2 or len(set(hosts)) != len(hosts):
            raise ValueError(f"an ensemble is one server or three or more, not {hosts}")
        self.net, self.hosts, self.work = net, hosts, work
        self.start_timeout = start_timeout
        self.servers = [ZkServer(net, h, work / h, hosts, probe_from, log_level)
                        for h in hosts]

    @property
    def connect(self) -> str:
        """ZooKeeper's connect string: "ip1:2181,ip2:2181,..." (no chroot)."""
        return ",".join(s.address for s in self.servers)

    @property
    def standalone(self) -> bool:
        return len(self.servers) == 1

    def server(self, host: str) -> ZkServer:
        for s in self.servers:
            if s.host == host:
                return s
        raise KeyError(f"no ZooKeeper server in {host!r} (have {self.hosts})")

    def __enter__(self) -> ZkEnsemble:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> ZkEnsemble:
        """Start every server (in parallel), then wait for the quorum."""
        try:
            for s in self.servers:
                s.start(wait=False)
            for s in self.servers:
                s.wait_answering(self.start_timeout)
            self.wait_quorum(self.start_timeout)
        except BaseException:
            self.close()
            raise
        return self

    def close(self, timeout: float = 10.0) -> None:
        """Stop every server by pid: SIGCONT the paused, SIGTERM all, SIGKILL after
        ``timeout`` s what is left."""
        for s in self.servers:
            if s.running:
                s.resume()
                assert s.proc is not None
                s.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for s in self.servers:
            if s.proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    s.proc.wait(max(0.1, deadline - time.monotonic()))
                s.kill()

    def modes(self) -> dict[str, str | None]:
        """host -> mode of every running, unpaused server."""
        return {s.host: s.mode() for s in self.servers if s.running and not s.paused}

    def sessions(self) -> set[int]:
        """Ids of the sessions connected to any running, unpaused server."""
        return set().union(*(s.sessions() for s in self.servers
                             if s.running and not s.paused))

    def leader(self) -> str | None:
        """The host whose server says it leads (a standalone server leads itself)."""
        for host, mode in self.modes().items():
            if mode in ("leader", "standalone"):
                return host
        return None

    def wait_quorum(self, timeout: float = 30.0) -> str:
        """Until every running (unpaused) server serves and one of them leads (or the
        standalone server serves); -> the leader's host."""
        def settled() -> str | None:
            modes = self.modes()
            leaders = [h for h, m in modes.items() if m in ("leader", "standalone")]
            if modes and None not in modes.values() and len(leaders) == 1:
                return leaders[0]
            return None
        try:
            return wait_for("a ZooKeeper quorum", settled, timeout, 0.2)
        except FaultError as e:
            tails = "\n".join(s.tail(15) for s in self.servers)
            raise FaultError(f"{e}; modes {self.modes()}\n{tails}") from None


# --------------------------------------------------------------------------------------
# forced session expiry


class Expiry(NamedTuple):
    cut: float          # monotonic times: the broker cut off from ZooKeeper,
    expired: float      # its /brokers/ids/<id> seen gone (from the client host),
    healed: float       # the cut healed


def zk_hosts_of(net: VirtualNetwork, fc: NetFaultCluster) -> list[str]:
    """The hosts of ``fc``'s ZooKeeper servers (its ensemble's, or else the hosts whose
    addresses its connect string names)."""
    ensemble = getattr(fc, "ensemble", None)
    if ensemble is not None:
        return list(ensemble.hosts)
    ips = {hp.rsplit(":", 1)[0] for hp in fc.cluster.zk_hosts.split(",")}
    return [h for h in net.hosts if net.ip(h) in ips]


def expire_session(net: VirtualNetwork, fc: NetFaultCluster, broker_id: int,
                   timeout: float = 30.0) -> Expiry:
    """Make ZooKeeper expire ``broker_id``'s session, and let the broker find out.

    How: partition the broker's host from every ZooKeeper host, both ways (nothing
    else: the other brokers and the clients still reach it), until ZooKeeper has
    expired the session -- the broker's ephemeral /brokers/ids/<id> is gone, as seen
    from the client host -- then heal that partition. The broker's client reconnects
    (after its own backoff) and is told SESSION_EXPIRED; it must open a new session
    and register again by itself.

    Why this way: a session can only be expired from outside by a client that holds
    its id *and* password (open a second connection with both, then close it), and
    the broker's password never leaves its process. To the broker the two are the
    same thing: it hears nothing from ZooKeeper until it reconnects and is told its
    session expired; to the rest of the cluster too: the ephemerals go (and
    /controller with them if it was the controller), watches fire, the controller
    moves the broker's leaderships. ZooKeeper's own expiry of a broker that is alive
    but cut off is exactly this.

    -> the times of the cut, of the expiry seen, and of the heal (``time.monotonic``).
    FaultError (after healing) if the registration outlives ``timeout`` seconds."""
    path = f"/brokers/ids/{broker_id}"
    fault = net.partition([fc.host_of(broker_id)], zk_hosts_of(net, fc))
    cut = time.monotonic()
    try:
        # exists() raises while the test's own client is reconnecting: wait_for retries
        wait_for(f"ZooKeeper to expire broker {broker_id}'s session",
                 lambda: fc.zk().exists_async(path).get(timeout=ZK_CALL_TIMEOUT) is None,
                 timeout, 0.1)
        expired = time.monotonic()
    finally:
        fault.heal()
    return Expiry(cut, expired, time.monotonic())


__all__ = ["ELECTION_PORT", "Expiry", "QUORUM_PORT", "TICK_MS", "ZkEnsemble", "ZkServer",
           "expire_session", "four_letter", "zk_hosts_of"]
