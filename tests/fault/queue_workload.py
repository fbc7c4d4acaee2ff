"""A Jepsen-style queue workload for tests/fault/queue_checker.py (issue 16, item 3).

``QueueProducer`` (confluent-kafka; acks and idempotence chosen by the test) sends, to
each partition of one topic, the ints ``base, base + 1, ...`` (as str bytes) and records
every send in a ``QueueHistory``; ``QueueConsumer`` (manual assign of every partition,
from the beginning, no group) records each poll; ``GroupConsumer`` (a member of a
consumer group, subscribed, committing) records its polls, rebalances and commits;
``final_reads`` reads every partition whole at the end. tests/fault/queue_load.py runs
them all together. On virtual hosts build the clients with ``NetFaultCluster.in_client``
so that librdkafka's threads are born in the client host:

    prod = fc.in_client(lambda: QueueProducer(fc.bootstrap, t, [0], h, acks="1").start())
    ...
    prod.stop(); final_reads(fc, t, [0], h); report = queue_checker.check(h)

How a delivery report becomes a history op (``classify``):

  no error                                  send ok, at the offset in the report
                                            (info when the report has no offset:
                                            librdkafka counts a DUPLICATE_SEQUENCE_NUMBER
                                            answer as delivered, offset -1)
  an error that means "never appended"      send fail (``DEFINITELY_NOT_WRITTEN``)
  anything else (timeouts, transport        send info (unknown): the broker may have
  errors, NOT_ENOUGH_REPLICAS_AFTER_APPEND,  appended it
  in-flight purges, ...)

Caveat on "fail": librdkafka reports only the last attempt's error. A non-idempotent
producer that retried after an attempt whose outcome was unknown can end with, say,
NOT_ENOUGH_REPLICAS although the first attempt was appended; the checker would call a
read of it G1a (and a retry that was appended too, duplicate). The default ``retries``
is kept; pass ``conf={"retries": 0}`` where that matters (QueueLoad does).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from tests.fault.cluster_faults import FaultCluster
from tests.fault.queue_history import QueueHistory
from tests.fault.workload import ConsumerThread, PacedProducer, reader_conf

# Kafka (and librdkafka-local) errors after which the record is certainly not in the log:
# the broker refused the batch before appending it, or it never left the client's queue.
DEFINITELY_NOT_WRITTEN = frozenset({
    "NOT_ENOUGH_REPLICAS",              # 19: checked before the append (min.insync.replicas)
    "MSG_SIZE_TOO_LARGE",               # 10
    "RECORD_LIST_TOO_LARGE",            # 18
    "TOPIC_AUTHORIZATION_FAILED",       # 29
    "INVALID_REQUIRED_ACKS",            # 21
    "_MSG_SIZE_TOO_LARGE",              # local: larger than message.max.bytes
    "_PURGE_QUEUE",                     # local: purged before it was ever sent
})


def classify(err: Any) -> str:
    """"ok" | "fail" | "info" for a delivery report's error (None = delivered)."""
    if err is None:
        return "ok"
    return "fail" if err.name() in DEFINITELY_NOT_WRITTEN else "info"


class ClientLog(logging.Handler):
    """The last ``keep`` lines a librdkafka client logged (its ``logger``), not
    propagated: read by a test when it fails; with ``path`` every line is also appended
    to that file (a campaign's work dir keeps the whole log for an anomaly long before
    the end)."""

    def __init__(self, name: str, keep: int = 300, path: Path | None = None) -> None:
        super().__init__()
        self.lines: deque[str] = deque(maxlen=keep)
        self.path = path
        # one logger per client process name, reused by the next client of that name
        # (logging keeps every logger for ever): a client's lines only reach its own log
        self.logger = logging.getLogger(f"tests.fault.rdkafka.{name}")
        self.logger.propagate = False
        self.logger.setLevel(logging.DEBUG)
        for old in list(self.logger.handlers):
            self.logger.removeHandler(old)
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        line = f"{time.monotonic():.3f} {record.getMessage()}"
        self.lines.append(line)
        if self.path is not None:
            with self.path.open("a") as f:
                f.write(line + "\n")


class QueueProducer(PacedProducer):
    """One producer process: a thread that sends one value per partition per round,
    ``rate`` values/s in all (None = as fast as the queue takes them)."""

    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int],
                 history: QueueHistory, process: str = "producer", acks: str = "all",
                 idempotent: bool = True, rate: float | None = 200.0, base: int = 0,
                 conf: dict[str, Any] | None = None, log_dir: Path | None = None) -> None:
        self.history, self.process = history, process
        self.next = {p: base for p in partitions}
        self.fatal: str | None = None
        # librdkafka's idempotence log (epoch bumps, sequence errors, PID changes): few
        # lines, kept for a failure message (``client_log``; all of it in
        # ``log_dir``/<process>.eos.log when given)
        self.client_log = ClientLog(
            f"queue-{process}", path=log_dir / f"{process}.eos.log" if log_dir else None
        ) if idempotent else None
        debug = {"debug": "eos", "logger": self.client_log.logger} if self.client_log else {}
        super().__init__(topic, partitions, rate, f"queue-{process}", {
            "bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": idempotent,
            "request.timeout.ms": 5_000, "topic.metadata.refresh.interval.ms": 1000,
            **debug, **(conf or {})})
        history.opened(process, "producer", idempotent)

    def _on_error(self, err: Any) -> None:
        if err.fatal():
            self.fatal = str(err)

    def _more(self, sent: int) -> bool:
        return self.fatal is None

    def _report(self, sid: int, err: Any, msg: Any) -> None:
        outcome = classify(err)
        if outcome == "ok":
            if msg.offset() is None:   # written, offset unknown (e.g. the broker's answer
                self.history.send_unknown(sid, "DELIVERED_OFFSET_UNKNOWN")   # to a duplicate)
            else:
                self.history.send_ok(sid, msg.offset())
            return
        self.errors[err.name()] = self.errors.get(err.name(), 0) + 1
        if outcome == "fail":
            self.history.send_failed(sid, err.name())
        else:
            self.history.send_unknown(sid, err.name())

    def send_one(self, p: int) -> None:
        from confluent_kafka import KafkaException

        value = self.next[p]
        self.next[p] += 1
        sid = self.history.send_invoked(self.process, p, value)
        try:
            self._produce(str(value).encode(), p, partial(self._report, sid))
        except KafkaException as e:          # refused by the client: never queued
            self.history.send_failed(sid, e.args[0].name())

    def stop(self, flush_timeout: float = 60.0) -> int:
        """Stop sending and wait for outstanding reports; then purge what is left (its
        reports say purged: fail if never sent, unknown if in flight) -> how many were
        still undelivered when the flush gave up."""
        self._halt(10)
        left = int(self.producer.flush(flush_timeout))
        if left:
            self.producer.purge()
            self.producer.flush(5)
        return left

    def close(self) -> None:
        """Stop (at once if not stopped yet: what is queued is purged) and destroy the
        client, so that none of librdkafka's threads is left in the client host."""
        if not self._stop.is_set():
            self.stop(1.0)
        self.producer.close()


class QueueConsumer(ConsumerThread):
    """One consumer process: assigned every partition from offset 0 (no group), polling
    in a thread; every non-empty poll goes to ``history.polled`` with int values."""

    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int],
                 history: QueueHistory, process: str = "consumer") -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        self.history, self.process, self.partitions = history, process, list(partitions)
        self.high: dict[int, int] = {}           # partition -> next offset after what was read
        super().__init__(reader_conf(bootstrap, f"queue-{uuid.uuid4().hex[:6]}", 1000),
                         f"queue-{process}")
        history.opened(process, "consumer")
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        history.assigned(process, self.partitions)

    def _read(self, msgs: list[Any]) -> None:
        recs = [(m.partition(), m.offset(), int(m.value())) for m in msgs]
        self.history.polled(self.process, recs)
        self.count += len(recs)
        for p, o, _ in recs:
            self.high[p] = max(self.high.get(p, 0), o + 1)


class GroupConsumer(ConsumerThread):
    """One member of consumer group ``group``, subscribed to ``topic`` (the eager
    range/roundrobin assignors: a rebalance revokes, then assigns, whole assignments).
    It records, in its own process:

      open, subscribe   each new client (the first, and each ``restart``)
      rebalance         from on_revoke / on_lost (the partitions taken) and on_assign
                        (the partitions given; reading resumes at the group's commit)
      poll              what it read
      commit            the positions it committed, once the broker accepted them; it
                        commits every ``commit_interval`` seconds, one commit at a time

    It polls one message at a time into a buffer that becomes one poll op when it
    holds 500 records, when the queue runs dry, and before a commit or a rebalance is
    recorded, so each poll op lies wholly within one assignment. (A batch ``consume``
    serves the rebalance callback in the middle of its batch, and could return records
    read before a revoke with records read after the next assign.)"""

    def __init__(self, bootstrap: str, topic: str, history: QueueHistory, group: str,
                 process: str = "group", commit_interval: float = 1.0,
                 conf: dict[str, Any] | None = None) -> None:
        self.topic, self.history, self.process = topic, history, process
        self.group, self.commit_interval = group, commit_interval
        self.assignment: frozenset[int] = frozenset()   # replaced whole: other threads read it
        self.position: dict[int, int] = {}       # assigned partition -> next offset to read
        self.rebalances = self.commits = self.restarts = 0
        self.commit_errors: dict[str, int] = {}
        self._buf: list[tuple[int, int, int]] = []
        self._committing = False                 # a commit is in flight
        self.generation = 0                      # the current client's; callbacks check it
        self.unclosed = 0                        # clients whose close timed out
        super().__init__({**reader_conf(bootstrap, group, 1000),
                          "session.timeout.ms": 10_000, "heartbeat.interval.ms": 1000,
                          **(conf or {})}, f"queue-{process}")

    def _connect(self) -> None:
        self.generation += 1
        gen = self.generation
        self.conf = {**self.conf, "on_commit": lambda err, parts: self._on_commit(
            gen, err, parts)}
        super()._connect()
        self._committing = False
        self.history.opened(self.process, "consumer")
        self.consumer.subscribe(
            [self.topic], on_assign=lambda _, parts: self._on_rebalance(gen, parts, True),
            on_revoke=lambda _, parts: self._on_rebalance(gen, parts, False),
            on_lost=lambda _, parts: self._on_rebalance(gen, parts, False))
        self.history.subscribed(self.process)

    # The callbacks run in the thread that polls (or closes) the client. A client
    # whose close timed out (``stop``) may still call them later: they ignore it.
    def _on_rebalance(self, gen: int, partitions: list[Any], assigned: bool) -> None:
        """on_assign (``assigned``), on_revoke and on_lost."""
        if gen != self.generation:
            return
        self._flush()
        parts = [tp.partition for tp in partitions]
        if assigned:
            self.history.rebalanced(self.process, assigned=parts)
            self.assignment = self.assignment | set(parts)
        else:
            self.history.rebalanced(self.process, revoked=parts)
            self.assignment = self.assignment - set(parts)
            for p in parts:
                self.position.pop(p, None)
        self.rebalances += 1

    def _flush(self) -> None:
        if self._buf:
            self.history.polled(self.process, self._buf)
            self.count += len(self._buf)
            self._buf = []

    def _commit(self) -> None:
        """Commit the positions read in the current assignment (``_on_commit`` records
        what the broker accepted).

        Asynchronously, though one at a time: a synchronous commit waits for the group
        coordinator, however long (measured: still blocked after 85 s with the brokers
        paused), so a fault would hang the thread inside the client and ``restart`` /
        ``stop`` could not close it."""
        from confluent_kafka import KafkaException, TopicPartition

        offsets = [TopicPartition(self.topic, p, o) for p, o in sorted(self.position.items())
                   if p in self.assignment]
        if self._committing or not offsets:
            return
        try:
            self.consumer.commit(offsets=offsets, asynchronous=True)
            self._committing = True
        except KafkaException as e:
            self._commit_failed(e.args[0].name())

    def _on_commit(self, gen: int, err: Any, partitions: list[Any]) -> None:
        if gen != self.generation:
            return
        self._committing = False
        if err is not None:
            self._commit_failed(err.name())
            return
        ok = {tp.partition: tp.offset for tp in partitions
              if tp.error is None and tp.offset >= 0}
        if ok:
            self._flush()
            self.history.committed(self.process, ok)
            self.commits += 1

    def _commit_failed(self, name: str) -> None:
        self.commit_errors[name] = self.commit_errors.get(name, 0) + 1

    def _run(self) -> None:
        next_commit = time.monotonic() + self.commit_interval
        while not self._stop.is_set():
            m = self.consumer.poll(0.1)
            if m is not None and m.error() is None:
                self._take(m)
            if m is None or len(self._buf) >= 500:
                self._flush()
            if time.monotonic() >= next_commit:
                self._flush()
                self._commit()
                next_commit = time.monotonic() + self.commit_interval
        self._flush()

    def _take(self, m: Any) -> None:
        p, o = m.partition(), m.offset()
        self._buf.append((p, o, int(m.value())))
        self.position[p] = o + 1

    def stop(self, close_timeout: float = 30.0) -> None:
        """Stop polling and close the client. The close waits for a commit in flight,
        that is for the group coordinator (with every broker paused, until they go on):
        after ``close_timeout`` s it goes on in the background, counted in
        ``unclosed``, and the client's callbacks are ignored from then on."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(10)
        closer = threading.Thread(target=self.consumer.close, daemon=True,
                                  name=f"{self.thread_name}-close")
        closer.start()
        closer.join(close_timeout)
        if closer.is_alive():
            self.generation += 1
            self.unclosed += 1

    def restart(self, close_timeout: float = 30.0) -> GroupConsumer:
        """Close the client (it leaves the group: its partitions are revoked) and open a
        new one, subscribed afresh: a new session. On virtual hosts call it inside the
        client host, as ``start``."""
        self.stop(close_timeout)
        self.assignment = frozenset()
        self.position.clear()
        self._connect()
        self.restarts += 1
        return self.start()


def final_reads(fc: FaultCluster, topic: str, partitions: Sequence[int],
                history: QueueHistory) -> dict[int, int]:
    """Read every partition whole (below the HW, from its current leader; call after
    the heal) into ``history.final_read``, values as ints -> partition: records read."""
    out: dict[int, int] = {}
    for p in partitions:
        recs = fc.read_partition(topic, p)
        history.final_read(p, [(o, int(v)) for o, v in recs if v is not None])
        out[p] = len(recs)
    return out


__all__ = ["DEFINITELY_NOT_WRITTEN", "GroupConsumer", "QueueConsumer", "QueueProducer",
           "classify", "final_reads"]
