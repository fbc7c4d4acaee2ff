"""The log cleaner end to end, through a real broker (real ZooKeeper).

Records are written as one magic-2 batch per produce; each key is written in many rounds
and the last round carries the values to keep (tombstones for a few keys); unique-key
filler records then roll the last round out of the active segment, which the cleaner
never touches. "Compacted" means: reading the whole partition back over Fetch, every live
key has exactly one record holding its latest value, and a deleted key has at most its
tombstone (null value), never an older value.

1. segment.bytes small, min.cleanable.dirty.ratio low, log.cleaner.backoff.ms low: the
   topic ends compacted.
2. A bigger log written under cleanup.policy=delete is switched to compact
   (IncrementalAlterConfigs); as soon as the cleaner's ``.cleaned``/``.swap`` files appear
   in the partition directory the broker gets kill -9; after a restart (recovery completes
   or drops the half-done swap) the topic ends compacted with nothing lost.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path

import pytest

from client import OP_SET, KafkaAdmin
from protocol.records import build_batch, iter_all_records
from storage import checkpoints
from storage.cleaner import CLEANER_CHECKPOINT
from tests.integration.cluster import BrokerProcess, Cluster, MakeCluster, WireClient
from tests.integration.multi import create_topic, produce, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("compaction", overrides={"log.cleaner.backoff.ms": "100"})


def value(key: int, round_: int, size: int) -> bytes:
    head = b"k%d-r%d:" % (key, round_)
    return head + b"x" * (size - len(head))


def write(port: int, topic: str, *, keys: int, rounds: int, size: int, per_batch: int,
          deleted: set[int], fillers: int) -> dict[bytes, bytes | None]:
    """Every key in every round (the last round: None for ``deleted``), then ``fillers``
    unique-key records; -> key -> the value that must survive (None = deleted)."""
    now = int(time.time() * 1000)
    latest: dict[bytes, bytes | None] = {}
    pending: list[tuple[bytes | None, bytes | None, int]] = []

    def send(force: bool = False) -> None:
        if pending and (force or len(pending) >= per_batch):
            err, _ = produce(port, topic, 0, build_batch(pending), acks=1)
            assert err == 0, err
            pending.clear()
    for r in range(rounds):
        for k in range(keys):
            key = b"key-%d" % k
            v = None if r == rounds - 1 and k in deleted else value(k, r, size)
            latest[key] = v
            pending.append((key, v, now))
            send()
    for i in range(fillers):
        key = b"filler-%d" % i
        latest[key] = value(-1, i, size)
        pending.append((key, latest[key], now))
        send()
    send(force=True)
    return latest


def read_all(port: int, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    out: list[tuple[bytes | None, bytes | None]] = []
    offset = 0
    with WireClient(port, timeout=10) as c:
        while True:
            err, hw, data = c.fetch_batches(topic, 0, offset, max_bytes=4 << 20)
            assert err == 0, err
            recs = list(iter_all_records(data))
            out.extend((r.key, r.value) for r in recs)
            if not recs or recs[-1].offset + 1 >= hw:
                return out
            offset = recs[-1].offset + 1


def compacted(port: int, topic: str, latest: dict[bytes, bytes | None]) -> bool | str:
    """True when the partition holds exactly the latest value per key (see the module
    docstring); otherwise a description of the first difference (a falsy-looking str
    is not returned: wait_until needs True)."""
    seen: dict[bytes | None, list[bytes | None]] = {}
    for k, v in read_all(port, topic):
        seen.setdefault(k, []).append(v)
    for key, want in latest.items():
        got = seen.get(key, [])
        if want is None and got not in ([], [None]):
            return False
        if want is not None and got != [want]:
            return False
    return not set(seen) - set(latest)


def describe_diff(port: int, topic: str, latest: dict[bytes, bytes | None]) -> str:
    seen: dict[bytes | None, int] = {}
    for k, _ in read_all(port, topic):
        seen[k] = seen.get(k, 0) + 1
    dup = {k: n for k, n in seen.items() if n > 1}
    return f"{len(dup)} keys with several records, e.g. {list(dup.items())[:3]}"


def test_compacted_topic_keeps_the_latest_value_per_key(cluster: Cluster) -> None:
    broker = cluster.brokers[0]
    topic = f"compact-{uuid.uuid4().hex[:6]}"
    assert create_topic(broker.port, topic, 1, 1, {
        "cleanup.policy": "compact", "segment.bytes": "8192",
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100"}) == 0
    latest = write(broker.port, topic, keys=40, rounds=20, size=300, per_batch=10,
                   deleted={0, 1, 2, 3, 4}, fillers=80)
    try:
        wait_until(lambda: compacted(broker.port, topic, latest), 60, "compaction")
    except AssertionError as e:
        raise AssertionError(f"{e}: {describe_diff(broker.port, topic, latest)}") from None
    # the clean's log line comes after its swap (which compacted() sees) and checkpoint
    wait_until(lambda: f"cleaned ('{topic}', 0)" in broker.log_text(), 10, "the clean's log line")


def cleaner_files(broker: BrokerProcess, topic: str) -> list[str]:
    d = Path(broker.log_dir) / f"{topic}-0"
    try:
        return [n for n in os.listdir(d) if n.endswith((".cleaned", ".swap"))]
    except FileNotFoundError:
        return []


def test_crash_in_the_middle_of_a_clean(cluster: Cluster) -> None:
    broker = cluster.brokers[0]
    topic = f"compact-crash-{uuid.uuid4().hex[:6]}"
    assert create_topic(broker.port, topic, 1, 1, {
        "cleanup.policy": "delete", "segment.bytes": "65536", "retention.ms": "-1",
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100"}) == 0
    latest = write(broker.port, topic, keys=200, rounds=40, size=1000, per_batch=40,
                   deleted=set(range(0, 200, 10)), fillers=200)
    assert len(read_all(broker.port, topic)) == 200 * 40 + 200

    async def switch_to_compact() -> None:
        async with KafkaAdmin(broker.bootstrap) as admin:
            err, msg = await admin.incremental_alter_configs(
                topic, [("cleanup.policy", OP_SET, "compact")])
            assert err == 0, msg
    asyncio.run(switch_to_compact())
    deadline = time.monotonic() + 60
    while not cleaner_files(broker, topic):
        assert time.monotonic() < deadline, "the cleaner never started on the topic"
        time.sleep(0.002)
    broker.kill9()
    assert f"cleaned ('{topic}', 0)" not in broker.log_text(), "the clean ended before the kill"
    # On a loaded machine the kill can land after the clean's last step (its checkpoint)
    # but before its log line: then nothing is left to clean after the restart.
    finished = (topic, 0) in checkpoints.read_offsets(
        os.path.join(broker.log_dir, CLEANER_CHECKPOINT))

    cluster.restart(broker)
    try:
        wait_until(lambda: compacted(broker.port, topic, latest), 90, "compaction after restart")
    except AssertionError as e:
        raise AssertionError(f"{e}: {describe_diff(broker.port, topic, latest)}") from None
    # recovery completed or dropped the half-done swap; later cleans leave no files behind
    wait_until(lambda: not cleaner_files(broker, topic), 30, "no .cleaned/.swap files")
    assert compacted(broker.port, topic, latest)
    wait_until(lambda: finished or f"cleaned ('{topic}', 0)" in broker.log_text(), 10,
               "the clean's log line")
