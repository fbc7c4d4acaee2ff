"""Shared integration fixtures: a real ZooKeeper server (module scope).

Started through broker.zookeeper_runner (jars from a local install or pyspark),
on a free 127.0.0.1 port with a temporary dataDir; stopped by its pid.
Yields "127.0.0.1:PORT".
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from broker.zookeeper_runner import java_major, start_zookeeper


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ruok(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if (java_major("java") or 0) < 17:
        pytest.skip("Java 17+ is needed to run ZooKeeper")
    work: Path = tmp_path_factory.mktemp("zookeeper")
    port = free_port()
    proc = start_zookeeper({
        "dataDir": str(work / "data"), "clientPort": str(port), "clientPortAddress": "127.0.0.1",
        "tickTime": "500", "maxClientCnxns": "0", "admin.enableServer": "false",
        "4lw.commands.whitelist": "ruok,srvr", "minSessionTimeout": "1000",
    }, work, log_level="WARN", stdout=open(work / "zk.out", "wb"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not _ruok(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ZooKeeper did not start:\n" + (work / "zk.out").read_text())
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
