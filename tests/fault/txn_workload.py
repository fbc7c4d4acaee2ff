"""The transactional fault campaign's load (tests/fault/txn_campaign.py), with
confluent-kafka (librdkafka):

- ``prefill``: the input topic filled with uniquely valued records (idempotent, acks=all).
- ``Processor``: one consume-transform-produce loop in a thread: a read_committed
  consumer assigned its input partitions, a transactional producer; each round polls a
  batch, begins, produces ``<input>|<tag>`` to the output, sends the consumer's
  positions with the transaction, commits. An abortable error aborts and rewinds the
  consumer to the group's committed (stable) offsets; a fatal one (fenced, or a
  producer that cannot go on) makes a new producer with the same transactional id (a
  new incarnation: its init fences and aborts the old one) and rewinds too. A
  retriable commit error retries the commit, as librdkafka documents. Every
  transactional call runs bounded (``_bounded``): librdkafka's
  send_offsets_to_transaction can wait for ever past its timeout when the group
  coordinator went down (confluentinc/librdkafka#5456: the coordinator request's
  timeout is never checked; #5511: its lookup is re-tried only on another broker's
  state change; seen here as the campaign's stalls, the processor blocked in that
  call while every broker answered). librdkafka 2.16 adds a third way (seen in a
  ``TXN_CAMPAIGN_DEBUG=eos,protocol,broker`` run): when three kills within a few
  seconds leave the producer with no connection up to any broker, it re-bootstraps
  (KIP-1102: "Decommissioning 3 broker(s): re-bootstrap"); one decommissioned broker
  handle never finishes terminating ("Handle is terminating ... 2 refcnts", logged
  every millisecond), and after AddOffsetsToTxn succeeds no FindCoordinator or
  TxnOffsetCommit is ever sent, while all three brokers answer. A call still running
  ``HANG_S`` after its own timeout is abandoned with its producer (the thread stuck
  inside keeps it alive) and a new incarnation takes over, fencing it; counted as
  ``hangs``.
- ``Observer``: a read_committed consumer reading the output while the run goes on,
  every record with the time it was read (the checker's G1a and uncommitted reads).
- ``read_log``: the output read to its end at one isolation level.
- ``txn_coordinator``: the broker coordinating a transactional id (FindCoordinator).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from protocol.api_keys import ApiKey
from tests.fault.cluster_faults import FaultCluster
from tests.fault.txn_checker import Rec, TxnHistory, out_value

TXN_TIMEOUT_MS = 10000
CALL_TIMEOUT_S = 30       # what each transactional call is given
# send_offsets_to_transaction gets the transaction timeout: past it the coordinator
# has aborted the transaction (its epoch bumped), so a later success could only end
# in a fenced commit; waiting longer only lengthens the client bug's hang below
OFFSETS_TIMEOUT_S = TXN_TIMEOUT_MS // 1000
HANG_S = 15               # past that, the call is taken as hung (see the docstring)


class ClientHang(Exception):
    """A librdkafka call still running ``HANG_S`` after its own timeout."""


def _bounded(what: str, call: Callable[[], Any], timeout: float = CALL_TIMEOUT_S) -> Any:
    """``call()`` (given ``timeout`` s) in a thread of its own; its result or exception,
    or ClientHang when it has not returned within ``timeout`` + HANG_S (the thread is
    left running)."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = call()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            out["error"] = e
    t = threading.Thread(target=target, name=f"bounded-{what}", daemon=True)
    t.start()
    t.join(timeout + HANG_S)
    if t.is_alive():
        raise ClientHang(f"{what} still running {timeout + HANG_S:g} s after its call "
                         f"(timeout {timeout:g} s)")
    if "error" in out:
        raise out["error"]
    return out.get("value")


def input_values(n: int) -> list[bytes]:
    """The campaign's input records: value i goes to partition i % partitions."""
    return [b"in-%07d" % i for i in range(n)]


def prefill(bootstrap: str, topic: str, partitions: int, n: int, start: int = 0
            ) -> list[bytes]:
    """Produce inputs ``start`` .. ``n - 1`` (idempotent, acks=all); returns them all."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                  "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    values = input_values(n)
    failed: list[Any] = []
    for i, v in enumerate(values[start:], start):
        while True:
            try:
                p.produce(topic, value=v, partition=i % partitions,
                          on_delivery=lambda e, _m: e is not None and failed.append(e))
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(120) or failed:
        raise RuntimeError(f"prefill: {len(failed)} failed ({failed[:1]})")
    return values


def stable_ends(bootstrap: str, topic: str, partitions: Sequence[int]) -> dict[int, int]:
    """The partitions' last stable offsets as the leaders answer ListOffsets
    read_committed now ({} when no broker answers)."""
    import asyncio

    from client.admin import KafkaAdmin

    async def ask() -> dict[int, int]:
        admin = KafkaAdmin(bootstrap, timeout=5)
        try:
            got = await admin.list_offsets({(topic, p): -1 for p in partitions},
                                           isolation_level=1)
            return {p: got[(topic, p)].offset for p in partitions if not got[(topic, p)].error}
        finally:
            await admin.close()

    try:
        return asyncio.run(ask())
    except Exception:  # noqa: BLE001 - a broker down right now: nothing known
        return {}


def txn_coordinator(fc: FaultCluster, transactional_id: str) -> int | None:
    """The broker coordinating ``transactional_id`` now, or None when unknown."""
    try:
        with fc.client() as c:
            r = c.request(ApiKey.FIND_COORDINATOR, 3, key=transactional_id, key_type=1)
    except Exception:  # noqa: BLE001 - no live broker answered: ask again later
        return None
    return int(r.node_id) if r.error_code == 0 else None


class Processor(threading.Thread):
    """One consume-transform-produce loop; see the module docstring."""

    def __init__(self, name: str, bootstrap: str, source: str, partitions: Sequence[int],
                 sink: str, sink_partitions: int, group: str, ends: dict[int, int],
                 history: TxnHistory, lock: threading.Lock, deadline: float,
                 batch: int = 500) -> None:
        super().__init__(name=f"processor-{name}", daemon=True)
        self.label, self.bootstrap, self.source = name, bootstrap, source
        self.partitions, self.sink, self.sink_partitions = list(partitions), sink, sink_partitions
        self.group, self.ends, self.history, self.lock = group, ends, history, lock
        self.deadline, self.batch = deadline, batch
        self.transactional_id = f"txn-campaign-{name}"
        self.incarnation = self.sequence = 0
        self.commits = self.aborts = self.restarts = self.consumer_restarts = 0
        self.hangs = 0              # librdkafka calls abandoned (ClientHang)
        self.commit_times: list[float] = []   # time.monotonic() of each commit's return
        self.done = False
        self.error: BaseException | None = None
        self.log: Callable[[str], None] = lambda _s: None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as e:  # noqa: BLE001 - reported by the campaign
            self.log(f"{self.label}: failed: {e!r}")
            self.error = e

    def _producer(self) -> Any:
        from confluent_kafka import KafkaException, Producer
        self.incarnation += 1
        while True:
            p = Producer({"bootstrap.servers": self.bootstrap,
                          "transactional.id": self.transactional_id,
                          "transaction.timeout.ms": TXN_TIMEOUT_MS, "linger.ms": 5,
                          # librdkafka 2.x with sparse connections can wait for ever in
                          # send_offsets_to_transaction for a group coordinator that was
                          # killed (it never reconnects to it; seen here, not a broker
                          # answer): keep a connection to every broker instead
                          "enable.sparse.connections": False,
                          **({"debug": os.environ["TXN_CAMPAIGN_DEBUG"]}
                             if os.environ.get("TXN_CAMPAIGN_DEBUG") else {}),
                          "message.timeout.ms": TXN_TIMEOUT_MS - 1000})
            try:
                _bounded("init_transactions", lambda: p.init_transactions(CALL_TIMEOUT_S))
                return p
            except ClientHang as e:
                self.hangs += 1
                self.log(f"{self.label}: {e}: producer abandoned")
            except KafkaException as e:
                self.log(f"{self.label}: init_transactions: {e}")
                if time.monotonic() > self.deadline:
                    raise
                time.sleep(0.5)

    def _consumer(self) -> Any:
        from confluent_kafka import Consumer
        return Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "enable.partition.eof": False})

    def _close(self, consumer: Any) -> None:
        """Close a consumer, abandoning it when the close hangs: a librdkafka consumer
        can deadlock inside (its main thread holding a partition lock while it waits for
        the handle lock a broker thread holds while it waits for that partition lock:
        confluentinc/librdkafka#5476, OffsetForLeaderEpoch's leader query racing a
        broker's failure), and rd_kafka_destroy then waits for ever."""
        try:
            _bounded("consumer close", consumer.close)
        except ClientHang as e:
            self.hangs += 1
            self.log(f"{self.label}: {e}: consumer abandoned")

    def _rewind(self, consumer: Any) -> dict[int, int]:
        """Seek every input partition to the group's committed offset (read stable)."""
        from confluent_kafka import KafkaException, TopicPartition
        while True:
            try:
                committed = consumer.committed(
                    [TopicPartition(self.source, p) for p in self.partitions], 30)
                break
            except KafkaException as e:
                self.log(f"{self.label}: committed(): {e}")
                if time.monotonic() > self.deadline:
                    raise
                time.sleep(0.5)
        at = {tp.partition: max(tp.offset, 0) for tp in committed}
        consumer.assign([TopicPartition(self.source, p, at[p]) for p in self.partitions])
        return at

    def _run(self) -> None:
        from confluent_kafka import KafkaException, TopicPartition
        consumer = self._consumer()
        # the consumer's group metadata for send_offsets_to_transaction: fixed for a
        # consumer that assigns itself its partitions (no group membership), so read once
        group = consumer.consumer_group_metadata()
        producer = self._producer()
        position = self._rewind(consumer)
        # partition -> the next offset to read, for the partitions read since the last
        # seek (the input is not transactional: no control batch between two records).
        # Kept here rather than asked with Consumer.position(): confluent-kafka holds the
        # GIL while that waits for librdkafka's handle lock, so a consumer deadlocked
        # inside (librdkafka#5476, see _close) froze every thread of the campaign
        read_next: dict[int, int] = {}
        quiet_since = time.monotonic()
        try:
            while not all(position[p] >= self.ends[p] for p in self.partitions):
                if time.monotonic() > self.deadline:
                    raise TimeoutError(f"{self.label}: not done by the deadline "
                                       f"(at {position}, ends {self.ends})")
                msgs = []
                for m in consumer.consume(self.batch, 0.5):
                    if m.error():
                        self.log(f"{self.label}: consumer: {m.error()}")
                    else:
                        msgs.append(m)
                        read_next[m.partition()] = m.offset() + 1
                if not msgs:
                    if time.monotonic() - quiet_since > 10:
                        stable = stable_ends(self.bootstrap, self.source, self.partitions)
                        self.log(f"{self.label}: nothing to read for 10 s at {position} "
                                 f"(read since the last seek: {read_next}, broker's last "
                                 f"stable offsets {stable})")
                        if any(stable.get(p, -1) > position[p] for p in self.partitions):
                            # records are readable (below the LSO) yet the consumer
                            # fetches none: a client stall, not the broker's; recorded
                            # in the outcome and worked around with a new consumer
                            self.consumer_restarts += 1
                            self._close(consumer)
                            consumer = self._consumer()
                            group = consumer.consumer_group_metadata()
                            position = self._rewind(consumer)
                            read_next = {}
                        quiet_since = time.monotonic()
                    continue
                quiet_since = time.monotonic()
                self.sequence += 1
                tag = f"{self.label}-{self.incarnation}-{self.sequence}"
                try:
                    producer.begin_transaction()
                    for m in msgs:
                        producer.produce(self.sink, value=out_value(m.value(), tag),
                                         partition=m.partition() % self.sink_partitions)
                    # a partition nothing was read from since the last seek is left
                    # out: its committed offset stands
                    positions = [TopicPartition(self.source, p, o)
                                 for p, o in sorted(read_next.items())]
                    _bounded("send_offsets_to_transaction",
                             lambda: producer.send_offsets_to_transaction(
                                 positions, group, OFFSETS_TIMEOUT_S), OFFSETS_TIMEOUT_S)
                    with self.lock:
                        self.history.commit_called[tag] = time.monotonic()
                    self._commit(producer)
                    self.commits += 1
                    self.commit_times.append(time.monotonic())
                    position.update((tp.partition, tp.offset) for tp in positions)
                except ClientHang as e:
                    self.hangs += 1
                    self.log(f"{self.label}: transaction {tag}: {e}: producer abandoned")
                    producer = self._fresh(producer)
                    position = self._rewind(consumer)
                    read_next = {}
                except KafkaException as e:
                    err = e.args[0]
                    self.log(f"{self.label}: transaction {tag}: {err}")
                    if err.txn_requires_abort():
                        try:
                            _bounded("abort_transaction",
                                     lambda: producer.abort_transaction(CALL_TIMEOUT_S))
                            self.aborts += 1
                        except (KafkaException, ClientHang) as e2:
                            self.hangs += isinstance(e2, ClientHang)
                            self.log(f"{self.label}: abort: {e2}")
                            producer = self._fresh(producer)
                    else:
                        producer = self._fresh(producer)
                    position = self._rewind(consumer)
                    read_next = {}
            self.done = True
        finally:
            self._close(consumer)
            producer.flush(5)

    def _commit(self, producer: Any) -> None:
        from confluent_kafka import KafkaException
        while True:
            try:
                _bounded("commit_transaction",
                         lambda: producer.commit_transaction(CALL_TIMEOUT_S))
                return
            except KafkaException as e:
                if not e.args[0].retriable() or time.monotonic() > self.deadline:
                    raise
                self.log(f"{self.label}: commit retried: {e}")

    def _fresh(self, _old: Any) -> Any:
        self.restarts += 1
        return self._producer()


class Observer(threading.Thread):
    """A read_committed reader of the output during the run (module docstring)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, history: TxnHistory,
                 lock: threading.Lock) -> None:
        super().__init__(name="observer", daemon=True)
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.history, self.lock = history, lock
        self.stop_event = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        from confluent_kafka import Consumer, TopicPartition
        try:
            c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "txn-observer",
                          "isolation.level": "read_committed", "enable.auto.commit": False})
            c.assign([TopicPartition(self.topic, p, 0) for p in range(self.partitions)])
            try:
                while not self.stop_event.is_set():
                    for m in c.consume(1000, 0.2):
                        if m.error():
                            continue
                        now = time.monotonic()
                        with self.lock:
                            self.history.observed.append(
                                (now, (m.partition(), m.offset(), m.value())))
            finally:
                c.close()
        except BaseException as e:  # noqa: BLE001 - reported by the campaign
            self.error = e

    def stop(self) -> None:
        self.stop_event.set()
        self.join(30)


def read_log(bootstrap: str, topic: str, partitions: int, isolation: str,
             ends: dict[int, int], timeout: float = 120.0) -> list[Rec]:
    """Every record of ``topic`` below ``ends[p]`` at ``isolation`` (read_committed
    skips aborted records: its position still reaches the end past them)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"txn-final-{isolation}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[Rec] = []
    left = {p for p in range(partitions) if ends[p] > 0}
    deadline = time.monotonic() + timeout
    try:
        while left:
            if time.monotonic() > deadline:
                raise TimeoutError(f"read_log {isolation}: partitions {left} not read to "
                                   f"their ends {ends}")
            for m in c.consume(5000, 0.5):
                if m.error():
                    if m.error().code() == -191:           # _PARTITION_EOF
                        pos = c.position([TopicPartition(topic, m.partition())])[0].offset
                        if pos >= ends[m.partition()]:
                            left.discard(m.partition())
                    continue
                got.append((m.partition(), m.offset(), m.value()))
    finally:
        c.close()
    return got
