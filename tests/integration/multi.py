"""Multi-broker helpers on top of tests/integration/cluster.py (which stays as it is).

* ``create_topic``: CreateTopics with a replication factor (WireClient's helper is RF 1).
* ``partition_state``: leader / replicas / ISR of a partition from a broker's Metadata.
* ``produce``: one Produce with a chosen acks, to whichever broker the caller names.
* ``paused``: SIGSTOP a broker process for the duration of a ``with`` block (SIGCONT after).
* ``log_bytes``: a replica's on-disk partition log, segment files concatenated in order.
* ``wait_until``: poll a condition with a deadline and a message.
* ``SINGLE_BROKER_TXN_OVERRIDES`` / ``THREE_BROKER_TXN_OVERRIDES``: broker settings for
  transactions on one broker / on three at replication factor 3.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from protocol.api_keys import ApiKey
from protocol.schema import Struct
from protocol.spec import api

from tests.integration.cluster import BrokerProcess, WireClient

T = TypeVar("T")

# A single broker with transactions and groups: the internal topics at replication
# factor 1 (their defaults want 3 brokers) and few partitions (quick to create).
SINGLE_BROKER_TXN_OVERRIDES = {"transaction.state.log.replication.factor": "1",
                               "transaction.state.log.min.isr": "1",
                               "transaction.state.log.num.partitions": "2",
                               "offsets.topic.replication.factor": "1",
                               "offsets.topic.num.partitions": "2"}

# Three brokers with transactions at full strength: every topic at replication factor 3
# with min ISR 2, the internal topics with 3 partitions (Kafka's 50 are slow to create).
THREE_BROKER_TXN_OVERRIDES = {"transaction.state.log.replication.factor": "3",
                              "transaction.state.log.min.isr": "2",
                              "transaction.state.log.num.partitions": "3",
                              "offsets.topic.replication.factor": "3",
                              "offsets.topic.num.partitions": "3",
                              "min.insync.replicas": "2",
                              "default.replication.factor": "3"}


def wait_until(cond: Callable[[], T], timeout: float, what: str, interval: float = 0.1) -> T:
    """Poll ``cond`` until it returns something truthy (returned); AssertionError
    naming ``what`` after ``timeout`` seconds. Exceptions count as not yet."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            value = cond()
            if value:
                return value
            last = value
        except (OSError, AssertionError, ValueError) as e:
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def until(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``cond`` until it returns something other than None or False (0 is a broker
    id); OSError counts as not yet. AssertionError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = cond()
            if last is not None and last is not False:
                return last
        except OSError as e:
            last = e
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout:g}s (last: {last!r})")


def metadata(b: BrokerProcess, topics: list[str] | None) -> Struct:
    """Metadata v1 from one broker."""
    with WireClient(b.port, timeout=5) as c:
        return c.metadata(topics, version=1)


def create_topic(port: int, name: str, partitions: int, replication_factor: int,
                 configs: dict[str, str] | None = None, version: int = 5) -> int:
    """CreateTopics with a replication factor; -> the topic's error code."""
    req = api(ApiKey.CREATE_TOPICS).request
    cfg = [req.structs["CreatableTopicConfig"].new(name=k, value=v)
           for k, v in (configs or {}).items()]
    topic = req.structs["CreatableTopic"].new(name=name, num_partitions=partitions,
                                              replication_factor=replication_factor, configs=cfg)
    with WireClient(port) as c:
        resp = c.request(ApiKey.CREATE_TOPICS, version, req.new(topics=[topic], timeout_ms=20000))
    return int(resp.topics[0].error_code)


@dataclass(frozen=True)
class PartitionState:
    error: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def partition_state(port: int, topic: str, partition: int) -> PartitionState | None:
    """What broker ``port``'s Metadata (v7) says of one partition, None if absent."""
    with WireClient(port, timeout=5) as c:
        md = c.metadata([topic], version=7)
    for t in md.topics:
        for p in t.partitions:
            if t.name == topic and p.partition_index == partition:
                return PartitionState(int(p.error_code), int(p.leader_id), int(p.leader_epoch),
                                      tuple(p.replica_nodes), tuple(sorted(p.isr_nodes)))
    return None


def led_in_sync(brokers: Sequence[BrokerProcess], port: int, topic: str, partition: int,
                isr: int) -> PartitionState | None:
    """The partition's state once its leader's own metadata names that leader and an
    ISR of ``isr`` brokers, else None. Broker ``port``'s metadata cache (UpdateMetadata)
    can hear of a partition before its leader has applied the LeaderAndIsr, and a raw
    Produce sent then is refused (UNKNOWN_TOPIC_OR_PARTITION); the leader's cache
    learns the leadership only after applying it (broker/handlers/leader_and_isr.py)."""
    st = partition_state(port, topic, partition)
    if st is None or st.leader < 0:
        return None
    leader = next(b for b in brokers if b.broker_id == st.leader)
    own = partition_state(leader.port, topic, partition)
    if own is None or own.leader != st.leader or len(own.isr) != isr:
        return None
    return own


def controller_id(port: int) -> int:
    with WireClient(port, timeout=5) as c:
        return int(c.metadata([], version=1).controller_id)


def produce(port: int, topic: str, partition: int, records: bytes | bytearray, *,
            acks: int = -1, timeout_ms: int = 15000) -> tuple[int, int]:
    """One Produce (v8) -> (error code, base offset)."""
    req = api(ApiKey.PRODUCE).request
    pd = req.structs["PartitionProduceData"].new(index=partition, records=bytes(records))
    td = req.structs["TopicProduceData"].new(name=topic, partition_data=[pd])
    with WireClient(port, timeout=timeout_ms / 1000 + 5) as c:
        resp = c.request(ApiKey.PRODUCE, 8, req.new(acks=acks, timeout_ms=timeout_ms,
                                                    topic_data=[td]))
    r = resp.responses[0].partition_responses[0]
    return int(r.error_code), int(r.base_offset)


@contextmanager
def paused(broker: BrokerProcess) -> Iterator[None]:
    """SIGSTOP the broker process; SIGCONT when the block ends (even on error)."""
    assert broker.pid is not None and broker.running
    os.kill(broker.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(broker.pid, signal.SIGCONT)


def log_bytes(broker: BrokerProcess, topic: str, partition: int) -> bytes:
    """The partition's segment files on ``broker``'s disk, in base-offset order."""
    d = Path(broker.log_dir) / f"{topic}-{partition}"
    return b"".join(f.read_bytes() for f in sorted(d.glob("*.log")))
