"""Processes for the ownership tests and benchmarks: members that log ownership, and a producer.

* ``OwnedMember``: one group member in its own OS process - confluent-kafka
  (groups/protocol_member.py) or the Java client (JavaConsumerProtocolMember.java) - writing
  its events file (format: groups/ownership_checker.py). ``leave()`` is SIGTERM (the member
  closes: revoke, leave the group), ``kill()`` is SIGKILL; both reap the process by its pid
  and stamp ``log.end`` with CLOCK_MONOTONIC after it is gone, which closes the intervals it
  still held (a killed member owned its partitions until it died, as far as anyone knows).
* ``compile_java_member``: javac the Java member once, against the kafka-clients jars.
* ``SteadyProducer``: a thread writing ``rate`` records a second round-robin over the
  partitions (idempotent, acks=all), keeping the (topic, partition, offset) of each
  acknowledged record: the set the group must consume.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.integration.groups.ownership_checker import MemberLog, RecordId

REPO = Path(__file__).resolve().parents[3]
PY_MEMBER = Path(__file__).with_name("protocol_member.py")
JAVA_MEMBER = REPO / "tests" / "integration" / "JavaConsumerProtocolMember.java"


def compile_java_member(java_classpath: str, out_dir: Path) -> str:
    """javac JavaConsumerProtocolMember.java into ``out_dir``; -> the classpath to run it."""
    res = subprocess.run(["javac", "-cp", java_classpath, "-d", str(out_dir), str(JAVA_MEMBER)],
                         capture_output=True, text=True, timeout=180)
    if res.returncode != 0:
        raise RuntimeError(f"javac failed:\n{res.stdout}\n{res.stderr}")
    return f"{java_classpath}:{out_dir}"


class OwnedMember:
    """A member process and its events log; see the module docstring."""

    def __init__(self, kind: str, name: str, work: Path, bootstrap: str, topic: str, group: str,
                 protocol: str, assignor: str | None = None, java_cp: str | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.kind, self.name = kind, name
        events = work / f"{name}.events"
        self.stderr_path = work / f"{name}.stderr"
        tail = [assignor] if assignor else []
        if kind == "java":
            assert java_cp is not None
            argv = ["java", "-cp", java_cp, "JavaConsumerProtocolMember", bootstrap, topic,
                    group, protocol, str(events), name, *tail]
        else:
            argv = [sys.executable, str(PY_MEMBER), bootstrap, topic, group, protocol,
                    str(events), name, *tail]
        self.log = MemberLog(name, events)
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err, cwd=REPO,
                                         env={**os.environ, "PYTHONPATH": str(REPO),
                                              **(env or {})})

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def owned(self) -> set[tuple[str, int]]:
        return self.log.refresh().owned()

    def _reaped(self) -> None:
        self.log.end = time.monotonic_ns()
        self.log.refresh()

    def leave(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait: the member closes (revoke, LeaveGroup / leave heartbeat)."""
        if self.alive:
            os.kill(self.proc.pid, signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not close within {timeout:g}s") from None
        self._reaped()
        return code

    def kill(self) -> None:
        """SIGKILL (a crash) and reap."""
        if self.alive:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self._reaped()

    def stop(self) -> None:
        """Cleanup: kill if still running."""
        if self.proc.poll() is None:
            self.kill()

    def stderr_tail(self, lines: int = 20) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace").splitlines()[-lines:]
        except FileNotFoundError:
            text = []
        return f"--- {self.name} ({self.kind}, owns {sorted(self.log.owned())}) ---\n" + \
            "\n".join(text)


class SteadyProducer(threading.Thread):
    """Writes ``rate`` records/s round-robin over ``partitions`` until ``stop()``."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer
        self.topic, self.partitions, self.rate = topic, partitions, rate
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                  "acks": "all", "linger.ms": 5, "message.timeout.ms": 120000})
        self.acked: set[RecordId] = set()
        self.errors: list[str] = []
        self.sent = 0
        self._halt = threading.Event()
        self._lock = threading.Lock()

    def _done(self, err: object, msg: object) -> None:
        if err is not None:
            self.errors.append(str(err))
            return
        with self._lock:
            self.acked.add((msg.topic(), msg.partition(), msg.offset()))  # type: ignore[attr-defined]

    def run(self) -> None:
        start = time.monotonic()
        while not self._halt.is_set():
            due = int((time.monotonic() - start) * self.rate)
            while self.sent < due:
                self.producer.produce(self.topic, value=b"r%d" % self.sent,
                                      partition=self.sent % self.partitions,
                                      on_delivery=self._done)
                self.sent += 1
            self.producer.poll(0.01)
        self.producer.flush(120)

    def stop(self, timeout: float = 130.0) -> set[RecordId]:
        """Stop writing, wait for every acknowledgement; -> the acknowledged records."""
        self._halt.set()
        self.join(timeout)
        with self._lock:
            return set(self.acked)
