"""A real ZooKeeper server for tests and benchmarks, as a context manager.

Started through broker.zookeeper_runner (jars from a local install or pyspark)
on a free 127.0.0.1 port with its dataDir under ``work``; ready when it answers
``ruok``; stopped by its pid (SIGTERM, then SIGKILL after 10 s). Yields
"127.0.0.1:PORT".
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from broker.zookeeper_runner import start_zookeeper


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


# "127.0.0.1:PORT" -> the server's pid while it runs (fault tests pause it)
PIDS: dict[str, int] = {}


@contextlib.contextmanager
def zookeeper_server(work: Path, start_timeout: float = 30.0) -> Iterator[str]:
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with open(work / "zk.out", "wb") as out:
        proc = start_zookeeper({
            "dataDir": str(work / "data"), "clientPort": str(port),
            "clientPortAddress": "127.0.0.1", "tickTime": "500", "maxClientCnxns": "0",
            "admin.enableServer": "false", "4lw.commands.whitelist": "ruok,srvr",
            "minSessionTimeout": "1000",
        }, work, log_level="WARN", stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + start_timeout
        while not _ruok(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ZooKeeper did not start:\n" + (work / "zk.out").read_text())
            time.sleep(0.1)
        PIDS[f"127.0.0.1:{port}"] = proc.pid
        yield f"127.0.0.1:{port}"
    finally:
        PIDS.pop(f"127.0.0.1:{port}", None)
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
