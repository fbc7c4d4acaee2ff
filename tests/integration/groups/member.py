"""One consumer-group member in its own process, for tests/integration/test_groups.py.

    python member.py CLIENT BOOTSTRAP TOPIC GROUP ASSIGNOR

CLIENT is confluent | kafka-python | aiokafka; ASSIGNOR is eager | cooperative.
Prints one JSON line per event to stdout: {"assigned": [partitions]} whenever
its assignment changes, {"record": [partition, offset]} per record (before the
commit that follows each poll). SIGTERM = leave the group cleanly (close);
SIGKILL from the test = a crash.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from typing import Any

SESSION_TIMEOUT_MS = 6000
stop = False


def emit(**event: Any) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def on_term(*_: Any) -> None:
    global stop
    stop = True


def report(records: Any, assignment: list[int], last: list[int] | None) -> list[int]:
    """Emit each (partition, offset) polled, then the assignment if it changed."""
    for partition, offset in records:
        emit(record=[partition, offset])
    now = sorted(assignment)
    if now != last:
        emit(assigned=now)
    return now


def run_confluent(bootstrap: str, topic: str, group: str, assignor: str) -> None:
    from confluent_kafka import Consumer, KafkaException
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": 500,
                  "partition.assignment.strategy":
                      "cooperative-sticky" if assignor == "cooperative" else "range"})
    c.subscribe([topic])
    last: list[int] | None = None
    while not stop:
        msgs = c.consume(100, 0.1)
        last = report(((m.partition(), m.offset()) for m in msgs if m.error() is None),
                      [tp.partition for tp in c.assignment()], last)
        if msgs:
            try:
                c.commit(asynchronous=False)
            except KafkaException:
                pass
    c.close()


def run_kafka_python(bootstrap: str, topic: str, group: str, assignor: str) -> None:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.errors import KafkaError
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=500,
                      partition_assignment_strategy=[
                          CooperativeStickyAssignor if assignor == "cooperative"
                          else RangePartitionAssignor])
    # Subscribe only once the client's metadata knows the topic. kafka-python 3.0.12
    # loses a leader otherwise: a leader that joined before its metadata had the
    # partitions assigns nothing, rejoins when the metadata arrives, and if
    # poll(timeout_ms=100) gives up while that join is in flight, performing the
    # assignment clears the very condition (metadata snapshot != assignment snapshot)
    # that join_group_async loops on — the finished join is never collected, the
    # heartbeat it disabled is never re-enabled, and the member sits out of the group
    # until the session times out and for ever after. Found from the member's and the
    # coordinator's request logs (the broker answered every request of that member).
    while not stop and not c.partitions_for_topic(topic):
        time.sleep(0.05)
    c.subscribe([topic])
    last: list[int] | None = None
    stuck_since: float | None = None
    while not stop:
        batches = c.poll(timeout_ms=100)
        stuck_since = unstick_kafka_python(c, stuck_since)
        last = report(((r.partition, r.offset) for rs in batches.values() for r in rs),
                      [tp.partition for tp in c.assignment()], last)
        if batches:
            try:
                c.commit()
            except KafkaError:
                pass
    c.close()


def unstick_kafka_python(consumer: Any, stuck_since: float | None) -> float | None:
    """The same kafka-python 3.0.12 bug without the metadata trigger: a poll gave up on a
    JoinGroup -> SyncGroup task in flight, the task finished afterwards (as leader it set
    the assignment snapshot, so ``need_rejoin()`` is now False) and no poll will collect
    it: the member's heartbeat stays disabled and it sits out of every later generation.
    Seen once under CPU starvation on 2 cores (member 0 computed generation 2's
    assignment and never took its own). When a finished, uncollected join has persisted
    for a second, ask for a rejoin (the next poll sends a fresh JoinGroup) and say so on
    stderr, so a failure report shows it. Returns when the state was first seen."""
    coordinator = consumer._coordinator
    task = coordinator._join_task
    if task is None or not task.is_done or coordinator.need_rejoin():
        return None
    now = time.monotonic()
    if stuck_since is None:
        return now
    if now - stuck_since >= 1.0:
        sys.stderr.write(f"{time.strftime('%H:%M:%S')} member kafka-python WARNING finished "
                         "join never collected (kafka-python 3.0.12); requesting a rejoin\n")
        sys.stderr.flush()
        coordinator.request_rejoin()
        return None
    return stuck_since


async def run_aiokafka(bootstrap: str, topic: str, group: str, assignor: str) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaError
    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=500)
    await c.start()
    last: list[int] | None = None
    try:
        while not stop:
            batches = await c.getmany(timeout_ms=100)
            last = report(((r.partition, r.offset) for rs in batches.values() for r in rs),
                          [tp.partition for tp in c.assignment()], last)
            if batches:
                try:
                    await c.commit()
                except KafkaError:
                    pass
    finally:
        await c.stop()


def main() -> None:
    client, bootstrap, topic, group, assignor = sys.argv[1:6]
    import logging
    import os
    # the client's own group-protocol log on stderr (the test reports it on failure)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    for name in ("kafka.coordinator", "aiokafka.consumer.group_coordinator"):
        logging.getLogger(name).setLevel(os.environ.get("MEMBER_LOG_LEVEL", "INFO"))
    signal.signal(signal.SIGTERM, on_term)
    if client == "confluent":
        run_confluent(bootstrap, topic, group, assignor)
    elif client == "kafka-python":
        run_kafka_python(bootstrap, topic, group, assignor)
    else:
        asyncio.run(run_aiokafka(bootstrap, topic, group, assignor))
    emit(closed=True)


if __name__ == "__main__":
    main()
