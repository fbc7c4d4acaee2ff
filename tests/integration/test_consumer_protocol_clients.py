"""KIP-848 with stock clients: librdkafka and the Java client in one consumer group, one owner each.

Three brokers on a real ZooKeeper (__consumer_offsets and the topic at replication factor 3), a
topic of 6 partitions fed by a steady idempotent producer. Members are separate OS processes
with ``group.protocol=consumer``: confluent-kafka 2.16 (tests/integration/groups/
protocol_member.py) and the Java client 3.9.1 (JavaConsumerProtocolMember.java). Each logs its
assign/revoke/lost callbacks and its polled records with CLOCK_MONOTONIC times; the checker
(groups/ownership_checker.py) builds every partition's ownership intervals from those logs.

The run, one group throughout:
1. py1 (librdkafka) and java1 (Java) join: 3 + 3 partitions.
2. py2 joins the busy group: 2 + 2 + 2, and py1 and java1 keep consuming meanwhile: none of
   the partitions they keep is revoked (the consumer protocol revokes only what moves; an eager
   classic rebalance revokes everything - bench/consumer_protocol_join_pause.py shows it), and
   no gap in their records is longer than JOIN_PAUSE_LIMIT_S (ownership_checker.py).
3. py1 leaves cleanly (SIGTERM: close, leave heartbeat): 3 + 3.
4. py3 joins: 2 + 2 + 2.
5. py3 is SIGKILLed: its partitions move after the broker's session timeout (not before): 3 + 3.
6. The coordinator's broker (FindCoordinator) is SIGKILLed: the group moves to the new leader of
   its __consumer_offsets partition, which loads it without a rebalance (no partition moves),
   and consumption goes on on every partition; py4 joins there: 2 + 2 + 2.
7. The producer stops; every acknowledged record is consumed; everyone leaves.
Then: no two members owned a partition at the same moment; every record was polled by a member
that owned its partition; every partition had exactly one owner at each settled moment; every
acknowledged record was consumed, and a record came twice only when its first consumer was the
SIGKILLed member (counted and printed).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from protocol.api_keys import ApiKey
from tests.integration.clients.test_java_client import java_classpath  # noqa: F401
from tests.integration.cluster import Cluster, MakeCluster, WireClient
from tests.integration.groups import ownership_checker as oc
from tests.integration.groups.group_processes import (OwnedMember, SteadyProducer,
                                                      compile_java_member)
from tests.integration.multi import create_topic, partition_state, wait_until

PARTITIONS = 6
RATE = 120                      # records/s, round-robin over the partitions
SESSION_MS = 6000
HEARTBEAT_MS = 500
OVERRIDES = {"offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "4",
             "min.insync.replicas": "2", "default.replication.factor": "3",
             "replica.lag.time.max.ms": "5000",
             "group.consumer.session.timeout.ms": str(SESSION_MS),
             "group.consumer.min.session.timeout.ms": "1000",
             "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
             "group.consumer.min.heartbeat.interval.ms": "100"}


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("consumer-protocol", size=3, overrides=OVERRIDES)


@pytest.fixture(scope="module")
def java_cp(java_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> str:  # noqa: F811
    import shutil
    if shutil.which("javac") is None:
        pytest.skip("no javac on PATH (JDK 17 needed)")
    return compile_java_member(java_classpath, tmp_path_factory.mktemp("java-cp-member"))


# -- helpers -----------------------------------------------------------------------------------

def settled(members: list[OwnedMember], sizes: list[int], topic: str) -> bool:
    owned = [m.owned() for m in members]
    every = [tp for o in owned for tp in o]
    return (sorted(len(o) for o in owned) == sorted(sizes) and len(every) == len(set(every))
            and set(every) == {(topic, p) for p in range(PARTITIONS)})


def wait_settled(members: list[OwnedMember], sizes: list[int], topic: str, timeout: float,
                 what: str, everyone: list[OwnedMember]) -> int:
    """Until ``members`` own ``sizes`` partitions covering the topic once; -> when (ns)."""
    try:
        wait_until(lambda: settled(members, sizes, topic), timeout, what, interval=0.05)
    except AssertionError as e:
        raise AssertionError(f"{e}\n" + "\n".join(m.stderr_tail() for m in everyone)
                             + "\n" + describe_owned(everyone)) from None
    return time.monotonic_ns()


def describe_owned(members: list[OwnedMember]) -> str:
    return "owned: " + ", ".join(f"{m.name}={sorted(p for _, p in m.owned())}"
                                 for m in members if m.alive)


def rate_s(log: oc.MemberLog, start: int, end: int) -> float:
    n = sum(1 for t in log.record_times() if start <= t < end)
    return n / max((end - start) / 1e9, 1e-9)


def find_coordinator(port: int, group: str) -> int | None:
    with WireClient(port, timeout=5) as c:
        r = c.request(ApiKey.FIND_COORDINATOR, 3, key=group, key_type=0)
    return int(r.node_id) if r.error_code == 0 else None


# -- the checker alone (no processes) ------------------------------------------------------------

def write_log(path: Path, lines: list[str]) -> oc.MemberLog:
    path.write_text("".join(line + "\n" for line in lines))
    return oc.MemberLog(path.stem, path).refresh()


def test_checker_flags_an_overlap_and_a_stray_record(tmp_path: Path) -> None:
    a = write_log(tmp_path / "a.events", [
        '{"t": 100, "ev": "assign", "tps": [["t", 0], ["t", 1]]}',
        '{"t": 300, "ev": "revoke", "tps": [["t", 1]]}',
        '{"t": 350, "t0": 320, "ev": "records", "recs": [["t", 1, 7]]}'])
    b = write_log(tmp_path / "b.events", [
        '{"t": 250, "ev": "assign", "tps": [["t", 1]]}',
        '{"t": 400, "t0": 380, "ev": "records", "recs": [["t", 1, 7], ["t", 1, 8]]}'])
    found = oc.check([a, b], {("t", 1, 7), ("t", 1, 8), ("t", 0, 0)}, now=1000)
    assert [(x.member, y.member, x.tp) for x, y in found.overlaps] == [("a", "b", ("t", 1))]
    assert [(rid, d.member) for rid, d in found.outside] == [(("t", 1, 7), "a")]
    assert found.missing == {("t", 0, 0)}
    assert [(rid, f.member, g.member) for rid, f, g in found.redelivered] == [
        (("t", 1, 7), "a", "b")]
    assert oc.owners_at(oc.all_intervals([a, b]), 280) == {("t", 0): ["a"],
                                                           ("t", 1): ["a", "b"]}


def test_checker_accepts_a_handover_and_ends_a_killed_member(tmp_path: Path) -> None:
    a = write_log(tmp_path / "a.events", [
        '{"t": 100, "ev": "assign", "tps": [["t", 0]]}',
        '{"t": 150, "t0": 120, "ev": "records", "recs": [["t", 0, 0]]}',
        '{"t": 200, "ev": "revoke", "tps": [["t", 0]]}',
        '{"t": 500, "ev": "assign", "tps": [["t", 0]]}'])
    a.end = 600                                     # SIGKILLed: owned until it died
    b = write_log(tmp_path / "b.events", [
        '{"t": 201, "ev": "assign", "tps": [["t", 0]]}',
        '{"t": 260, "t0": 230, "ev": "records", "recs": [["t", 0, 1]]}',
        '{"t": 499, "ev": "revoke", "tps": [["t", 0]]}',
        '{"t": 700, "ev": "assign", "tps": [["t", 0]]}'])
    found = oc.check([a, b], {("t", 0, 0), ("t", 0, 1)}, now=1000)
    assert not found.overlaps and not found.outside and not found.missing
    assert not found.redelivered
    assert oc.owners_at(oc.all_intervals([a, b]), 650) == {}
    assert oc.owners_at(oc.all_intervals([a, b]), 800) == {("t", 0): ["b"]}
    a.end = 750                                     # had a died only after b took it again
    assert len(oc.check([a, b], set(), now=1000).overlaps) == 1


# -- the stock clients ----------------------------------------------------------------------------

@pytest.mark.integration
def test_librdkafka_and_java_one_owner_per_partition(cluster: Cluster, java_cp: str,
                                                    tmp_path: Path) -> None:
    port0 = cluster.brokers[0].port
    topic, group = f"cp-{uuid.uuid4().hex[:6]}", f"cp-g-{uuid.uuid4().hex[:6]}"
    assert create_topic(port0, topic, PARTITIONS, 3) == 0
    wait_until(lambda: all((s := partition_state(port0, topic, p)) and s.leader >= 0
                           for p in range(PARTITIONS)), 30, "the topic's leaders")
    producer = SteadyProducer(cluster.bootstrap, topic, PARTITIONS, RATE)
    producer.start()
    everyone: list[OwnedMember] = []
    killed: dict[str, int] = {}
    settles: list[int] = []
    phases: list[str] = []
    t_start = time.monotonic_ns()

    def member(kind: str, name: str) -> OwnedMember:
        # the Java member names the server assignor (group.remote.assignor), librdkafka's
        # leave it to the broker's default (the first of group.consumer.assignors): uniform
        m = OwnedMember(kind, name, tmp_path, cluster.bootstrap, topic, group, "consumer",
                        assignor="uniform" if kind == "java" else None,
                        java_cp=java_cp if kind == "java" else None)
        everyone.append(m)
        return m

    def settle(members: list[OwnedMember], sizes: list[int], timeout: float, what: str) -> int:
        t = wait_settled(members, sizes, topic, timeout, what, everyone)
        settles.append(t)
        phases.append(f"{what}: {(t - t_start) / 1e9:.1f}s")
        return t

    try:
        # 1. two members of two clients
        py1, java1 = member("confluent", "py1"), member("java", "java1")
        settle([py1, java1], [3, 3], 60, "py1 + java1 joined")
        time.sleep(2)

        # 2. a join into the busy group does not pause the others
        before = time.monotonic_ns()
        py2 = member("confluent", "py2")
        after = settle([py1, java1, py2], [2, 2, 2], 60, "py2 joined")
        gaps = {m.name: oc.longest_gap_s(m.log, before, after) for m in (py1, java1)}
        rates = {m.name: (round(rate_s(m.log, before - 2_000_000_000, before)),
                          round(rate_s(m.log, before, after))) for m in (py1, java1)}
        stopped = {m.name: oc.interrupted(m.log, before, after) for m in (py1, java1)}
        print(f"join of py2 took {(after - before) / 1e9:.2f}s; longest gaps of the others "
              f"{ {k: round(v, 3) for k, v in gaps.items()} } s; their records/s before -> "
              f"during {rates}")
        assert not any(stopped.values()), (
            f"partitions that stayed with their owner were revoked during py2's join: {stopped}")
        assert all(g < oc.JOIN_PAUSE_LIMIT_S for g in gaps.values()), (
            f"an existing member paused while py2 joined: longest gaps {gaps} (s), "
            f"limit {oc.JOIN_PAUSE_LIMIT_S}")

        # 3. a clean leave
        assert py1.leave() == 0 and py1.log.closed(), py1.stderr_tail()
        settle([java1, py2], [3, 3], 60, "py1 left")

        # 4. another join, 5. that member crashes: its partitions move after the session
        py3 = member("confluent", "py3")
        settle([java1, py2, py3], [2, 2, 2], 60, "py3 joined")
        py3.kill()
        killed[py3.name] = py3.log.end or 0
        t = settle([java1, py2], [3, 3], 60, "py3 killed, its partitions moved")
        moved_s = (t - killed["py3"]) / 1e9
        print(f"py3's partitions moved {moved_s:.1f}s after SIGKILL (session timeout "
              f"{SESSION_MS} ms)")
        # not before the session timeout (less py3's last heartbeat before the kill, with slack)
        assert moved_s >= (SESSION_MS - 1500) / 1000, f"moved {moved_s:.1f}s after the kill"

        # 6. the coordinator's broker dies; the group goes on at the new coordinator
        coordinator = wait_until(lambda: (lambda n: [n] if n is not None else None)(
            find_coordinator(port0, group)), 20, "the group's coordinator")[0]
        victim = cluster.broker(coordinator)
        survivors = [b for b in cluster.brokers if b is not victim]
        cluster.kill9(victim)
        t_kill = time.monotonic_ns()
        new = wait_until(lambda: (lambda n: [n] if n not in (None, coordinator) else None)(
            find_coordinator(survivors[0].port, group)), 60, "a new coordinator")[0]
        phases.append(f"coordinator {coordinator} killed at {(t_kill - t_start) / 1e9:.1f}s, "
                      f"new coordinator {new} after {(time.monotonic_ns() - t_kill) / 1e9:.1f}s")

        def consumed_since_kill() -> bool:
            got = {rid[1] for m in (java1, py2) for rid, d in m.log.refresh().deliveries()
                   if d.t0 > t_kill}
            return got == set(range(PARTITIONS))
        wait_until(consumed_since_kill, 60, "records of every partition consumed after the "
                   "coordinator's kill")
        t_again = time.monotonic_ns()
        # the new coordinator loaded the group from __consumer_offsets: no rebalance
        moves = [(m.name, e["ev"], e["tps"]) for m in (java1, py2) for e in m.log.events
                 if e["ev"] in ("assign", "revoke", "lost") and e["tps"] and t_kill <= e["t"]]
        assert not moves, f"the coordinator's failover moved partitions: {moves}"
        assert settled([java1, py2], [3, 3], topic), describe_owned(everyone)
        phases.append(f"every partition consumed again {(t_again - t_kill) / 1e9:.1f}s after "
                      f"the coordinator's kill; longest gaps of the survivors "
                      f"{[round(oc.longest_gap_s(m.log, t_kill, t_again), 1) for m in (java1, py2)]}s")
        py4 = member("confluent", "py4")
        settle([java1, py2, py4], [2, 2, 2], 60, "py4 joined at the new coordinator")

        # 7. drain and leave
        produced = producer.stop()
        assert not producer.errors, producer.errors[:5]
        wait_until(lambda: produced <= {rid for m in everyone
                                        for rid, _ in m.log.refresh().deliveries()},
                   60, "every acknowledged record consumed")
        for m in (java1, py2, py4):
            code = m.leave()        # the JVM exits 143 on SIGTERM, after its shutdown hook
            assert code in (0, 143) and m.log.closed(), (code, m.stderr_tail())
    finally:
        if producer.is_alive():
            producer.stop(5)
        for m in everyone:
            m.stop()

    logs = [m.log.refresh() for m in everyone]
    found = oc.check(logs, produced, time.monotonic_ns())
    excused = [(rid, f, g) for rid, f, g in found.redelivered
               if f.member in killed and f.t <= killed[f.member]]
    print("\n".join(phases))
    print(found.describe())
    print(f"{len(produced)} records; {len(excused)} re-delivered after the SIGKILL of "
          f"{sorted(killed)}")
    assert not found.overlaps, found.describe()
    assert not found.outside, found.describe()
    assert not found.missing, found.describe()
    assert len(excused) == len(found.redelivered), found.describe()
    intervals = oc.all_intervals(logs)
    for t in settles:
        owners = oc.owners_at(intervals, t)
        assert {p: len(o) for (_, p), o in owners.items()} == {
            p: 1 for p in range(PARTITIONS)}, (f"owners at {t / 1e9:.3f}s: {owners}")
