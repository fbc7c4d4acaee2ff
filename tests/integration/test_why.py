"""DescribeWhy against a real cluster: ZooKeeper + 3 brokers (replica.lag.time.max.ms =
3000), stock clients (confluent-kafka) producing and consuming, our client
(client/why_admin.py) asking the brokers why.

1. Groups: three consumers in a group; one closes -> the coordinator's newest
   rebalance is a "leave" naming its member and client id; one (a subprocess)
   is SIGKILLed -> after session.timeout.ms a "timeout" naming it.
2. HW holder: a follower SIGSTOPped while a producer keeps producing with acks=1
   -> the leader names it in hw_held_by before the ISR shrinks; then the shrink
   names it with a reason and a lag; after SIGCONT an expand names it.
3. A follower killed with SIGKILL -> the newest shrink names it with a reason and
   a lag; restarted, it catches up -> an expand names it.
4. BrokerStatus: ZooKeeper CONNECTED, one controller; ApiVersions does not list
   DescribeWhy; a partition asked of a non-leader -> NOT_LEADER_OR_FOLLOWER; hostile
   DescribeWhy frames (huge counts) close the connection and nothing else.

Every process started here is stopped by its pid.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from client.admin import KafkaAdmin
from client.why_admin import describe_broker_status, describe_group_why, describe_partition_why
from protocol.why_model import EXPAND, SHRINK, GroupWhy, PartitionWhy
from protocol.api_keys import PybrokerApiKey
from protocol.errors import ErrorCode, KafkaError

from tests.integration.cluster import Cluster, MakeCluster, WireClient
from tests.integration.multi import controller_id, create_topic, partition_state, wait_until

pytestmark = pytest.mark.integration
ck = pytest.importorskip("confluent_kafka")

LAG_MS = 3000
SESSION_MS = 6000
T = TypeVar("T")


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("why", size=3, first_id=1, overrides={
        "replica.lag.time.max.ms": str(LAG_MS),
        # a paused follower must leave the ISR (after 3-4.5 s) well before its session expires
        "zookeeper.session.timeout.ms": "10000",
        "group.min.session.timeout.ms": str(SESSION_MS),
    })


def ask(c: Cluster, fn: Callable[..., Any], *args: Any, avoid: int | None = None) -> Any:
    """``fn(admin, *args)`` over a fresh KafkaAdmin; ``avoid``: a paused broker, left
    out of the bootstrap list (it would accept the connection and never answer)."""
    servers = ",".join(b.bootstrap for b in c.brokers if b.broker_id != avoid)

    async def main() -> Any:
        async with KafkaAdmin(servers, timeout=10) as admin:
            return await fn(admin, *args)
    return asyncio.run(main())


def topic_in_sync(c: Cluster, topic: str) -> None:
    """Creates ``topic`` (1 partition, 3 replicas) and waits until its leader has had
    a Fetch from both followers. The ISR is full from the creation on, before any
    follower has fetched; a follower paused before its first fetch would leave the
    ISR having never fetched (no lag in messages to name)."""
    port = c.brokers[0].port
    assert create_topic(port, topic, 1, 3) == ErrorCode.NONE
    wait_until(lambda: (st := partition_state(port, topic, 0)) is not None and st.leader >= 0
               and len(st.isr) == 3, 20, f"{topic}: a leader and a full ISR")
    until_why(c, topic, lambda w: all(r.last_fetch_ms > 0 for r in w.replicas
                                      if r.broker_id != w.leader), 20,
              f"{topic}: both followers have fetched from the leader")


def pick_follower(c: Cluster, topic: str) -> tuple[int, int]:
    """(leader, a follower that is not the controller: pausing the controller would
    also stop it committing the shrink)."""
    port = c.brokers[0].port
    st = partition_state(port, topic, 0)
    assert st is not None
    ctl = controller_id(port)
    follower = next(r for r in st.replicas if r not in (st.leader, ctl))
    return st.leader, follower


def producer(c: Cluster, acks: str) -> Any:
    return ck.Producer({"bootstrap.servers": c.bootstrap, "acks": acks, "linger.ms": 5,
                        "message.timeout.ms": 20000})


def until_why(c: Cluster, topic: str, cond: Callable[[PartitionWhy], bool], timeout: float,
              what: str, tick: Callable[[], None] = lambda: None,
              avoid: int | None = None) -> PartitionWhy:
    deadline = time.monotonic() + timeout
    last: PartitionWhy | None = None
    while time.monotonic() < deadline:
        tick()
        last = ask(c, describe_partition_why, topic, 0, avoid=avoid)
        if cond(last):
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout:g}s; last answer {last}")


def newest(w: PartitionWhy, kind: str) -> Any:
    found = [e for e in w.isr_changes if e.kind == kind]
    return found[-1] if found else None


# ---- 1. groups ---------------------------------------------------------------------------

KILLED_CONSUMER = """
import sys, confluent_kafka as ck
c = ck.Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[3],
                 "client.id": "why-killed", "session.timeout.ms": int(sys.argv[4]),
                 "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"})
c.subscribe([sys.argv[2]])
while True:
    c.poll(0.2)
"""


def consumer(c: Cluster, group: str, client_id: str) -> Any:
    return ck.Consumer({"bootstrap.servers": c.bootstrap, "group.id": group,
                        "client.id": client_id, "session.timeout.ms": SESSION_MS,
                        "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"})


def until_group(c: Cluster, group: str, cond: Callable[[GroupWhy], bool], timeout: float,
                what: str, consumers: list[Any]) -> GroupWhy:
    deadline = time.monotonic() + timeout
    last: GroupWhy | None = None
    while time.monotonic() < deadline:
        for cons in consumers:
            cons.poll(0.1)
        try:
            last = ask(c, describe_group_why, group)
        except KafkaError:
            continue
        if cond(last):
            return last
    raise AssertionError(f"{what}: not within {timeout:g}s; last answer {last}")


def clients(w: GroupWhy, kind: str) -> list[str]:
    return [e.client_id for e in w.rebalances if e.kind == kind]


def test_group_rebalances_name_who_left_and_who_timed_out(cluster: Cluster) -> None:
    topic, group = "why-group", "why-g"
    assert create_topic(cluster.brokers[0].port, topic, 2, 1) == ErrorCode.NONE
    stays, leaver = consumer(cluster, group, "why-stays"), consumer(cluster, group, "why-leaver")
    killed = subprocess.Popen([sys.executable, "-c", KILLED_CONSUMER, cluster.bootstrap, topic,
                               group, str(SESSION_MS)], stdin=subprocess.DEVNULL)
    try:
        stays.subscribe([topic])
        leaver.subscribe([topic])
        w = until_group(cluster, group, lambda w: w.state == "Stable" and {
            "why-stays", "why-leaver", "why-killed"} <= set(
                clients(w, "join") + clients(w, "new-group")), 40, "three members",
            [stays, leaver])
        leaver.close()
        w = until_group(cluster, group, lambda w: "why-leaver" in clients(w, "leave"), 20,
                        "a leave", [stays])
        leave = [e for e in w.rebalances if e.kind == "leave"][-1]
        assert leave.client_id == "why-leaver" and leave.member_id.startswith("why-leaver")
        assert leave.reason.startswith("left the group")
        assert leave.host.endswith("127.0.0.1")
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        w = until_group(cluster, group, lambda w: "why-killed" in clients(w, "timeout"),
                        SESSION_MS / 1000 + 20, "a timeout", [stays])
        timeout = [e for e in w.rebalances if e.kind == "timeout"][-1]
        assert timeout.member_id.startswith("why-killed")
        assert timeout.reason == f"no heartbeat within session.timeout.ms={SESSION_MS:,}"
        assert w.rebalances == sorted(w.rebalances, key=lambda e: e.time_ms)
    finally:
        if killed.poll() is None:
            killed.kill()
            killed.wait(10)
        stays.close()


# ---- 2. the HW holder (SIGSTOP) ----------------------------------------------------------

def test_a_paused_follower_holds_the_hw_then_leaves_and_rejoins_the_isr(cluster: Cluster) -> None:
    topic = "why-paused"
    topic_in_sync(cluster, topic)
    leader, follower = pick_follower(cluster, topic)
    p = producer(cluster, "1")
    pid = cluster.broker(follower).pid
    assert pid is not None

    def produce_some() -> None:
        for i in range(20):
            p.produce(topic, value=b"v%d" % i, partition=0)
        p.flush(5)

    produce_some()
    os.kill(pid, signal.SIGSTOP)
    try:
        # before the shrink (replica.lag.time.max.ms after its last catch-up)
        w = until_why(cluster, topic, lambda w: w.hw_held_by == [follower] or follower
                      not in w.isr, 10, "the paused follower holds the HW", produce_some,
                      avoid=follower)
        assert w.hw_held_by == [follower], f"the ISR shrank first: {w}"
        assert w.leader == leader and follower in w.isr
        assert w.high_watermark < w.log_end_offset
        w = until_why(cluster, topic, lambda w: follower not in w.isr, 20,
                      "the ISR shrinks", produce_some, avoid=follower)
        shrink = newest(w, SHRINK)
        assert shrink is not None and shrink.replica == follower
        assert follower not in shrink.isr_after and leader in shrink.isr_after
        assert shrink.lag_ms > LAG_MS and shrink.lag_messages > 0
        assert "replica.lag.time.max.ms=3000" in shrink.reason
        assert follower not in w.hw_held_by
    finally:
        os.kill(pid, signal.SIGCONT)
    w = until_why(cluster, topic, lambda w: follower in w.isr, 30, "the follower rejoins")
    expand = newest(w, EXPAND)
    assert expand is not None and expand.replica == follower and "caught up" in expand.reason
    by_id = {r.broker_id: r for r in w.replicas}
    assert by_id[follower].in_isr and by_id[follower].last_fetch_ms > 0


# ---- 3. a killed follower (SIGKILL) ------------------------------------------------------

def test_a_killed_follower_is_named_in_the_shrink_and_the_expand(cluster: Cluster) -> None:
    topic = "why-killed"
    topic_in_sync(cluster, topic)
    leader, follower = pick_follower(cluster, topic)
    p = producer(cluster, "1")

    def produce_some() -> None:
        for i in range(10):
            p.produce(topic, value=b"k%d" % i, partition=0)
        p.flush(10)

    produce_some()
    cluster.kill9(cluster.broker(follower))
    w = until_why(cluster, topic, lambda w: follower not in w.isr, 30, "the ISR shrinks",
                  produce_some)
    shrink = newest(w, SHRINK)
    assert shrink is not None and shrink.replica == follower
    assert shrink.reason and shrink.lag_ms > 0
    assert sorted(shrink.isr_after) == sorted(r for r in w.isr)
    cluster.restart(cluster.broker(follower))
    produce_some()
    w = until_why(cluster, topic, lambda w: follower in w.isr, 40, "the follower rejoins",
                  produce_some)
    expand = newest(w, EXPAND)
    assert expand is not None and expand.replica == follower
    assert w.isr_changes.index(expand) > w.isr_changes.index(shrink)


# ---- 4. broker status, errors, not advertised --------------------------------------------

def test_broker_status_errors_and_not_advertised(cluster: Cluster) -> None:
    ctl = controller_id(cluster.brokers[0].port)
    for b in cluster.brokers:
        s = ask(cluster, describe_broker_status, b.broker_id)
        assert s.broker_id == b.broker_id and s.zk_session_state == "CONNECTED"
        assert s.is_controller == (b.broker_id == ctl) and s.controller_id == ctl
        assert s.uptime_ms > 0
    with WireClient(cluster.brokers[0].port) as wc:
        keys = {k.api_key for k in wc.api_versions().api_keys}
    assert PybrokerApiKey.DESCRIBE_WHY not in keys and 0 in keys

    topic = "why-errors"
    topic_in_sync(cluster, topic)
    leader, follower = pick_follower(cluster, topic)
    from client.why_admin import RESOURCE_PARTITION, describe_why

    async def at(broker_id: int, resources: list[tuple[int, str, int]]) -> list[Any]:
        async with KafkaAdmin(cluster.bootstrap, timeout=10) as admin:
            return await describe_why(await admin.broker_connection(broker_id), resources)

    r1, r2, r3 = asyncio.run(at(follower, [(RESOURCE_PARTITION, topic, 0),
                                           (RESOURCE_PARTITION, "no-such-topic", 0),
                                           (9, "", -1)]))
    assert r1.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and r1.partition_why is None
    assert r2.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert r3.error_code == ErrorCode.INVALID_REQUEST and "unknown resource type" in r3.error_message
    [ok] = asyncio.run(at(leader, [(RESOURCE_PARTITION, topic, 0)]))
    assert ok.error_code == 0 and ok.partition_why.leader == leader
    with pytest.raises(KafkaError) as e:
        ask(cluster, describe_partition_why, "no-such-topic", 0)
    assert e.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_hostile_describe_why_frames_close_the_connection_only(cluster: Cluster) -> None:
    from protocol.spec import api
    from tests.unit.protocol.test_decode_limits import hostile_frames

    b = cluster.brokers[0]
    frames = list(hostile_frames(api(PybrokerApiKey.DESCRIBE_WHY).request, 0))
    assert len(frames) >= 2
    for body in frames:
        with WireClient(b.port) as wc:
            _cid, head = wc.header_bytes(PybrokerApiKey.DESCRIBE_WHY, 0)
            wc.send_frame(head + body)
            assert wc.is_closed_by_peer()
    assert b.running
    assert ask(cluster, describe_broker_status, b.broker_id).zk_session_state == "CONNECTED"
