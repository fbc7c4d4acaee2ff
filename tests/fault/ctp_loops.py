"""Consume-transform-produce loops for tests/fault/test_txn_client_kills.py, each in a
process of its own, and the test side that runs and watches them.

The loops (confluent-kafka and aiokafka here, run as
``python tests/fault/ctp_loops.py confluent|aiokafka BOOTSTRAP INPUT OUTPUT GROUP TXN_ID
TOTAL HOLD_MS``; the Java client's is tests/fault/JavaCtpLoop.java) all do the same: a
read_committed consumer subscribed to INPUT in GROUP without auto-commit, a
transactional producer; each round polls at most ``BATCH`` records, begins, produces
``out-<value>`` to the same partition of OUTPUT, sends the consumer's positions with the
transaction, holds it open HOLD_MS (the pace, so the run lasts through the faults; the
line ``fast`` on stdin drops it) and commits. An abortable error aborts and rewinds the
consumer to the group's committed offsets; a fatal error ends the loop (exit status 2):
the test wants none. They stop once TOTAL inputs are committed.

Client settings the test's bound (a commit within the ZooKeeper session timeout + 5 s
of a fault) needs: every request times out after ``REQUEST_TIMEOUT_MS`` (2 s), since a
request held by a SIGSTOPped broker is only given up then, and a client may spend two
(one before the session expires, one after) on it; the transaction timeout is the
clients' default 60 s, longer than any fault (a transaction open past it is aborted by
its coordinator with an epoch bump, which fences the producer: fatal). librdkafka gets
``enable.sparse.connections=false`` and ``reconnect.backoff.max.ms=1000``: its
coordinator requests (TxnOffsetCommit) wait for a down coordinator until some broker
connection goes up or down (confluentinc/librdkafka#5456, #5511). ``CTP_LOOP_DEBUG``
in the environment sets librdkafka's ``debug`` (e.g. ``eos,broker,protocol``).

Each loop reports on stdout, one line per event, ``<KIND> <wall ms> <text>``: STEP (the
step it enters), COMMIT ``<seq> <records> <committed so far> <begin wall ms>``, ABORT,
ERROR (retried or logged), FATAL, READY, DONE. ``LoopProcess`` reads them: the commits
with their times, the last step (where a stalled loop is stuck), a fatal error; ``arm``
wakes the test the moment the loop enters a step.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fault.jvm import loop_argv

REPO = Path(__file__).resolve().parents[2]
JAVA_PROGRAM = Path(__file__).with_name("JavaCtpLoop.java")

BATCH = 20                 # records per transaction at most
REQUEST_TIMEOUT_MS = 2000  # every client request (see the module docstring)
# the clients' default: a transaction outlives a fault (the 10 s pause); one open longer
# is aborted by its coordinator with an epoch bump, which fences the producer (fatal)
TXN_TIMEOUT_MS = 60000


# --------------------------------------------------------------------------------------
# the loops (child side)


def _out(kind: str, text: str = "") -> None:
    print(f"{kind} {int(time.time() * 1000)} {text}", flush=True)


def _step(name: str) -> None:
    _out("STEP", name)


def _watch_stdin(fast: threading.Event) -> None:
    def read() -> None:
        for line in sys.stdin:
            if line.strip() == "fast":
                fast.set()
    threading.Thread(target=read, name="commands", daemon=True).start()


def confluent_loop(bootstrap: str, source: str, sink: str, group: str, tid: str,
                   total: int, hold_s: float) -> int:
    from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException,
                                 Producer, TopicPartition)

    fast = threading.Event()
    _watch_stdin(fast)
    fatal: list[KafkaError] = []

    def error_cb(err: KafkaError) -> None:
        if err.fatal():
            fatal.append(err)
            _out("FATAL", f"error_cb: {err}")
        else:
            _out("ERROR", f"error_cb: {err}")

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "error_cb": error_cb,
                         "socket.timeout.ms": REQUEST_TIMEOUT_MS})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                         "transaction.timeout.ms": TXN_TIMEOUT_MS, "linger.ms": 5,
                         "socket.timeout.ms": REQUEST_TIMEOUT_MS,
                         "request.timeout.ms": REQUEST_TIMEOUT_MS,
                         # librdkafka 2.x with sparse connections can wait for ever in
                         # send_offsets_to_transaction for a group coordinator that went
                         # down (tests/fault/txn_workload.py): a connection to every broker
                         "enable.sparse.connections": False,
                         # librdkafka re-tries a coordinator request (TxnOffsetCommit)
                         # whose coordinator is down only when some broker connection
                         # goes up or down (confluentinc/librdkafka#5511): a killed
                         # coordinator's broker is re-tried every second at least
                         "reconnect.backoff.max.ms": 1000,
                         **({"debug": os.environ["CTP_LOOP_DEBUG"]}
                            if os.environ.get("CTP_LOOP_DEBUG") else {}),
                         "error_cb": error_cb})
    consumer.subscribe([source])

    def check_fatal(where: str, e: KafkaException | None = None) -> None:
        err = e.args[0] if e is not None else None
        if fatal or (err is not None and err.fatal()):
            _out("FATAL", f"{where}: {err if err is not None else fatal[0]}")
            sys.exit(2)

    def retrying(what: str, call: Any) -> None:
        """A transactional call; called again when librdkafka says retriable."""
        while True:
            try:
                call()
                return
            except KafkaException as e:
                err = e.args[0]
                check_fatal(what, e)
                if not err.retriable() or err.txn_requires_abort():
                    raise
                _out("ERROR", f"{what}: {err}: retried")

    def rewind() -> None:
        _step("rewind")
        while True:
            try:
                committed = consumer.committed(consumer.assignment(), 30)
                break
            except KafkaException as e:
                _out("ERROR", f"committed(): {e.args[0]}: retried")
        for tp in committed:
            consumer.seek(TopicPartition(tp.topic, tp.partition,
                                         tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))

    _step("init")
    retrying("init_transactions", lambda: producer.init_transactions(30))
    _out("READY", tid)
    done = seq = 0
    while done < total:
        check_fatal("poll")
        _step("poll")
        msgs = []
        for m in consumer.consume(BATCH, 0.5):
            if m.error():
                _out("ERROR", f"consumer: {m.error()}")
            else:
                msgs.append(m)
        if not msgs:
            continue
        seq += 1
        begun = int(time.time() * 1000)
        try:
            _step("begin")
            producer.begin_transaction()
            _step("produce")
            offsets: dict[tuple[str, int], int] = {}
            for m in msgs:
                while True:
                    try:
                        producer.produce(sink, value=b"out-" + m.value(), partition=m.partition())
                        break
                    except BufferError:
                        producer.poll(0.05)
                offsets[(m.topic(), m.partition())] = m.offset() + 1
            _step("send_offsets")
            positions = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
            retrying("send_offsets_to_transaction", lambda: producer.send_offsets_to_transaction(
                positions, consumer.consumer_group_metadata(), 30))
            if not fast.is_set():
                _step("hold")
                time.sleep(hold_s)
            _step("commit")
            retrying("commit_transaction", lambda: producer.commit_transaction(30))
            done += len(msgs)
            _out("COMMIT", f"{seq} {len(msgs)} {done} {begun}")
        except KafkaException as e:
            err = e.args[0]
            check_fatal(f"transaction {seq}", e)
            if not err.txn_requires_abort():
                _out("FATAL", f"transaction {seq}: neither retriable nor abortable: {err}")
                sys.exit(2)
            _out("ABORT", f"transaction {seq}: {err}")
            _step("abort")
            retrying("abort_transaction", lambda: producer.abort_transaction(30))
            rewind()
    _out("DONE", str(done))
    producer.flush(5)
    consumer.close()
    return 0


async def aiokafka_loop(bootstrap: str, source: str, sink: str, group: str, tid: str,
                        total: int, hold_s: float) -> int:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.errors import KafkaError, ProducerFenced

    fast = threading.Event()
    _watch_stdin(fast)
    consumer = AIOKafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group,
                                isolation_level="read_committed", enable_auto_commit=False,
                                auto_offset_reset="earliest",
                                request_timeout_ms=REQUEST_TIMEOUT_MS)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid,
                                transaction_timeout_ms=TXN_TIMEOUT_MS, linger_ms=5,
                                request_timeout_ms=REQUEST_TIMEOUT_MS)
    txn = producer._txn_manager          # aiokafka has no public "is it fatal"

    def fatal_now(where: str, e: BaseException | None) -> bool:
        sender = producer._sender.sender_task
        if txn.is_fatal_error() or isinstance(e, ProducerFenced) or (
                sender is not None and sender.done()):
            _out("FATAL", f"{where}: {e!r} (transaction state {txn.state.name})")
            return True
        return False

    _step("init")
    await producer.start()
    await consumer.start()
    _out("READY", tid)
    done = seq = 0
    try:
        while done < total:
            _step("poll")
            got = await consumer.getmany(timeout_ms=500, max_records=BATCH)
            msgs = [m for batch in got.values() for m in batch]
            if not msgs:
                continue
            seq += 1
            begun = int(time.time() * 1000)
            try:
                _step("begin")
                await producer.begin_transaction()
                _step("produce")
                offsets: dict[TopicPartition, int] = {}
                for m in msgs:
                    await producer.send(sink, value=b"out-" + m.value, partition=m.partition)
                    offsets[TopicPartition(m.topic, m.partition)] = m.offset + 1
                _step("send_offsets")
                await producer.send_offsets_to_transaction(offsets, group)
                if not fast.is_set():
                    _step("hold")
                    await asyncio.sleep(hold_s)
                _step("commit")
                await producer.commit_transaction()
                done += len(msgs)
                _out("COMMIT", f"{seq} {len(msgs)} {done} {begun}")
            except (KafkaError, AssertionError) as e:
                if fatal_now(f"transaction {seq}", e):
                    return 2
                _out("ABORT", f"transaction {seq}: {e!r} (state {txn.state.name})")
                _step("abort")
                try:
                    await producer.abort_transaction()
                except (KafkaError, AssertionError) as e2:
                    fatal_now("abort_transaction", e2)
                    _out("FATAL", f"abort_transaction after {e!r}: {e2!r}")
                    return 2
                _step("rewind")
                for tp in consumer.assignment():
                    at = await consumer.committed(tp)
                    if at is None:
                        await consumer.seek_to_beginning(tp)
                    else:
                        consumer.seek(tp, at)
        _out("DONE", str(done))
        return 0
    finally:
        await consumer.stop()
        await producer.stop()


def main(argv: list[str]) -> int:
    kind, bootstrap, source, sink, group, tid, total, hold_ms = argv
    if kind == "confluent":
        return confluent_loop(bootstrap, source, sink, group, tid, int(total),
                              int(hold_ms) / 1000)
    if kind == "aiokafka":
        return asyncio.run(aiokafka_loop(bootstrap, source, sink, group, tid, int(total),
                                         int(hold_ms) / 1000))
    raise SystemExit(f"unknown loop {kind!r}")


# --------------------------------------------------------------------------------------
# the test side


@dataclass(frozen=True)
class Commit:
    seq: int
    records: int
    done: int
    begun: float           # wall-clock seconds, as time.time()
    at: float              # when commit returned, wall-clock seconds


class LoopProcess:
    """One loop in a child process; its events as it reports them (module docstring)."""

    def __init__(self, argv: list[str], name: str, stderr_path: Path) -> None:
        self.argv, self.name, self.stderr_path = argv, name, stderr_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.lines: collections.deque[str] = collections.deque(maxlen=80)
        self.commits: list[Commit] = []
        self.aborts: list[str] = []
        self.errors: list[str] = []
        self.fatal: str | None = None
        self.step, self.step_at = "(not started)", time.time()
        self.ready = self.done = False
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self._armed: dict[str, threading.Event] = {}

    @classmethod
    def for_client(cls, client: str, bootstrap: str, source: str, sink: str, group: str,
                   tid: str, total: int, hold_ms: int, java_classpath: str | None,
                   log_dir: Path) -> LoopProcess:
        tail = [bootstrap, source, sink, group, tid, str(total), str(hold_ms)]
        if client == "java":
            assert java_classpath is not None
            argv = loop_argv(java_classpath, JAVA_PROGRAM, tail, log_dir)
        else:
            argv = [sys.executable, str(Path(__file__)), client, *tail]
        return cls(argv, client, log_dir / f"loop-{client}.stderr")

    def start(self) -> LoopProcess:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
        self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.argv, cwd=REPO, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err, env=env)
        self._reader = threading.Thread(target=self._read, name=f"loop-{self.name}",
                                        daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            kind, _, rest = line.partition(" ")
            ms, _, text = rest.partition(" ")
            try:
                at = int(ms) / 1000
            except ValueError:
                at, text = time.time(), rest
            with self._lock:
                self.lines.append(f"{time.strftime('%H:%M:%S', time.localtime(at))}"
                                  f".{int(at * 1000) % 1000:03d} {kind} {text}")
                if kind == "STEP":
                    self.step, self.step_at = text, at
                    armed = self._armed.pop(text, None)
                    if armed is not None:
                        armed.set()
                elif kind == "COMMIT":
                    seq, n, done, begun = (int(x) for x in text.split())
                    self.commits.append(Commit(seq, n, done, begun / 1000, at))
                elif kind == "ABORT":
                    self.aborts.append(text)
                elif kind == "ERROR":
                    self.errors.append(text)
                elif kind == "FATAL":
                    self.fatal = self.fatal or text
                elif kind == "READY":
                    self.ready = True
                elif kind == "DONE":
                    self.done = True

    def arm(self, step: str) -> threading.Event:
        """An event set (by the reader thread, at once) when the loop next enters
        ``step``: a fault can land within a millisecond or so of it."""
        event = threading.Event()
        with self._lock:
            self._armed[step] = event
        return event

    # -- queries --------------------------------------------------------------------

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def last_commit(self) -> Commit | None:
        with self._lock:
            return self.commits[-1] if self.commits else None

    def committed(self) -> int:
        c = self.last_commit()
        return 0 if c is None else c.done

    def commit_after(self, t: float) -> Commit | None:
        """The first commit that returned after wall-clock time ``t``."""
        with self._lock:
            return next((c for c in self.commits if c.at > t), None)

    def problem(self) -> str | None:
        """A fatal error reported, or the process gone before DONE."""
        if self.fatal is not None:
            return f"fatal error in the {self.name} client: {self.fatal}"
        code = self.exited()
        if code is not None and not self.done:
            if self._reader is not None:
                self._reader.join(2)            # its last lines
            return (f"the {self.name} loop exited with status {code} before it was done"
                    + (f" (fatal: {self.fatal})" if self.fatal else ""))
        return None

    def where(self) -> str:
        """Where the loop is: its last step, last commit, last lines, stderr's tail."""
        now = time.time()
        with self._lock:
            last = self.commits[-1] if self.commits else None
            lines = list(self.lines)
        try:
            err = self.stderr_path.read_text("utf-8", "replace").splitlines()[-40:]
        except FileNotFoundError:
            err = []
        return (f"{self.name} loop: last step {self.step!r} entered {now - self.step_at:.1f} s "
                f"ago; last commit "
                + (f"#{last.seq} ({last.done} inputs committed) {now - last.at:.1f} s ago"
                   if last else "none")
                + f"; {len(self.aborts)} aborts; exit status {self.exited()}\n"
                + f"---- the loop's last {len(lines)} lines ----\n" + "\n".join(lines)
                + f"\n---- tail of {self.stderr_path} ----\n" + "\n".join(err))

    # -- control --------------------------------------------------------------------

    def fast(self) -> None:
        """No more holding transactions open: finish the input at full speed."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(b"fast\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def wait_exit(self, timeout: float) -> int | None:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """End the loop by its pid: SIGTERM, then SIGKILL after 5 s."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        if self._reader is not None:
            self._reader.join(5)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
