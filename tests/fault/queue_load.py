"""A mixed queue load on one topic (issue 16, item 3): several producers and consumers
recording one Jepsen-style history (tests/fault/queue_history.py) for the queue checker
(tests/fault/queue_checker.py).

    load = QueueLoad(fc.bootstrap, "q", range(6), QueueHistory(), make=fc.in_client)
    load.start()
    ...                                  # faults; now and then load.restart_consumer()
    load.stop(); load.final_reads(fc); report = load.check(); load.save(path)

The load, by default (tests/fault/queue_workload.py has the clients):

  producer-0, producer-1   idempotent, acks=all
  producer-2               not idempotent, acks=all, one attempt per value: our own
                           client (tests/fault/single_shot_producer.py)
  consumer                 assigned every partition from the start, no group
  group-0, group-1         members of one consumer group: subscribed, committing

Each producer sends to every partition in turn, ``rate`` values/s in all. Producer k's
values are k * 1_000_000_000 + 0, 1, 2, ..., so that values stay unique per partition
(the checker needs that) and interleave in each partition's log.

Settings under which a correct broker yields no anomaly. A non-idempotent producer that
retries a send whose first attempt had an unknown outcome (a timeout, a lost
connection, NOT_ENOUGH_REPLICAS_AFTER_APPEND) may write the value twice, which the
checker rightly calls duplicate (and, when the last attempt's error is one that means
"never appended", a read of the first attempt G1a). Kafka accepts that: it is
at-least-once delivery. librdkafka resends even with retries=0 (the campaign caught it:
see single_shot_producer.py), so the non-idempotent producer is our own client making
exactly one attempt per value: "fail" means the broker refused it, "info" that it may or
may not be in the log, which the checker allows; its rounds are sequential, as a Jepsen
client's sends. The idempotent producers keep librdkafka's retries: their duplicates
are dropped by the broker, which is one of the things under test.

``make(fn)`` runs ``fn`` and returns its result (default: calls it). Every client is
built and started through it, and a group consumer restarted through it, so that with
``make=fc.in_client`` (a NetFaultCluster) librdkafka's threads live in the client host.
"""

from __future__ import annotations

import contextlib
import random
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Protocol, TypeVar

from tests.fault import queue_checker, queue_workload
from tests.fault.availability import AckTimes
from tests.fault.cluster_faults import FaultCluster
from tests.fault.queue_history import QueueHistory
from tests.fault.queue_workload import GroupConsumer, QueueConsumer, QueueProducer
from tests.fault.single_shot_producer import SingleShotProducer

T = TypeVar("T")

BASE_STRIDE = 1_000_000_000       # producer k's values start at k * BASE_STRIDE


class Make(Protocol):
    def __call__(self, fn: Callable[[], T], /) -> T: ...


def _direct(fn: Callable[[], T]) -> T:
    return fn()


class QueueLoad:
    """The producers, the assigned consumer and the group of the module docstring, on
    ``topic`` (which must exist), recording into ``history``. ``idempotent`` has one
    entry per producer; ``members`` is the group's size; ``seed`` drives the choice of
    the consumer to restart."""

    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int],
                 history: QueueHistory, make: Make = _direct, rate: float = 200.0,
                 idempotent: Sequence[bool] = (True, True, False), members: int = 2,
                 group: str | None = None, seed: int | None = None,
                 log_dir: Path | None = None) -> None:
        self.bootstrap, self.topic, self.history = bootstrap, topic, history
        self.log_dir = log_dir      # the idempotent producers' whole librdkafka eos logs
        self.partitions = list(partitions)
        self.make, self.rate, self.idempotent = make, rate, tuple(idempotent)
        self.members = members
        self.group = group or f"queue-load-{uuid.uuid4().hex[:6]}"
        self.rnd = random.Random(seed)
        self.producers: list[QueueProducer | SingleShotProducer] = []
        self.consumer: QueueConsumer | None = None
        self.group_consumers: list[GroupConsumer] = []
        self.ack_times = AckTimes(history)

    def start(self) -> QueueLoad:
        """Build and start every client (through ``make``)."""
        for k, idem in enumerate(self.idempotent):
            self.producers.append(self.make(partial(self._producer, k, idem)))
        self.consumer = self.make(lambda: QueueConsumer(
            self.bootstrap, self.topic, self.partitions, self.history, "consumer").start())
        for i in range(self.members):
            self.group_consumers.append(self.make(partial(self._member, i)))
        return self

    def _producer(self, k: int, idempotent: bool) -> QueueProducer | SingleShotProducer:
        if not idempotent:
            return SingleShotProducer(self.bootstrap, self.topic, self.partitions,
                                      self.history, f"producer-{k}", rate=self.rate,
                                      base=k * BASE_STRIDE).start()
        return QueueProducer(
            self.bootstrap, self.topic, self.partitions, self.history, f"producer-{k}",
            acks="all", idempotent=True, rate=self.rate, base=k * BASE_STRIDE,
            log_dir=self.log_dir).start()

    def _member(self, i: int) -> GroupConsumer:
        return GroupConsumer(self.bootstrap, self.topic, self.history, self.group,
                             f"group-{i}").start()

    def stop(self, flush_timeout: float = 60.0, catch_up: float = 10.0) -> int:
        """Stop the producers (each waits for its outstanding reports, sharing
        ``flush_timeout``), give the assigned consumer up to ``catch_up`` s to read
        past every acknowledged offset, then stop the consumers. -> how many sends
        were still undelivered when the flush gave up (purged: their reports say so)."""
        deadline = time.monotonic() + flush_timeout
        left = sum(p.stop(max(1.0, deadline - time.monotonic())) for p in self.producers)
        if self.consumer is not None and catch_up > 0:
            ends = self._acked_ends()
            consumer = self.consumer
            deadline = time.monotonic() + catch_up
            while time.monotonic() < deadline and any(
                    consumer.high.get(p, 0) < end for p, end in ends.items()):
                time.sleep(0.1)
        for c in self._consumers():
            c.stop()
        return left

    def close(self) -> None:
        """Teardown, also after a failure: stop everything at once (a producer's queue is
        purged) and destroy the producers' clients."""
        for p in self.producers:
            with contextlib.suppress(Exception):
                p.close()
        for c in self._consumers():
            with contextlib.suppress(Exception):
                c.stop()

    def restart_consumer(self) -> str:
        """Restart one group consumer, chosen at random (a new client: it leaves the
        group and joins again) -> its process name."""
        g = self.rnd.choice(self.group_consumers)
        self.make(g.restart)
        return g.process

    def final_reads(self, fc: FaultCluster) -> dict[int, int]:
        """Every partition read whole into the history (after the heal) -> records
        read per partition."""
        return queue_workload.final_reads(fc, self.topic, self.partitions, self.history)

    def check(self) -> queue_checker.QueueReport:
        return queue_checker.check(self.history)

    def save(self, path: str | Path) -> None:
        self.history.save(path)

    def acked_since(self, t: float) -> dict[int, float]:
        """For each partition, the monotonic time of the first acknowledgement of a
        send invoked at or after ``t`` (``availability.AckTimes``). Partitions with
        none yet are missing."""
        return self.ack_times.first_acks(self.partitions, t)  # type: ignore[return-value]

    def acked(self) -> dict[str, dict[int, int]]:
        """Producer -> partition -> sends acknowledged so far."""
        out: dict[str, dict[int, int]] = {p.process: {} for p in self.producers}
        for op in self.history.snapshot():
            if op.kind == "send" and op.type == "ok" and isinstance(op.partition, int):
                mine = out.setdefault(op.process, {})
                mine[op.partition] = mine.get(op.partition, 0) + 1
        return out

    def summary(self) -> str:
        """One line per client: what it did and the errors it met."""
        lines = [f"{p.process}: idempotent={idem}, errors {p.errors}, fatal {p.fatal}"
                 for p, idem in zip(self.producers, self.idempotent, strict=True)]
        if self.consumer is not None:
            lines.append(f"consumer: read {self.consumer.count}")
        lines += [f"{g.process}: read {g.count}, {g.rebalances} rebalances, {g.commits} "
                  f"commits, {g.restarts} restarts ({g.unclosed} closes timed out), "
                  f"commit errors {g.commit_errors}"
                  for g in self.group_consumers]
        return "\n".join(lines)

    def client_logs(self, last: int = 150) -> str:
        """The last lines of each idempotent producer's librdkafka idempotence log
        (``debug=eos``): epoch bumps and sequence errors, for a failure message."""
        out = []
        for p in self.producers:
            log = p.client_log if isinstance(p, QueueProducer) else None
            if log is not None and log.lines:
                out.append(f"{p.process} librdkafka eos log (last {last}):")
                out += [f"  {line}" for line in list(log.lines)[-last:]]
        return "\n".join(out)

    def _consumers(self) -> list[QueueConsumer | GroupConsumer]:
        return [*([self.consumer] if self.consumer is not None else []),
                *self.group_consumers]

    def _acked_ends(self) -> dict[int, int]:
        """Partition -> one past the highest acknowledged offset."""
        ends: dict[int, int] = {}
        for op in self.history.snapshot():
            if op.kind == "send" and op.type == "ok" and isinstance(op.partition, int):
                ends[op.partition] = max(ends.get(op.partition, 0), max(op.offsets) + 1)
        return ends


__all__ = ["BASE_STRIDE", "Make", "QueueLoad"]
