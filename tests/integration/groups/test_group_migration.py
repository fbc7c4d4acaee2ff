"""Online migration of a group between the classic and the consumer protocol (KIP-848,
group.consumer.migration.policy), with confluent-kafka (librdkafka 2.16) members.

The rolling switch (policy bidirectional, Kafka 4.0's default), one broker on a real
ZooKeeper, a topic of 6 partitions, a producer writing numbered values throughout:
1. three classic members consume (range, eager; and again with cooperative-sticky): the
   group is classic;
2. one at a time, each member closes (LeaveGroup) and comes back with
   group.protocol=consumer: after the first one the group is a consumer group (the classic
   group was upgraded with its members converted); the classic members left in it keep
   consuming through JoinGroup/SyncGroup/Heartbeat answered from the consumer group;
3. one at a time, each member closes and comes back classic: the group stays a consumer
   group (classic members inside it) until the last consumer-protocol member leaves, when it
   is downgraded to a classic group and rebalances;
4. the producer stops, the members drain the topic and close.
Every member commits synchronously after each batch and logs, per partition, which values
each *successful* commit covered (values it processed since its previous successful commit
of that partition; a failed commit's values stay pending, and are dropped when the partition
is taken away: its next owner consumes them again). At the end every produced value was
committed exactly once across all members' lives, and the group's committed offsets are the
partitions' end offsets.

Members run as separate processes: this file is also the member program
(``python -m tests.integration.groups.test_group_migration member ...``).

The policy ``disabled`` is checked on the wire: a ConsumerGroupHeartbeat joining a classic
group that has members is GROUP_ID_NOT_FOUND; a JoinGroup whose protocols the classic
members of a consumer group do not support is INCONSISTENT_GROUP_PROTOCOL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from client.consumer_protocol import encode_subscription
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.spec import api
from tests.integration.cluster import Cluster, MakeCluster, WireClient
from tests.integration.multi import create_topic, wait_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
PARTITIONS = 6
TOPIC = "migration"
SESSION_MS = 10_000
HEARTBEAT_MS = 500
OVERRIDES = {"group.consumer.session.timeout.ms": str(SESSION_MS),
             "group.consumer.min.session.timeout.ms": "1000",
             "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
             "group.consumer.min.heartbeat.interval.ms": "100",
             "group.min.session.timeout.ms": "1000"}


# -- the member program ------------------------------------------------------------------

def member_main(bootstrap: str, topic: str, group: str, protocol: str, events_path: str,
                strategy: str = "range", instance: str = "") -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    stop = False

    def on_term(*_: Any) -> None:
        nonlocal stop
        stop = True
    signal.signal(signal.SIGTERM, on_term)
    out = open(events_path, "a", encoding="utf-8")

    def emit(ev: str, **fields: Any) -> None:
        out.write(json.dumps({"ev": ev, "t": time.time(), **fields}) + "\n")
        out.flush()

    cfg: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group,
                           "auto.offset.reset": "earliest", "enable.auto.commit": False,
                           "error_cb": lambda e: emit("client_error", error=str(e))}
    if instance:
        cfg["group.instance.id"] = instance
    if protocol == "consumer":
        cfg["group.protocol"] = "consumer"
    else:
        cfg.update({"group.protocol": "classic", "partition.assignment.strategy": strategy,
                    "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS})
    consumer = Consumer(cfg)
    pending: dict[int, list[tuple[int, str]]] = {}      # partition -> (offset, value) uncommitted

    def on_assign(c: Any, parts: list[Any]) -> None:
        emit("assign", parts=sorted(p.partition for p in parts))

    def on_revoke(c: Any, parts: list[Any]) -> None:
        emit("revoke", parts=sorted(p.partition for p in parts))

    def commit() -> None:
        owned = {tp.partition for tp in consumer.assignment()}
        for p in [p for p in pending if p not in owned]:
            emit("dropped", partition=p, values=[v for _, v in pending.pop(p)])
        todo = [TopicPartition(topic, p, max(o for o, _ in recs) + 1)
                for p, recs in pending.items() if recs]
        if not todo:
            return
        try:
            result = consumer.commit(offsets=todo, asynchronous=False)
        except KafkaException as e:
            emit("commit_error", error=str(e))
            return
        for tp in result or []:
            if tp.error is not None:
                emit("commit_error", partition=tp.partition, error=str(tp.error))
                continue
            recs = pending.pop(tp.partition, [])
            emit("committed", partition=tp.partition, offset=tp.offset,
                 values=[v for o, v in recs if o < tp.offset])

    emit("start", pid=os.getpid(), protocol=protocol)
    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    while not stop:
        msgs = consumer.consume(200, 0.2)
        owned = {tp.partition for tp in consumer.assignment()}
        for m in msgs:
            if m.error() is not None:
                emit("consume_error", error=str(m.error()))
            elif m.partition() in owned:
                pending.setdefault(m.partition(), []).append((m.offset(), m.value().decode()))
        commit()
    commit()
    consumer.close()
    emit("closed")
    out.close()


# -- the test's side -----------------------------------------------------------------------

class Member:
    """One member process and its events file."""

    def __init__(self, name: str, work: Path, bootstrap: str, topic: str, group: str,
                 protocol: str, strategy: str = "range", instance: str = "") -> None:
        self.name, self.protocol = name, protocol
        self.events = work / f"{name}.events"
        self.stderr = open(work / f"{name}.stderr", "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.groups.test_group_migration", "member",
             bootstrap, topic, group, protocol, str(self.events), strategy, instance],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.stderr, cwd=REPO)

    def read(self) -> list[dict[str, Any]]:
        try:
            text = self.events.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

    def owned(self) -> set[int]:
        parts: set[int] = set()
        for e in self.read():
            if e["ev"] == "assign":
                parts |= set(e["parts"])     # eager: the whole set; cooperative: additions
            elif e["ev"] == "revoke":
                parts -= set(e["parts"])
        return parts

    def committed_values(self) -> list[str]:
        return [v for e in self.read() if e["ev"] == "committed" for v in e["values"]]

    def leave(self, timeout: float = 60.0) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout)
        self.stderr.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if not self.stderr.closed:
            self.stderr.close()


class Producer(threading.Thread):
    """Numbered values, round-robin over the partitions, acks=all; keeps what was acknowledged."""

    def __init__(self, bootstrap: str, topic: str, rate: float = 60.0) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer as KafkaProducer
        self.producer = KafkaProducer({"bootstrap.servers": bootstrap, "acks": "all",
                                       "enable.idempotence": True, "linger.ms": 5})
        self.rate = rate
        self.topic = topic
        self.acked: set[str] = set()
        self.failed: list[str] = []
        self.halt = threading.Event()

    def _done(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.add(msg.value().decode())
        else:
            self.failed.append(str(err))

    def run(self) -> None:
        n = 0
        while not self.halt.is_set():
            value = f"v{n:07d}"
            self.producer.produce(self.topic, value=value.encode(), partition=n % PARTITIONS,
                                  on_delivery=self._done)
            self.producer.poll(0)
            n += 1
            time.sleep(1.0 / self.rate)
        self.producer.flush(60)

    def stop(self) -> set[str]:
        self.halt.set()
        self.join(90)
        assert not self.failed, self.failed[:5]
        return self.acked


def group_type(port: int, group: str) -> str | None:
    """ListGroups v5's GroupType of ``group`` (None: not listed)."""
    with WireClient(port) as c:
        resp = c.request(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=[])
    for g in resp.groups:
        if g.group_id == group:
            return str(g.group_type)
    return None


def committed_offsets(port: int, group: str, topic: str) -> dict[int, int]:
    req = api(ApiKey.OFFSET_FETCH).request
    wanted = req.structs["OffsetFetchRequestTopic"].new(name=topic,
                                                        partition_indexes=list(range(PARTITIONS)))
    with WireClient(port) as c:
        resp = c.request(ApiKey.OFFSET_FETCH, 5, req.new(group_id=group, topics=[wanted],
                                                         require_stable=False))
    assert resp.error_code == 0, resp
    return {p.partition_index: int(p.committed_offset) for p in resp.topics[0].partitions}


def end_offsets(port: int, topic: str) -> dict[int, int]:
    with WireClient(port) as c:
        return {p: c.list_offset(topic, p)[1] for p in range(PARTITIONS)}


def describe(members: list[Member]) -> str:
    return "\n".join(f"{m.name} ({m.protocol}, pid {m.proc.pid}, rc {m.proc.poll()}): "
                     f"owns {sorted(m.owned())}, last events "
                     f"{[e['ev'] for e in m.read()[-8:]]}" for m in members)


# -- tests ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("migration", overrides=OVERRIDES)


def wait_covered(live: list[Member], timeout: float = 90.0) -> None:
    """Every partition owned by exactly one live member, and every live member owns some."""
    def settled() -> bool:
        owned = [m.owned() for m in live]
        every = Counter(p for parts in owned for p in parts)
        return (sorted(every) == list(range(PARTITIONS)) and set(every.values()) == {1}
                and all(owned))
    try:
        wait_until(settled, timeout, "every partition owned by exactly one live member",
                   interval=0.3)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{describe(live)}") from None


@pytest.mark.parametrize("strategy,static", [("range", False), ("cooperative-sticky", False),
                                             ("range", True)])
def test_rolling_switch_classic_to_consumer_and_back(cluster: Any, tmp_path: Path,
                                                     strategy: str, static: bool) -> None:
    """``strategy``: the classic members' assignor (eager range / cooperative-sticky);
    ``static``: every member keeps its group.instance.id across its restarts. A static
    member does not leave on close (classic) or leaves only until its session expires
    (consumer: epoch -2), so its successor replaces it: the upgrade waits for the old
    classic instance's session to expire (UNRELEASED_INSTANCE_ID meanwhile), and the last
    classic instance replacing the last consumer-protocol one downgrades the group at once,
    without a rebalance (Kafka 4.0's validateOnlineDowngradeWithReplacedMemberId)."""
    port = cluster.brokers[0].port
    group = f"roll-{uuid.uuid4().hex[:8]}"
    topic = f"migration-{group}"                 # each run its own topic and values
    assert create_topic(port, topic, PARTITIONS, 1) == 0
    producer = Producer(cluster.bootstrap, topic)
    producer.start()
    everyone: list[Member] = []

    def start(name: str, protocol: str) -> Member:
        instance = f"instance-{name[:2]}" if static else ""
        m = Member(name, tmp_path, cluster.bootstrap, topic, group, protocol, strategy, instance)
        everyone.append(m)
        return m

    try:
        live = [start(f"m{i}-classic", "classic") for i in range(3)]
        wait_covered(live)
        assert group_type(port, group) == "classic"
        # classic -> consumer, one member at a time
        for i in range(3):
            live[i].leave()
            live[i] = start(f"m{i}-consumer", "consumer")
            wait_covered(live)
            assert group_type(port, group) == "consumer", f"after member {i} rolled to consumer"
            time.sleep(2)
        # consumer -> classic, one member at a time
        for i in range(3):
            live[i].leave()
            if i == 2 and not static:
                wait_until(lambda: group_type(port, group) == "classic", 30,
                           "the group downgraded to classic after the last consumer member left")
            live[i] = start(f"m{i}-back", "classic")
            wait_covered(live)
            expected = "classic" if i == 2 else "consumer"
            assert group_type(port, group) == expected, f"after member {i} rolled back"
            time.sleep(2)
        produced = producer.stop()
        ends = end_offsets(port, topic)
        wait_until(lambda: committed_offsets(port, group, topic) == ends, 60,
                   f"the group committed up to the end offsets {ends}")
        for m in live:
            m.leave()
    finally:
        producer.halt.set()
        for m in everyone:
            m.kill()

    committed = Counter(v for m in everyone for v in m.committed_values())
    twice = sorted(v for v, n in committed.items() if n > 1)
    missing = sorted(produced - set(committed))
    extra = sorted(set(committed) - produced)
    assert not twice, f"{len(twice)} values committed more than once: {twice[:10]}"
    assert not missing, f"{len(missing)} produced values never committed: {missing[:10]}"
    assert not extra, f"values committed but never acknowledged: {extra[:10]}"
    assert len(produced) > 500
    assert group_type(port, group) == "classic"


def test_migration_policy_disabled(make_fresh_cluster: MakeCluster) -> None:
    overrides = {**OVERRIDES, "group.consumer.migration.policy": "disabled"}
    with make_fresh_cluster("disabled", 1, start=False, overrides=overrides) as c:
        port = c.brokers[0].port
        assert create_topic(port, TOPIC, PARTITIONS, 1) == 0
        sub = encode_subscription([TOPIC])
        join = api(ApiKey.JOIN_GROUP).request
        protocols = [join.structs["JoinGroupRequestProtocol"].new(name="range", metadata=sub)]

        def classic_join(w: WireClient, group: str, protocol_type: str) -> Any:
            """JoinGroup v5, again with the member id MEMBER_ID_REQUIRED hands out."""
            resp = None
            member_id = ""
            for _ in range(2):
                resp = w.request(ApiKey.JOIN_GROUP, 5, group_id=group, session_timeout_ms=30000,
                                 rebalance_timeout_ms=30000, member_id=member_id,
                                 group_instance_id=None, protocol_type=protocol_type,
                                 protocols=protocols)
                if resp.error_code != ErrorCode.MEMBER_ID_REQUIRED:
                    break
                member_id = resp.member_id
            return resp

        def find_coordinator(group: str) -> None:
            with WireClient(port) as w:
                wait_until(lambda: w.request(ApiKey.FIND_COORDINATOR, 3, key=group,
                                             key_type=0).error_code == 0, 30,
                           "a coordinator for the group")

        # a classic group with a member: a consumer-protocol join is GROUP_ID_NOT_FOUND
        find_coordinator("classic-g")
        with WireClient(port) as w:
            first = classic_join(w, "classic-g", "consumer")
            assert first.error_code == 0, first
            hb = w.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id="classic-g",
                           member_id="", member_epoch=0, rebalance_timeout_ms=30000,
                           subscribed_topic_names=[TOPIC], topic_partitions=[])
            assert hb.error_code == ErrorCode.GROUP_ID_NOT_FOUND, hb
            assert group_type(port, "classic-g") == "classic"

        # a consumer group: a JoinGroup of another protocol type is INCONSISTENT_GROUP_PROTOCOL
        find_coordinator("consumer-g")
        with WireClient(port) as w:
            hb = wait_until(lambda: (lambda r: r if r.error_code == 0 else None)(
                w.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id="consumer-g",
                          member_id="", member_epoch=0, rebalance_timeout_ms=30000,
                          subscribed_topic_names=[TOPIC], topic_partitions=[])), 30,
                "a consumer-protocol member joined")
            assert group_type(port, "consumer-g") == "consumer"
            bad = classic_join(w, "consumer-g", "connect")
            assert bad.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL, bad
            # a classic member may still join the consumer group (migration is about
            # converting groups, not about who may be in one), and the group stays a
            # consumer group after the last consumer-protocol member leaves
            ok = classic_join(w, "consumer-g", "consumer")
            assert ok.error_code == 0 and ok.generation_id > 0, ok
            left = w.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id="consumer-g",
                             member_id=hb.member_id, member_epoch=-1)
            assert left.error_code == 0, left
            assert group_type(port, "consumer-g") == "consumer"


if __name__ == "__main__":
    if sys.argv[1:2] == ["member"]:
        member_main(*sys.argv[2:9])
