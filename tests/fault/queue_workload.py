"""A Jepsen-style queue workload for tests/fault/queue_checker.py (issue 16, item 3).

``QueueProducer`` (confluent-kafka; acks and idempotence chosen by the test) sends, to
each partition of one topic, the ints ``base, base + 1, ...`` (as str bytes) and records
every send in a ``QueueHistory``; ``QueueConsumer`` (manual assign of every partition,
from the beginning, no group) records each poll; ``final_reads`` reads every partition
whole at the end. On virtual hosts build the clients with ``NetFaultCluster.in_client``
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
read of it G1a. The default ``retries`` is kept; pass ``conf={"retries": 0}`` where that
matters.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

from tests.fault.cluster_faults import FaultCluster
from tests.fault.queue_history import QueueHistory

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


class QueueProducer:
    """One producer process: a thread that sends one value per partition per round,
    ``rate`` values/s in all (None = as fast as the queue takes them)."""

    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int],
                 history: QueueHistory, process: str = "producer", acks: str = "all",
                 idempotent: bool = True, rate: float | None = 200.0, base: int = 0,
                 conf: dict[str, Any] | None = None) -> None:
        from confluent_kafka import Producer

        self.topic, self.partitions, self.history = topic, list(partitions), history
        self.process, self.rate = process, rate
        self.next = {p: base for p in self.partitions}
        self.errors: dict[str, int] = {}
        self.fatal: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": idempotent,
            "linger.ms": 2, "batch.size": 64 * 1024,
            "message.timeout.ms": 60_000, "request.timeout.ms": 5_000,
            "retry.backoff.ms": 50, "retry.backoff.max.ms": 500,
            "topic.metadata.refresh.interval.ms": 1000,
            "error_cb": self._on_error, "log_level": 3, **(conf or {})})
        history.opened(process, "producer", idempotent)

    def _on_error(self, err: Any) -> None:
        if err.fatal():
            self.fatal = str(err)

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
        while True:
            try:
                self.producer.produce(self.topic, str(value).encode(), partition=p,
                                      on_delivery=lambda err, msg, sid=sid:
                                      self._report(sid, err, msg))
                return
            except BufferError:
                self.producer.poll(0.05)
            except KafkaException as e:          # refused by the client: never queued
                self.history.send_failed(sid, e.args[0].name())
                return

    def _run(self) -> None:
        sent, t0 = 0, time.monotonic()
        while not self._stop.is_set() and self.fatal is None:
            for p in self.partitions:
                self.send_one(p)
                sent += 1
            self.producer.poll(0)
            if self.rate:
                ahead = sent / self.rate - (time.monotonic() - t0)
                if ahead > 0:
                    self._stop.wait(ahead)

    def start(self) -> QueueProducer:
        self._thread = threading.Thread(target=self._run, name=f"queue-{self.process}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, flush_timeout: float = 60.0) -> int:
        """Stop sending and wait for outstanding reports; then purge what is left (its
        reports say purged: fail if never sent, unknown if in flight) -> how many were
        still undelivered when the flush gave up."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
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


class QueueConsumer:
    """One consumer process: assigned every partition from offset 0 (no group), polling
    in a thread; every non-empty poll goes to ``history.polled`` with int values."""

    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int],
                 history: QueueHistory, process: str = "consumer") -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        self.history, self.process, self.partitions = history, process, list(partitions)
        self.count = 0
        self.high: dict[int, int] = {}           # partition -> next offset after what was read
        self._stop = threading.Event()
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": f"queue-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 1000, "log_level": 3,
            "fetch.wait.max.ms": 100})
        history.opened(process, "consumer")
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        history.assigned(process, self.partitions)
        self._thread = threading.Thread(target=self._run, name=f"queue-{process}", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            recs = [(m.partition(), m.offset(), int(m.value()))
                    for m in self.consumer.consume(500, 0.2) if m.error() is None]
            if recs:
                self.history.polled(self.process, recs)
                self.count += len(recs)
                for p, o, _ in recs:
                    self.high[p] = max(self.high.get(p, 0), o + 1)

    def start(self) -> QueueConsumer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


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


__all__ = ["DEFINITELY_NOT_WRITTEN", "QueueConsumer", "QueueProducer", "classify",
           "final_reads"]
