"""One confluent-kafka group member that logs its partition ownership with CLOCK_MONOTONIC times.

    python protocol_member.py BOOTSTRAP TOPIC GROUP PROTOCOL EVENTS_FILE NAME [ASSIGNOR]

PROTOCOL: ``consumer`` (KIP-848: ``group.protocol=consumer``; the broker assigns, with
ASSIGNOR as ``group.remote.assignor`` when given; session and heartbeat times come from the
broker), ``cooperative`` (classic, cooperative-sticky) or ``eager`` (classic, range).

Events go to EVENTS_FILE, one JSON line each, in the format of groups/ownership_checker.py:
``assign`` at the entry of on_assign, ``revoke``/``lost`` at the exit of on_revoke/on_lost,
``records`` per non-empty consume() (t0 before it, t after it). Offsets are committed
synchronously after each non-empty batch, and again in on_revoke (a commit after a batch may be
refused: STALE_MEMBER_EPOCH when the member's epoch moved on meanwhile), so a revoked
partition's records are committed before the revoke ends and its next owner starts after them;
a failed commit is logged (``commit_error``). SIGTERM = close() (revoke, then leave the group);
SIGKILL from the test is a crash.

Classic members use a 6 s session and 500 ms heartbeats (the integration tests' setting), or
$MEMBER_SESSION_TIMEOUT_MS / $MEMBER_HEARTBEAT_MS when set (the benchmarks); the consumer
protocol takes both from the broker's group.consumer.* configs.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any, TextIO

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

stop = False


def on_term(*_: Any) -> None:
    global stop
    stop = True


def member_config(bootstrap: str, group: str, protocol: str, assignor: str | None,
                  session_timeout_ms: int = 6000, heartbeat_ms: int = 500) -> dict[str, Any]:
    """confluent-kafka settings of one member of ``protocol``."""
    cfg: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group,
                           "auto.offset.reset": "earliest", "enable.auto.commit": False,
                           "enable.partition.eof": False}
    if protocol == "consumer":
        cfg["group.protocol"] = "consumer"
        if assignor:
            cfg["group.remote.assignor"] = assignor
    else:
        cfg.update({"session.timeout.ms": session_timeout_ms,
                    "heartbeat.interval.ms": heartbeat_ms,
                    "partition.assignment.strategy":
                        "cooperative-sticky" if protocol == "cooperative" else "range"})
    return cfg


class EventLog:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def emit(self, ev: str, t: int | None = None, **fields: Any) -> None:
        fields.update(t=time.monotonic_ns() if t is None else t, ev=ev)
        self.out.write(json.dumps(fields) + "\n")
        self.out.flush()


def tps(partitions: list[TopicPartition]) -> list[list[Any]]:
    return [[p.topic, p.partition] for p in partitions]


def commit(consumer: Consumer, log: EventLog) -> None:
    """A synchronous commit of what was polled; a refusal is logged (the consumer protocol
    refuses a commit with a stale member epoch: one sent just before the member's epoch moved
    on), "nothing to commit" is not."""
    try:
        consumer.commit(asynchronous=False)
    except KafkaException as e:
        if e.args[0].code() != KafkaError._NO_OFFSET:
            log.emit("commit_error", error=str(e))


def run(bootstrap: str, topic: str, group: str, protocol: str, log: EventLog, name: str,
        assignor: str | None) -> None:
    def on_error(err: Any) -> None:
        log.emit("client_error", error=str(err))

    consumer = Consumer({**member_config(bootstrap, group, protocol, assignor,
                                         int(os.environ.get("MEMBER_SESSION_TIMEOUT_MS", 6000)),
                                         int(os.environ.get("MEMBER_HEARTBEAT_MS", 500))),
                         "error_cb": on_error})

    def on_assign(c: Consumer, parts: list[TopicPartition]) -> None:
        log.emit("assign", tps=tps(parts))

    def on_revoke(c: Consumer, parts: list[TopicPartition]) -> None:
        commit(c, log)   # what was polled since the last commit (which may have been refused)
        # the callback's last statement: its exit time (confluent-kafka's wrapper then
        # calls incremental_unassign, which lets librdkafka tell the broker)
        log.emit("revoke", tps=tps(parts))

    def on_lost(c: Consumer, parts: list[TopicPartition]) -> None:
        log.emit("lost", tps=tps(parts))

    log.emit("start", member=name, pid=os.getpid(), protocol=protocol)
    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    while not stop:
        t0 = time.monotonic_ns()
        msgs = consumer.consume(500, 0.1)
        t1 = time.monotonic_ns()
        recs = [[m.topic(), m.partition(), m.offset()] for m in msgs if m.error() is None]
        errors = [str(m.error()) for m in msgs if m.error() is not None]
        if errors:
            log.emit("consume_error", errors=errors[:5])
        if recs:
            log.emit("records", t=t1, t0=t0, recs=recs)
            commit(consumer, log)
    consumer.close()


def main() -> None:
    bootstrap, topic, group, protocol, events_path, name = sys.argv[1:7]
    assignor = sys.argv[7] if len(sys.argv) > 7 else None
    signal.signal(signal.SIGTERM, on_term)
    with open(events_path, "a", encoding="utf-8") as out:
        log = EventLog(out)
        run(bootstrap, topic, group, protocol, log, name, assignor)
        log.emit("closed")


if __name__ == "__main__":
    main()
