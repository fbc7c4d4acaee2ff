"""The workload and the end-of-run check for the fault tests (tests/fault/cluster_faults.py
runs the cluster).

``LoadProducer`` (confluent-kafka, enable.idempotence, acks=all) records every delivery
callback in a ``checker.History``; ``LiveConsumer`` reads along and records what it
saw; ``Monitor`` samples HW / ISR / replica LEOs into a ``checker.InvariantMonitor``.
``final_check`` reads every partition back and runs the checker, the invariant
monitor and the byte comparison of the replicas' logs.

The clients are built on ``PacedProducer`` (a producer and its paced sending thread)
and ``ConsumerThread`` (a consumer and its polling thread), which the queue workload
(tests/fault/queue_workload.py) shares.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Self

from tests.fault import checker
from tests.fault.cluster_faults import FaultCluster, FaultError, wait_for


# --------------------------------------------------------------------------------------
# what the fault tests' clients share (tests/fault/queue_workload.py builds on it too)

# librdkafka's syslog level: 2 (critical) keeps its stream of connect failures (level 3)
# out of the fault runs' output; the histories record every outcome that matters
LOG_LEVEL = 2

PRODUCER_CONF: dict[str, Any] = {
    # batch.size below the harness's 256 KiB segments: a larger batch is refused
    # with RECORD_LIST_TOO_LARGE (as Kafka does), e.g. a backlog after an outage
    "linger.ms": 2, "batch.size": 64 * 1024,
    "message.timeout.ms": 60_000, "retry.backoff.ms": 50, "retry.backoff.max.ms": 500,
    "log_level": LOG_LEVEL}


def reader_conf(bootstrap: str, group: str, refresh_ms: int) -> dict[str, Any]:
    """A consumer's config: ``group``, no automatic commits, from the earliest offset
    when nothing is committed, short fetch waits."""
    return {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": refresh_ms,
            "log_level": LOG_LEVEL, "fetch.wait.max.ms": 100}


class PacedProducer:
    """A confluent-kafka producer and the thread that drives it: ``send_one(p)`` for
    each of ``partitions`` in turn, ``rate`` records/s in all (None = as fast as the
    queue takes them), until stopped or ``_more`` says no. Subclasses send and
    record; ``conf`` goes over ``PRODUCER_CONF``."""

    def __init__(self, topic: str, partitions: Sequence[int], rate: float | None,
                 thread_name: str, conf: dict[str, Any]) -> None:
        from confluent_kafka import Producer

        self.topic, self.partitions, self.rate = topic, list(partitions), rate
        self.thread_name = thread_name
        self.errors: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.producer = Producer({**PRODUCER_CONF, "error_cb": self._on_error, **conf})

    def _on_error(self, err: Any) -> None:
        """librdkafka's error callback (fatal errors matter; the rest it retries)."""

    def _more(self, sent: int) -> bool:
        """Whether to go on after ``sent`` records."""
        return True

    def send_one(self, p: int) -> None:
        raise NotImplementedError

    def _produce(self, value: bytes, p: int, on_delivery: Callable[[Any, Any], None]) -> None:
        """Queue one record, polling while the client's queue is full."""
        while True:
            try:
                self.producer.produce(self.topic, value, partition=p, on_delivery=on_delivery)
                return
            except BufferError:
                self.producer.poll(0.05)

    def _run(self) -> None:
        sent, t0 = 0, time.monotonic()
        while not self._stop.is_set() and self._more(sent):
            for p in self.partitions:
                self.send_one(p)
                sent += 1
            self.producer.poll(0)
            if self.rate:
                ahead = sent / self.rate - (time.monotonic() - t0)
                if ahead > 0:
                    self._stop.wait(ahead)

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def _halt(self, join_timeout: float) -> None:
        """Stop sending (the client is left as it is)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(join_timeout)


class ConsumerThread:
    """A confluent-kafka consumer and the thread that polls it (``_run``: batches of
    good messages to ``_read``). ``_connect`` makes both; ``stop`` ends the thread
    and closes the client."""

    def __init__(self, conf: dict[str, Any], thread_name: str) -> None:
        self.conf, self.thread_name = conf, thread_name
        self.count = 0
        self._connect()

    def _connect(self) -> None:
        from confluent_kafka import Consumer

        self._stop = threading.Event()
        self.consumer = Consumer(self.conf)
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            msgs = [m for m in self.consumer.consume(500, 0.2) if m.error() is None]
            if msgs:
                self._read(msgs)

    def _read(self, msgs: list[Any]) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


# --------------------------------------------------------------------------------------
# load


class LoadProducer(PacedProducer):
    """confluent-kafka, enable.idempotence=true, acks=all, in a thread: round-robin over
    ``partitions``, values from ``checker.make_value``; every delivery report goes to
    ``history``. ``rate`` = records/s (None = as fast as the queue allows)."""

    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int],
                 history: checker.History, tag: str | None = None, value_size: int = 100,
                 rate: float | None = 500.0, max_records: int = 10_000_000,
                 conf: dict[str, Any] | None = None) -> None:
        self.history = history
        self.tag = tag or f"p{uuid.uuid4().hex[:6]}"
        self.value_size, self.max_records = value_size, max_records
        self.seq = {p: 0 for p in partitions}
        super().__init__(topic, partitions, rate, f"load-{self.tag}", {
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "request.timeout.ms": 10_000, "topic.metadata.refresh.interval.ms": 2000,
            **(conf or {})})

    def _on_error(self, err: Any) -> None:
        if err.fatal():
            self.history.on_fatal(str(err))

    def _more(self, sent: int) -> bool:
        return sent < self.max_records and not self.history.fatal

    def _report(self, err: Any, msg: Any) -> None:
        value = msg.value()
        if err is not None:
            self.errors[err.name()] = self.errors.get(err.name(), 0) + 1
            self.history.on_error(value, str(err))
        else:
            self.history.on_ack(value, msg.partition(), msg.offset())

    def send_one(self, p: int) -> None:
        value = checker.make_value(self.tag, p, self.seq[p], self.value_size)
        self.seq[p] += 1
        self.history.on_send()
        self._produce(value, p, self._report)

    def stop(self, flush_timeout: float = 60.0) -> int:
        """Stop sending, wait for outstanding deliveries; -> records still undelivered."""
        self._halt(10)
        return int(self.producer.flush(flush_timeout))

    def close(self) -> None:
        """Teardown after a failure: stop at once, drop what is queued."""
        self._halt(5)
        self.producer.purge()
        self.producer.flush(1)

    def drain(self, timeout: float = 60.0) -> int:
        """Let the thread send its ``max_records`` (bounded by ``timeout``), then
        ``stop``; -> records still undelivered."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.stop(timeout)

    def sent(self) -> int:
        return sum(self.seq.values())


class LiveConsumer(ConsumerThread):
    """A confluent-kafka consumer (assign, no group commits) reading every partition
    from the start while faults happen; what it sees goes to ``history.on_seen``."""

    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int],
                 history: checker.History) -> None:
        from confluent_kafka import TopicPartition

        self.history = history
        super().__init__(reader_conf(bootstrap, f"live-{uuid.uuid4().hex[:6]}", 2000),
                         "live-consumer")
        self.consumer.assign([TopicPartition(topic, p, 0) for p in partitions])

    def _read(self, msgs: list[Any]) -> None:
        for m in msgs:
            self.history.on_seen(m.partition(), m.offset(), m.value())
            self.count += 1


class Monitor:
    """Samples every partition every ``interval`` s into an InvariantMonitor.

    Per partition: the committed state from ZooKeeper (leader, epoch, ISR, znode
    version), then the leader's HW (ListOffsets latest), then each ISR member's LEO
    from its files, then the znode again. A sample counts only when the znode
    version did not change meanwhile, so the ISR it is checked against was the
    committed one for the whole sample (brokers' Metadata caches may lag the
    controller, which would make false alarms). Errors skip the sample."""

    def __init__(self, fc: FaultCluster, topic: str, partitions: Sequence[int],
                 interval: float = 0.25) -> None:
        self.fc, self.topic, self.partitions, self.interval = fc, topic, list(partitions), interval
        self.inv = checker.InvariantMonitor()
        self.skipped = 0
        self.last_error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="monitor", daemon=True)
        self.t0 = time.monotonic()

    def sample_once(self) -> None:
        for p in self.partitions:
            try:
                self.sample_partition(p)
            except Exception as e:  # noqa: BLE001 - a broker went away mid-sample
                self.skipped += 1
                self.last_error = f"{type(e).__name__}: {e}"

    def sample_partition(self, p: int) -> None:
        state, version = self.fc.zk_partition_state_versioned(self.topic, p)
        leader = int(state["leader"])
        if leader < 0 or leader in self.fc.paused:
            return
        err, hw = self.fc.list_offset(leader, self.topic, p)
        if err != 0:
            return
        isr = tuple(int(r) for r in state["isr"])
        leos = {r: self.fc.disk_leo(r, self.topic, p) for r in isr}
        if self.fc.zk_partition_state_versioned(self.topic, p)[1] != version:
            self.skipped += 1
            return
        self.inv.observe(checker.Sample(p, leader, int(state["leader_epoch"]), isr, hw, leos,
                                        time.monotonic() - self.t0))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sample_once()
            except Exception as e:  # noqa: BLE001 - a broker went away mid-sample
                self.skipped += 1
                self.last_error = f"{type(e).__name__}: {e}"

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(10)
        return self.inv.violations


# --------------------------------------------------------------------------------------
# the end of a run


@dataclass
class FinalResult:
    report: checker.Report
    invariant_violations: list[str]
    log_problems: list[str]
    hws: dict[int, int]

    @property
    def ok(self) -> bool:
        return self.report.ok and not self.invariant_violations and not self.log_problems

    def summary(self) -> str:
        lines = [self.report.summary()]
        lines += [f"  invariant: {v}" for v in self.invariant_violations[:10]]
        lines += [f"  logs: {v}" for v in self.log_problems[:10]]
        return "\n".join(lines)


def final_check(fc: FaultCluster, topic: str, partitions: Sequence[int],
                history: checker.History, monitor: Monitor | None = None,
                converge_timeout: float = 60.0, compare_logs: bool = True,
                require_full_isr: bool = True) -> FinalResult:
    """After the load stopped: wait for full ISRs (or only for live leaders), read
    every partition back and run the checker; then stop the cluster cleanly
    (SIGTERM, so HW checkpoints are written) and compare the replicas' files byte
    for byte below the HW."""
    if require_full_isr:
        fc.wait_isr_full(topic, len(partitions), converge_timeout)
    else:
        fc.wait_leaders(topic, partitions, set(), converge_timeout)
    final: dict[int, list[tuple[int, bytes | None]]] = {}
    hws: dict[int, int] = {}
    for p in partitions:
        final[p] = fc.read_partition(topic, p)
        err, hws[p] = fc.list_offset(fc.leader(topic, p), topic, p)
    inv = monitor.stop() if monitor is not None else []
    if monitor is not None:
        for p, hw in hws.items():
            monitor.inv.check_final(p, hw)
        inv = monitor.inv.violations
    report = checker.check(history, final)
    problems: list[str] = []
    if compare_logs:
        md = fc.metadata(topic)
        replicas = {p: [fc.broker(r) for r in md[p].replicas] for p in partitions}

        def caught_up() -> bool:    # no writes any more: every replica at the same LEO
            return all(len({fc.disk_leo(b.broker_id, topic, p) for b in replicas[p]}) == 1
                       for p in partitions)
        with contextlib.suppress(FaultError):
            wait_for("replicas' LEOs equal", caught_up, 20.0, 0.2)
        fc.stop()    # SIGTERM: the HW checkpoints are written on the way out
        for p in partitions:
            reps = {b.broker_id: checker.read_partition_dir(fc.partition_dir(b, topic, p))
                    for b in replicas[p]}
            cps = {b.broker_id: fc.checkpointed_hw(b, topic, p) for b in replicas[p]}
            hw = max([hws[p]] + [h for h in cps.values() if h is not None])
            for bid, h in cps.items():
                end = reps[bid][-1].last_offset + 1 if reps[bid] else 0
                if h is not None and h > end:
                    problems.append(f"p{p}: broker {bid} checkpointed HW {h} > its LEO {end}")
            problems += checker.compare_replica_logs(reps, hw, label=f"p{p}:")
    return FinalResult(report, inv, problems, hws)
