"""``make run``: ZooKeeper plus one broker in the foreground, stopped together.

    python -m broker.local_run [--zookeeper-config F] [--server-config F]

1. ZooKeeper starts in its own process group (so Ctrl-C reaches only us),
   logging to data/zookeeper.log; we wait until its client port answers.
2. The broker runs as a child in the foreground group: Ctrl-C (SIGINT) reaches
   it directly and it shuts down cleanly (controlled shutdown, flush,
   checkpoints, clean-shutdown marker).
3. When the broker has exited — or if we get SIGTERM — ZooKeeper is stopped by
   its pid (SIGTERM, then SIGKILL after 10 s). Nothing is killed by name.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from broker.config import read_properties


def _wait_for_port(host: str, port: int, proc: subprocess.Popen[bytes], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def _stop(proc: subprocess.Popen[bytes], name: str, grace: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        print(f"[make run] {name} did not stop in {grace:.0f} s; killing pid {proc.pid}",
              file=sys.stderr)
        proc.kill()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m broker.local_run")
    ap.add_argument("--zookeeper-config", default="config/zookeeper.properties")
    ap.add_argument("--server-config", default="config/server.properties")
    args = ap.parse_args(argv)
    zk_props = read_properties(Path(args.zookeeper_config).read_text(encoding="utf-8"))
    zk_port = int(zk_props.get("clientPort", "2181"))
    Path("data").mkdir(exist_ok=True)
    pybroker = [sys.executable, "-m", "broker"]
    with open("data/zookeeper.log", "ab") as zk_log:
        zk = subprocess.Popen([*pybroker, "zookeeper", "-c", args.zookeeper_config],
                              stdout=zk_log, stderr=subprocess.STDOUT, start_new_session=True)
    print(f"[make run] ZooKeeper pid {zk.pid} on 127.0.0.1:{zk_port} (log: data/zookeeper.log)",
          file=sys.stderr)
    try:
        if not _wait_for_port("127.0.0.1", zk_port, zk, 60):
            print("[make run] ZooKeeper did not start; see data/zookeeper.log", file=sys.stderr)
            return 1
        broker = subprocess.Popen([*pybroker, "start", "-c", args.server_config])
        signal.signal(signal.SIGINT, lambda *_: None)  # the broker handles Ctrl-C itself
        signal.signal(signal.SIGTERM, lambda *_: broker.send_signal(signal.SIGTERM))
        code = broker.wait()
        print(f"[make run] broker exited ({code}); stopping ZooKeeper", file=sys.stderr)
        return code
    finally:
        _stop(zk, "ZooKeeper")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
