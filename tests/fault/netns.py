"""A cluster on real (virtual) hosts: Linux network namespaces on one bridge, with
network faults (partitions, one-way drops, isolation, Jepsen's bridge, link down).

    with VirtualNetwork(["zk", "b0", "b1", "b2", "client"]) as net:
        with zookeeper_in(net, "zk", work / "zk", probe_from="client") as zk:   # netns_cluster
            fc = NetFaultCluster(net, zk, work, ["b0", "b1", "b2"]).start()
            fault = net.isolate("b1")          # ... later: fault.heal() or net.heal()
            fc.stop()

Layout (one run; ``prefix`` is "pb" + 6 random hex digits, e.g. "pb3fa2c1"):

    namespace <prefix>-sw       the switch: bridge <prefix>br, one port <prefix>p<i> per host
    namespace <prefix>-<host>   one per host: lo up, eth0 (the port's veth peer) with
                                10.213.<N>.<10+i>/24; no default route, so nothing
                                outside the /24 is reachable and nothing leaves the machine

<N> is random per run. Nothing is ever created in the root namespace: veth pairs are
born in their namespaces (``ip -n <sw> link add ... peer name eth0 netns <host>``).
The test process reaches into a host with ``call_in``: a short-lived thread calls
setns(2) into the host's namespace and runs a function there. Linux keeps the network
namespace per thread, and a socket keeps the namespace it was created in, so sockets
made there (``connect``, ``NsWireClient``) and threads started there (kazoo's, a
confluent-kafka client's librdkafka threads) stay in the host after the call returns.

Processes run in a host through ``ip netns exec`` (which execs, so the Popen's pid is
the process's own); they are recorded and stopped by pid on exit: SIGTERM, SIGKILL
after a timeout.

Faults are blackhole routes (/32, in a host's own namespace) and switch ports taken
down; each call returns a ``Fault`` that heals itself, ``heal()`` heals them all, and
every apply and heal is logged in ``net.log`` (seconds since the network came up).
Routes are counted, so overlapping faults heal independently. What a blackholed
sender sees: a new connect fails at once (EINVAL); packets of an established
connection are dropped silently, so its peer sees a stalled connection. A one-way
``drop(src, dst)`` leaves dst -> src packets arriving, but TCP in either direction
then fails (src's SYN-ACKs and ACKs are dropped); UDP shows the direction.

Cleanup (on exit, failure, KeyboardInterrupt, and SIGTERM while the network is up):
stop recorded processes, kill whatever is left inside our namespaces, delete every
namespace whose name starts with the run's prefix (which takes the veths and the
bridge with it), then delete root-namespace links with the prefix (there should be
none). ``python -m tests.fault.netns cleanup <prefix>`` does the same for a run that
was killed with SIGKILL.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import random
import re
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar


T = TypeVar("T")

BROKER_PORT = 9092
ZK_PORT = 2181
NETNS_DIR = "/run/netns"
CLONE_NEWNET = 0x40000000
_HOST_NAME = re.compile(r"^[a-z][a-z0-9]{0,7}$")
_SWITCH = "sw"


# --------------------------------------------------------------------------------------
# ip(8)


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")
    return proc


def new_prefix() -> str:
    return "pb" + secrets.token_hex(3)


def unavailable_reason() -> str | None:
    """Why namespaces cannot be used here (None when they can): not Linux, not root,
    no ``ip``, or ``ip netns add`` refused (probed with a namespace of its own)."""
    if not sys.platform.startswith("linux"):
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    probe = new_prefix() + "-probe"
    try:
        made = _ip("netns", "add", probe, check=False)
        if made.returncode != 0:
            return f"`ip netns add` is not permitted here: {made.stderr.strip()}"
        return None
    finally:
        _ip("netns", "del", probe, check=False)


def _netns_names(prefix: str) -> list[str]:
    out = _ip("netns", "list", check=False).stdout
    return [ln.split()[0] for ln in out.splitlines()
            if ln.split() and ln.split()[0].startswith(prefix + "-")]


def _root_links(prefix: str) -> list[str]:
    names = [ln.split(":")[1].strip().split("@")[0]
             for ln in _ip("-o", "link", "show", check=False).stdout.splitlines()
             if ln.count(":") >= 2]
    return [n for n in names if n.startswith(prefix)]


def leftovers(prefix: str) -> list[str]:
    """Namespaces and root-namespace links whose names carry ``prefix``."""
    return [f"netns {n}" for n in _netns_names(prefix)] + \
           [f"link {n}" for n in _root_links(prefix)]


def cleanup_prefix(prefix: str) -> list[str]:
    """Delete every namespace (after SIGKILLing the processes inside it; never this
    process) and root link named with ``prefix``. -> what was removed."""
    if not re.fullmatch(r"pb[0-9a-f]{6}", prefix):
        raise ValueError(f"not a run prefix: {prefix!r}")
    removed = []
    for ns in _netns_names(prefix):
        for pid in _ip("netns", "pids", ns, check=False).stdout.split():
            if int(pid) != os.getpid():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        _ip("netns", "del", ns, check=False)
        removed.append(f"netns {ns}")
    for link in _root_links(prefix):
        _ip("link", "del", link, check=False)
        removed.append(f"link {link}")
    return removed


def root_sockets_toward(subnet: str) -> list[str]:
    """TCP/UDP sockets of the root namespace (this process's main thread's) whose peer
    is in ``subnet`` ("10.213.N"). There must be none: the test network is reached
    only from inside its hosts, and from the root namespace such an address would be
    routed off the machine."""
    found = []
    for proto in ("tcp", "udp"):
        with open(f"/proc/{os.getpid()}/net/{proto}") as f:
            for line in list(f)[1:]:
                ip_hex, port_hex = line.split()[2].split(":")
                ip = socket.inet_ntoa(struct.pack("<I", int(ip_hex, 16)))
                if ip.startswith(subnet + "."):
                    found.append(f"{proto} {ip}:{int(port_hex, 16)}")
    return found


def _setns(fd: int) -> None:
    if hasattr(os, "setns"):                     # Python 3.12+
        os.setns(fd, CLONE_NEWNET)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


# --------------------------------------------------------------------------------------
# faults


@dataclass(frozen=True)
class FaultEvent:
    at: float            # seconds since the network came up
    action: str          # "apply" | "heal"
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.at:8.3f}s {self.action:5} {self.kind}: {self.detail}"


@dataclass
class Fault:
    """One applied fault: blackhole routes (host, toward host) and switch ports down."""

    net: VirtualNetwork = field(repr=False)
    kind: str
    detail: str
    routes: tuple[tuple[str, str], ...] = ()
    links: tuple[str, ...] = ()
    active: bool = True

    def heal(self) -> None:
        self.net.heal(self)


# --------------------------------------------------------------------------------------
# the network


class VirtualNetwork:
    """Hosts in namespaces on one bridge; see the module docstring."""

    def __init__(self, hosts: Iterable[str] = (), prefix: str | None = None,
                 subnet: int | None = None) -> None:
        self.prefix = prefix or new_prefix()
        if not re.fullmatch(r"pb[0-9a-f]{6}", self.prefix):
            raise ValueError(f"a run prefix is 'pb' and 6 hex digits, not {self.prefix!r}")
        self.subnet = f"10.213.{subnet if subnet is not None else random.randint(1, 254)}"
        self._initial = list(hosts)
        self._hosts: dict[str, tuple[int, str]] = {}     # name -> (index, address)
        self._procs: list[tuple[str, subprocess.Popen[Any]]] = []
        self._routes: Counter[tuple[str, str]] = Counter()
        self._down: Counter[str] = Counter()
        self.faults: list[Fault] = []
        self.log: list[FaultEvent] = []
        self._t0 = time.monotonic()
        self._old_sigterm: Any = None

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> VirtualNetwork:
        if threading.current_thread() is threading.main_thread():
            self._old_sigterm = signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
        try:
            sw = self.ns(_SWITCH)
            _ip("netns", "add", sw)
            _ip("-n", sw, "link", "add", f"{self.prefix}br", "type", "bridge")
            _ip("-n", sw, "link", "set", f"{self.prefix}br", "up")
            for h in self._initial:
                self.add_host(h)
        except BaseException:
            self.close()
            raise
        self._t0 = time.monotonic()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self, timeout: float = 10.0) -> None:
        """Stop every recorded process, then delete everything named with the prefix."""
        try:
            self.stop_processes(timeout)
        finally:
            cleanup_prefix(self.prefix)
            if self._old_sigterm is not None:
                signal.signal(signal.SIGTERM, self._old_sigterm)
                self._old_sigterm = None

    def add_host(self, name: str) -> str:
        """A namespace joined to the bridge, loopback up; -> its address."""
        if not _HOST_NAME.match(name) or name == _SWITCH or name in self._hosts:
            raise ValueError(f"bad or duplicate host name {name!r}")
        i = len(self._hosts)
        addr = f"{self.subnet}.{10 + i}"
        self._hosts[name] = (i, addr)
        ns, sw, port = self.ns(name), self.ns(_SWITCH), self._port(name)
        _ip("netns", "add", ns)
        _ip("-n", sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("-n", sw, "link", "set", port, "master", f"{self.prefix}br", "up")
        _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        return addr

    # -- names -----------------------------------------------------------------------

    @property
    def hosts(self) -> list[str]:
        return list(self._hosts)

    def ns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def ip(self, host: str) -> str:
        return self._hosts[host][1]

    def _port(self, host: str) -> str:
        return f"{self.prefix}p{self._hosts[host][0]}"

    def _check(self, hosts: Iterable[str]) -> list[str]:
        out = list(hosts)
        for h in out:
            if h not in self._hosts:
                raise ValueError(f"unknown host {h!r} (have {self.hosts})")
        return out

    # -- processes -------------------------------------------------------------------

    def popen(self, host: str, argv: Sequence[str], **kw: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` inside ``host``; recorded, and stopped by pid on exit."""
        self._check([host])
        kw.setdefault("stdin", subprocess.DEVNULL)
        proc = subprocess.Popen(["ip", "netns", "exec", self.ns(host), *argv], **kw)
        self._procs.append((host, proc))
        return proc

    def stop_processes(self, timeout: float = 10.0) -> None:
        """SIGTERM every recorded process still running, SIGKILL after ``timeout``."""
        running = [p for _, p in self._procs if p.poll() is None]
        for p in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in running:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGKILL)
                p.wait(10)

    # -- the test process as a client inside a host ------------------------------------

    def call_in(self, host: str, fn: Callable[[], T]) -> T:
        """``fn()`` on a thread that first enters ``host``'s network namespace."""
        self._check([host])
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                fd = os.open(f"{NETNS_DIR}/{self.ns(host)}", os.O_RDONLY)
                try:
                    _setns(fd)
                finally:
                    os.close(fd)
                box["value"] = fn()
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller
                box["error"] = e
        t = threading.Thread(target=run, name=f"netns-{host}", daemon=True)
        t.start()
        t.join()
        if "error" in box:
            raise box["error"]
        return box["value"]  # type: ignore[no-any-return]

    def threads_inside(self) -> list[str]:
        """This process's threads that are in one of the hosts ("<tid> in <host>"):
        call_in threads that have not returned, and threads started there (a client
        not closed yet). Any left at the end would keep a deleted namespace alive."""
        ids = {}
        for h in [_SWITCH, *self.hosts]:
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(f"{NETNS_DIR}/{self.ns(h)}")
                ids[(st.st_dev, st.st_ino)] = h
        found = []
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(f"/proc/self/task/{tid}/ns/net")
                if (st.st_dev, st.st_ino) in ids:
                    found.append(f"{tid} in {ids[(st.st_dev, st.st_ino)]}")
        return found

    def connect(self, src: str, dst: str, port: int, timeout: float = 3.0) -> socket.socket:
        """A TCP connection from ``src`` to ``dst``:``port``."""
        addr = (self.ip(dst), port)
        return self.call_in(src, lambda: socket.create_connection(addr, timeout=timeout))

    def tcp_probe(self, src: str, dst: str, port: int, timeout: float = 1.0) -> str:
        """Try one TCP connect: "ok", "timeout" or the errno name (EINVAL, ...)."""
        try:
            self.connect(src, dst, port, timeout).close()
            return "ok"
        except TimeoutError:
            return "timeout"
        except OSError as e:
            return errno.errorcode.get(e.errno or 0, str(e))

    def udp_reaches(self, src: str, dst: str, timeout: float = 1.0) -> bool:
        """Whether a datagram sent from ``src`` arrives in ``dst`` (three tries)."""
        rx = self.call_in(dst, lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        tx = self.call_in(src, lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        with rx, tx:
            rx.bind((self.ip(dst), 0))
            rx.settimeout(timeout / 3)
            token = secrets.token_bytes(8)
            for _ in range(3):
                with contextlib.suppress(OSError):
                    tx.sendto(token, rx.getsockname())
                try:
                    while rx.recv(64) != token:
                        pass
                    return True
                except TimeoutError:
                    continue
        return False

    # -- faults ----------------------------------------------------------------------

    def partition(self, a_hosts: Iterable[str], b_hosts: Iterable[str]) -> Fault:
        """Two-way: no packet between any host of ``a_hosts`` and any of ``b_hosts``."""
        a, b = self._check(a_hosts), self._check(b_hosts)
        if set(a) & set(b):
            raise ValueError(f"{sorted(set(a) & set(b))} on both sides")
        routes = [(x, y) for x in a for y in b] + [(y, x) for x in a for y in b]
        return self._apply("partition", f"{sorted(a)} | {sorted(b)}", routes=routes)

    def drop(self, src: str, dst: str) -> Fault:
        """One-way: ``src``'s packets to ``dst`` are dropped (in ``src`` only)."""
        self._check([src, dst])
        return self._apply("drop", f"{src} -> {dst}", routes=[(src, dst)])

    def isolate(self, host: str) -> Fault:
        """``host`` from every other host (the client hosts included)."""
        others = [h for h in self.hosts if h != host]
        routes = [(host, o) for o in others] + [(o, host) for o in others]
        return self._apply("isolate", host, routes=routes)

    def bridge(self, a_hosts: Iterable[str], middle: str, b_hosts: Iterable[str]) -> Fault:
        """Jepsen's bridge: ``a_hosts`` and ``b_hosts`` cut from each other, ``middle``
        (in neither) still talking to both."""
        a, b = self._check(a_hosts), self._check(b_hosts)
        if middle in a or middle in b or set(a) & set(b):
            raise ValueError("the sides and the middle must be disjoint")
        routes = [(x, y) for x in a for y in b] + [(y, x) for x in a for y in b]
        return self._apply("bridge", f"{sorted(a)} <- {middle} -> {sorted(b)}", routes=routes)

    def link_down(self, host: str) -> Fault:
        """Pull ``host``'s cable at the switch: its port goes down (its packets vanish)."""
        self._check([host])
        return self._apply("link-down", host, links=[host])

    def link_up(self, host: str) -> None:
        """Heal every link-down fault of ``host``."""
        for f in [f for f in self.faults if f.active and host in f.links]:
            self.heal(f)

    def heal(self, fault: Fault | None = None) -> None:
        """Heal one fault, or (None) every fault, then sweep: flush every blackhole
        route in every host and bring every switch port up."""
        if fault is not None:
            if fault.active:
                self._undo(fault)
            return
        for f in [f for f in self.faults if f.active]:
            self._undo(f)
        for h in self.hosts:
            _ip("-n", self.ns(h), "route", "flush", "type", "blackhole")
            _ip("-n", self.ns(_SWITCH), "link", "set", self._port(h), "up")
        self._routes.clear()
        self._down.clear()
        self._event("heal", "all", "every route flushed, every link up")

    def active_faults(self) -> list[Fault]:
        return [f for f in self.faults if f.active]

    def log_lines(self) -> list[str]:
        return [str(e) for e in self.log]

    def _apply(self, kind: str, detail: str, routes: Iterable[tuple[str, str]] = (),
               links: Iterable[str] = ()) -> Fault:
        fault = Fault(self, kind, detail, tuple(dict.fromkeys(routes)), tuple(links))
        for src, dst in fault.routes:
            if self._routes[(src, dst)] == 0:
                _ip("-n", self.ns(src), "route", "add", "blackhole", f"{self.ip(dst)}/32")
            self._routes[(src, dst)] += 1
        for h in fault.links:
            if self._down[h] == 0:
                _ip("-n", self.ns(_SWITCH), "link", "set", self._port(h), "down")
            self._down[h] += 1
        self.faults.append(fault)
        self._event("apply", kind, detail)
        return fault

    def _undo(self, fault: Fault) -> None:
        for src, dst in fault.routes:
            self._routes[(src, dst)] -= 1
            if self._routes[(src, dst)] <= 0:
                del self._routes[(src, dst)]
                _ip("-n", self.ns(src), "route", "del", "blackhole", f"{self.ip(dst)}/32",
                    check=False)
        for h in fault.links:
            self._down[h] -= 1
            if self._down[h] <= 0:
                del self._down[h]
                _ip("-n", self.ns(_SWITCH), "link", "set", self._port(h), "up")
        fault.active = False
        self._event("heal", fault.kind, fault.detail)

    def _event(self, action: str, kind: str, detail: str) -> None:
        self.log.append(FaultEvent(round(time.monotonic() - self._t0, 3), action, kind, detail))


def _sigterm_to_interrupt(signum: int, _frame: Any) -> None:
    # as Ctrl-C: the with-block's cleanup runs, and pytest stops (a SystemExit raised
    # in a test would only fail that test) after tearing its fixtures down
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "cleanup":
        for what in cleanup_prefix(argv[1]):
            print("removed", what)
        return 0
    print("usage: python -m tests.fault.netns cleanup <prefix, e.g. pb3fa2c1>", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
