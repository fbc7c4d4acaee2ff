"""Producer loops of the stock clients for the client campaign (tests/fault/
client_campaign.py; issue 30), each in a process of its own, and the test side that
runs and reads them.

    python tests/fault/produce_loops.py CLIENT BOOTSTRAP TOPIC PARTITIONS BASE RATE

CLIENT is one of ``CLIENTS``: librdkafka through confluent-kafka, idempotent (its
default since none is set: ``enable.idempotence`` off, so it is set) and not;
kafka-python; aiokafka (the Java client's loop is tests/fault/JavaProduceLoop.java,
idempotent by its default). Every client keeps its default settings but for
``acks=all`` (the default of librdkafka and the Java client, not of kafka-python and
aiokafka): a client's defaults are what the campaign measures.

A loop sends BASE, BASE+1, ... at RATE values/s in all, value i to partition
i % PARTITIONS, without waiting for answers (each client pipelines as it does by
default), and reports on stdout, one line per event, times on CLOCK_MONOTONIC in
nanoseconds (Python's ``time.monotonic_ns``, Java's ``System.nanoTime`` on Linux, so
the test compares them with its own ``time.monotonic_ns``):

    READY                                       the client is built
    ACK <partition> <value> <offset> <sent ns> <acked ns>
    ERR <partition> <value> <sent ns> <error name>   a send the client gave up on
    DONE <sent>                                 stdin closed (or ``stop``): flushed
    LEADER <partition> <node> <ns>              (Java only) the leader its metadata
                                                names changed; kept in ``leaders``

``ProduceLoop`` is the test side: it starts one (inside a virtual host with
``popen``), keeps each partition's acknowledgements, and answers "the first
acknowledged write to partition p sent at or after t".
"""

from __future__ import annotations

import asyncio
import bisect
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fault.jvm import loop_argv

REPO = Path(__file__).resolve().parents[2]
JAVA_PROGRAM = Path(__file__).with_name("JavaProduceLoop.java")

# client name -> idempotent?
CLIENTS: dict[str, bool] = {
    "librdkafka-idempotent": True,
    "librdkafka": False,
    "java": True,
    "kafka-python": False,
    "aiokafka": False,
}


# --------------------------------------------------------------------------------------
# the loops (child side)

class _Reporter:
    """Lines to stdout from any thread (the clients call back on their own threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        with self._lock:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def ack(self, p: int, value: int, offset: int, sent: int) -> None:
        self.line(f"ACK {p} {value} {offset} {sent} {time.monotonic_ns()}")

    def err(self, p: int, value: int, sent: int, name: str) -> None:
        self.line(f"ERR {p} {value} {sent} {name.replace(' ', '_')}")


def _stop_event() -> threading.Event:
    """Set when stdin says ``stop`` or closes."""
    stop = threading.Event()

    def read() -> None:
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        stop.set()
    threading.Thread(target=read, name="stdin", daemon=True).start()
    return stop


def _paced(rate: float, stop: threading.Event, send: Callable[[int], None],
           idle: Callable[[float], None]) -> int:
    """Call ``send(i)`` for i = 0, 1, ... at ``rate``/s until ``stop``; ``idle(s)``
    waits (serving the client's callbacks) between sends. -> values sent."""
    t0, i = time.monotonic(), 0
    while not stop.is_set():
        due = t0 + i / rate
        now = time.monotonic()
        if now < due:
            idle(min(due - now, 0.05))
            continue
        send(i)
        i += 1
    return i


def confluent_loop(idempotent: bool, bootstrap: str, topic: str, partitions: int,
                   base: int, rate: float) -> int:
    from confluent_kafka import Producer

    out, stop = _Reporter(), _stop_event()
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "acks": "all"}
    if idempotent:
        conf["enable.idempotence"] = True
    if os.environ.get("PRODUCE_LOOP_DEBUG"):
        conf["debug"] = os.environ["PRODUCE_LOOP_DEBUG"]
    producer = Producer(conf)
    out.line("READY")

    def send(i: int) -> None:
        p, value, sent = i % partitions, base + i, time.monotonic_ns()

        def report(err: Any, msg: Any) -> None:
            if err is None:
                out.ack(p, value, msg.offset(), sent)
            else:
                out.err(p, value, sent, err.name())
        while True:
            try:
                producer.produce(topic, str(value).encode(), partition=p, on_delivery=report)
                return
            except BufferError:                 # the local queue is full: serve it
                producer.poll(0.05)

    n = _paced(rate, stop, send, lambda s: producer.poll(s))
    producer.flush(120)
    out.line(f"DONE {n}")
    return 0


def kafka_python_loop(bootstrap: str, topic: str, partitions: int, base: int,
                      rate: float) -> int:
    from kafka import KafkaProducer

    out, stop = _Reporter(), _stop_event()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    out.line("READY")

    def send(i: int) -> None:
        p, value, sent = i % partitions, base + i, time.monotonic_ns()
        fut = producer.send(topic, str(value).encode(), partition=p)
        fut.add_callback(lambda md: out.ack(p, value, md.offset, sent))
        fut.add_errback(lambda e: out.err(p, value, sent, type(e).__name__))

    n = _paced(rate, stop, send, time.sleep)
    producer.flush(120)
    producer.close(10)
    out.line(f"DONE {n}")
    return 0


def aiokafka_loop(bootstrap: str, topic: str, partitions: int, base: int,
                  rate: float) -> int:
    from aiokafka import AIOKafkaProducer

    out, stop = _Reporter(), _stop_event()

    async def run() -> int:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        out.line("READY")
        pending: set[asyncio.Future[Any]] = set()

        def done(p: int, value: int, sent: int, fut: asyncio.Future[Any]) -> None:
            pending.discard(fut)
            if fut.cancelled():
                out.err(p, value, sent, "cancelled")
            elif fut.exception() is not None:
                out.err(p, value, sent, type(fut.exception()).__name__)
            else:
                out.ack(p, value, fut.result().offset, sent)

        t0, i = time.monotonic(), 0
        while not stop.is_set():
            due = t0 + i / rate
            now = time.monotonic()
            if now < due:
                await asyncio.sleep(min(due - now, 0.05))
                continue
            p, value, sent = i % partitions, base + i, time.monotonic_ns()
            # send() waits only while its batch queue is full; the answer is the future
            fut = await producer.send(topic, str(value).encode(), partition=p)
            pending.add(fut)
            fut.add_done_callback(lambda f, p=p, v=value, s=sent: done(p, v, s, f))
            i += 1
        await producer.flush()
        if pending:
            await asyncio.wait(pending, timeout=120)
        await producer.stop()
        return i

    n = asyncio.run(run())
    out.line(f"DONE {n}")
    return 0


def main(argv: list[str]) -> int:
    client, bootstrap, topic, partitions, base, rate = argv
    args = (bootstrap, topic, int(partitions), int(base), float(rate))
    if client.startswith("librdkafka"):
        return confluent_loop(CLIENTS[client], *args)
    if client == "kafka-python":
        return kafka_python_loop(*args)
    if client == "aiokafka":
        return aiokafka_loop(*args)
    raise SystemExit(f"produce_loops: unknown client {client!r}; one of {sorted(CLIENTS)}")


# --------------------------------------------------------------------------------------
# the test side

@dataclass
class Acks:
    """One partition's acknowledgements, in the order they came: (acked, sent) in
    seconds on the monotonic clock, and the values."""

    times: list[tuple[float, float]] = field(default_factory=list)
    values: list[int] = field(default_factory=list)


class ProduceLoop:
    """One loop in a child process (the module docstring); ``popen`` starts it (e.g.
    ``VirtualNetwork.popen`` bound to the client host)."""

    def __init__(self, client: str, bootstrap: str, topic: str, partitions: int, base: int,
                 rate: float, java_classpath: str | None, log_dir: Path) -> None:
        tail = [bootstrap, topic, str(partitions), str(base), str(rate)]
        if client == "java":
            if java_classpath is None:
                raise ValueError("the Java client's loop needs its classpath")
            self.argv = loop_argv(java_classpath, JAVA_PROGRAM, tail, log_dir)
        elif client in CLIENTS:
            self.argv = [sys.executable, str(Path(__file__)), client, *tail]
        else:
            raise ValueError(f"unknown client {client!r}; one of {sorted(CLIENTS)}")
        self.client, self.partitions, self.base = client, partitions, base
        self.stderr_path = log_dir / f"produce-{client}.stderr"
        self.proc: subprocess.Popen[bytes] | None = None
        self.acks: dict[int, Acks] = {p: Acks() for p in range(partitions)}
        self.errors: dict[str, int] = {}
        self.failed: set[int] = set()
        self.sent = -1                      # DONE's count; -1 until then
        self.leaders: list[tuple[float, int, int]] = []   # (monotonic s, partition, node)
        self.ready = threading.Event()
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None

    @property
    def idempotent(self) -> bool:
        return CLIENTS[self.client]

    def start(self, popen: Callable[..., subprocess.Popen[bytes]] = subprocess.Popen
              ) -> ProduceLoop:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
        self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.stderr_path, "wb") as err:
            self.proc = popen(self.argv, cwd=REPO, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=err, env=env)
        self._reader = threading.Thread(target=self._read, name=f"produce-{self.client}",
                                        daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            words = raw.decode("utf-8", "replace").split()
            if not words:
                continue
            with self._lock:
                if words[0] == "ACK":
                    p, value, _offset, sent, acked = (int(w) for w in words[1:6])
                    a = self.acks[p]
                    a.times.append((acked / 1e9, sent / 1e9))
                    a.values.append(value)
                elif words[0] == "ERR":
                    self.errors[words[4]] = self.errors.get(words[4], 0) + 1
                    self.failed.add(int(words[2]))
                elif words[0] == "LEADER":
                    self.leaders.append((int(words[3]) / 1e9, int(words[1]), int(words[2])))
                elif words[0] == "READY":
                    self.ready.set()
                elif words[0] == "DONE":
                    self.sent = int(words[1])
                    self.done.set()
        self.ready.set()
        self.done.set()

    def first_ack(self, p: int, since: float) -> float | None:
        """The earliest acknowledgement (monotonic seconds) of a send to ``p`` made at
        or after ``since``, or None yet."""
        with self._lock:
            times = list(self.acks[p].times)
        for acked, sent in times[bisect.bisect_left(times, (since, -1.0)):]:
            if sent >= since:
                return acked
        return None

    def acked_values(self) -> dict[int, list[int]]:
        with self._lock:
            return {p: list(a.values) for p, a in self.acks.items()}

    def stop(self, timeout: float = 150.0) -> None:
        """Stop sending, let the client flush, wait for it to exit (killed past
        ``timeout``)."""
        if self.proc is None:
            return
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.write(b"stop\n")
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        if self._reader is not None:
            self._reader.join(10)

    def stderr_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
