"""Shared by the broker benchmarks: a ZooKeeper and one broker process, started
with the integration-test harness (tests/integration/cluster.py) under a temp
dir and stopped by pid on exit; or an existing broker given with --bootstrap."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from broker.zookeeper_runner import start_zookeeper  # noqa: E402
from tests.integration.cluster import BrokerProcess, Cluster, free_port  # noqa: E402


def _ruok(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


@contextlib.contextmanager
def zookeeper(work: Path) -> Iterator[str]:
    port = free_port()
    (work / "zk").mkdir(parents=True, exist_ok=True)
    out = open(work / "zk" / "zk.out", "wb")
    proc = start_zookeeper({"dataDir": str(work / "zk" / "data"), "clientPort": str(port),
                            "clientPortAddress": "127.0.0.1", "tickTime": "500",
                            "maxClientCnxns": "0", "admin.enableServer": "false",
                            "4lw.commands.whitelist": "ruok", "minSessionTimeout": "1000"},
                           work / "zk", log_level="WARN", stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not _ruok(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ZooKeeper did not start:\n" + (work / "zk" / "zk.out").read_text())
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        out.close()


@contextlib.contextmanager
def one_broker(overrides: dict[str, str] | None = None) -> Iterator[BrokerProcess]:
    """ZooKeeper + one broker in a fresh temp dir (removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="pybroker-bench-") as tmp:
        work = Path(tmp)
        with zookeeper(work) as zk:
            cluster = Cluster(zk, work, size=1, overrides={
                "auto.create.topics.enable": "false", "log.level": "WARN", **(overrides or {})})
            cluster.start()
            try:
                yield cluster.brokers[0]
            finally:
                cluster.stop()


def rss_kib(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM / RssAnon / RssFile of a process, in KiB (Linux /proc)."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(rest.split()[0])
    return out


def command_line() -> str:
    return " ".join([".venv/bin/python", os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]])
