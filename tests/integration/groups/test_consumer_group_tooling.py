"""The operator's view of both kinds of group on a real broker (real ZooKeeper):
a KIP-848 consumer group of two confluent-kafka members (``group.protocol=consumer``)
and a classic group of one, side by side.

1. ``pybroker consumer-groups``: ``--list`` (``--type``, ``--state``) shows each
   group's type and state; ``--describe`` shows offsets and lag of both;
   ``--describe --members --verbose`` the consumer group's member epochs and current
   and target assignments ("-" for the classic group's); ``--describe --state
   --verbose`` its group epoch, target assignment epoch and assignor.
2. The broker's metrics endpoint: group-count by protocol, consumer-group-count by
   state, the epoch-bump count, and kafka-exporter's lag for the consumer group's
   committed offsets.
3. The web console (headless Chromium): the groups page lists both with their
   type; the consumer group's page shows its epochs, assignor, each member's epoch
   and current vs target assignment.
4. After the members close: the empty consumer group's offsets are reset, deleted
   and the group itself deleted with the same tool.

The consumers are polled by one thread each (heartbeats and rebalance callbacks
need poll()); every process started here (broker, ZooKeeper by the fixtures, the
console, Chromium) is stopped by its pid.
"""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.errors import ErrorCode
from tests.integration.cluster import REPO, Cluster, MakeCluster
from tests.integration.multi import create_topic, wait_until
from tests.integration.zookeeper import free_port
from tools import consumer_groups as cg

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:6]
NEW_TOPIC, OLD_TOPIC = f"tooling-new-{RUN}", f"tooling-old-{RUN}"
NEW_GROUP, OLD_GROUP = f"tooling-consumer-{RUN}", f"tooling-classic-{RUN}"
NEW_PARTITIONS, OLD_PARTITIONS, PER_PARTITION = 4, 2, 10
NEW_COMMITS = {p: 2 + p for p in range(NEW_PARTITIONS)}      # lag 8 - p
OLD_COMMITS = {p: 5 + p for p in range(OLD_PARTITIONS)}      # lag 5 - p
GCM = "kafka_server_group_coordinator_metrics_"


# -- the broker, the data and the groups --------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    c = make_cluster("cg-tooling", start=False)
    c.brokers[0].overrides = {**c.brokers[0].overrides,
                              "prometheus.listener": f"127.0.0.1:{free_port()}"}
    c.start()
    for topic, n in ((NEW_TOPIC, NEW_PARTITIONS), (OLD_TOPIC, OLD_PARTITIONS)):
        assert create_topic(c.brokers[0].port, topic, n, 1) == ErrorCode.NONE
    producer = confluent_kafka.Producer({"bootstrap.servers": c.bootstrap})
    for topic, n in ((NEW_TOPIC, NEW_PARTITIONS), (OLD_TOPIC, OLD_PARTITIONS)):
        for p in range(n):
            for i in range(PER_PARTITION):
                producer.produce(topic, value=b"%d" % i, partition=p)
    assert producer.flush(30) == 0
    return c


class Polled:
    """A confluent-kafka consumer polled by a thread of its own until ``close``."""

    def __init__(self, config: dict[str, Any], topic: str) -> None:
        self.consumer = confluent_kafka.Consumer(config)
        self.consumer.subscribe([topic])
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self.lock:
                msg = self.consumer.poll(0.1)
            if msg is not None and msg.error() is not None:
                self.errors.append(str(msg.error()))
            time.sleep(0.01)

    def assignment(self) -> set[int]:
        with self.lock:
            return {tp.partition for tp in self.consumer.assignment()}

    def commit(self, topic: str, offsets: dict[int, int]) -> None:
        with self.lock:
            mine = {tp.partition for tp in self.consumer.assignment()}
            self.consumer.commit(offsets=[confluent_kafka.TopicPartition(topic, p, o)
                                          for p, o in offsets.items() if p in mine],
                                 asynchronous=False)

    def close(self) -> None:
        self._stop.set()
        self.thread.join(10)
        self.consumer.close()


def member_config(cluster: Cluster, group: str, client_id: str, protocol: str) -> dict[str, Any]:
    cfg: dict[str, Any] = {"bootstrap.servers": cluster.bootstrap, "group.id": group,
                           "client.id": client_id, "enable.auto.commit": False,
                           "auto.offset.reset": "earliest"}
    if protocol == "consumer":
        cfg.update({"group.protocol": "consumer", "group.remote.assignor": "uniform"})
    else:
        cfg.update({"session.timeout.ms": 10000, "partition.assignment.strategy": "range"})
    return cfg


def tool(cluster: Cluster, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = cg.main(["--bootstrap-server", cluster.bootstrap, "--timeout", "15000", *argv],
                 stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def tables(text: str) -> list[list[list[str]]]:
    """Every table in ``text`` (a header line starting with GROUP/TOPIC, then rows up to
    the next blank line), split on spaces, header first."""
    out: list[list[list[str]]] = []
    current: list[list[str]] | None = None
    for line in text.splitlines():
        if line.startswith(("GROUP ", "TOPIC ")):
            current = [line.split()]
            out.append(current)
        elif not line.strip():
            current = None
        elif current is not None:
            current.append(line.split())
    return out


def rows_of(text: str, group: str) -> list[list[str]]:
    return [r for t in tables(text) for r in t[1:] if r[0] == group]


@pytest.fixture(scope="module")
def groups(cluster: Cluster) -> Iterator[dict[str, list[Polled]]]:
    """The consumer group (2 members, uniform assignor) and the classic group (1
    member), Stable, with NEW_COMMITS / OLD_COMMITS committed."""
    new = [Polled(member_config(cluster, NEW_GROUP, f"kip848-{i}", "consumer"), NEW_TOPIC)
           for i in range(2)]
    old = [Polled(member_config(cluster, OLD_GROUP, "classic-0", "classic"), OLD_TOPIC)]
    try:
        wait_until(lambda: sorted(p for m in new for p in m.assignment())
                   == list(range(NEW_PARTITIONS)) and all(m.assignment() for m in new),
                   60, "the consumer group's two members own every partition once")
        wait_until(lambda: old[0].assignment() == set(range(OLD_PARTITIONS)), 60,
                   "the classic member's assignment")
        for m in new:
            m.commit(NEW_TOPIC, NEW_COMMITS)
        old[0].commit(OLD_TOPIC, OLD_COMMITS)
        wait_until(lambda: [NEW_GROUP, "Stable"] in [r[:1] + r[-1:] for r in tables(
            tool(cluster, "--list", "--state")[1])[0][1:]], 60, "the consumer group Stable")
        yield {"new": new, "old": old}
    finally:
        for m in new + old:
            m.close()


# -- 1. pybroker consumer-groups -----------------------------------------------------------

def test_list_shows_type_and_state(cluster: Cluster, groups: dict[str, list[Polled]]) -> None:
    rc, out, _ = tool(cluster, "--list")
    assert rc == 0 and {NEW_GROUP, OLD_GROUP} <= set(out.split())
    rc, out, _ = tool(cluster, "--list", "--type", "--state")
    [table] = tables(out)
    assert rc == 0 and table[0] == ["GROUP", "TYPE", "STATE"]
    assert [NEW_GROUP, "Consumer", "Stable"] in table[1:]
    assert [OLD_GROUP, "Classic", "Stable"] in table[1:]
    rc, out, _ = tool(cluster, "--list", "--type", "consumer")
    [table] = tables(out)
    assert table[0] == ["GROUP", "TYPE"] and [NEW_GROUP, "Consumer"] in table[1:]
    assert OLD_GROUP not in out
    rc, out, _ = tool(cluster, "--list", "--type", "classic", "--state", "stable")
    assert [OLD_GROUP, "Classic", "Stable"] in tables(out)[0] and NEW_GROUP not in out


def test_describe_offsets_and_lag_of_both(cluster: Cluster,
                                          groups: dict[str, list[Polled]]) -> None:
    rc, out, err = tool(cluster, "--describe", "--group", NEW_GROUP, "--group", OLD_GROUP)
    assert rc == 0, out + err
    new_rows, old_rows = rows_of(out, NEW_GROUP), rows_of(out, OLD_GROUP)
    assert sorted(int(r[2]) for r in new_rows) == list(range(NEW_PARTITIONS))
    for r in new_rows:
        p = int(r[2])
        assert r[1] == NEW_TOPIC and r[3:6] == [str(NEW_COMMITS[p]), "10",
                                                 str(10 - NEW_COMMITS[p])]
        assert r[8].startswith("kip848-")                    # CLIENT-ID of the owner
    assert len({r[6] for r in new_rows}) == 2                 # two members own them
    assert {int(r[2]): int(r[5]) for r in old_rows} == {p: 10 - o for p, o in
                                                        OLD_COMMITS.items()}
    rc, out, _ = tool(cluster, "--describe", "--group", NEW_GROUP, "--offsets", "--verbose")
    [table] = tables(out)
    assert rc == 0 and table[0][3] == "LEADER-EPOCH"
    assert {int(r[2]): int(r[4]) for r in table[1:]} == NEW_COMMITS
    assert all(r[3] == "-" or int(r[3]) >= 0 for r in table[1:])


def test_describe_members_verbose_shows_epochs_and_assignments(
        cluster: Cluster, groups: dict[str, list[Polled]]) -> None:
    rc, out, err = tool(cluster, "--describe", "--group", NEW_GROUP, "--members", "--verbose")
    assert rc == 0, out + err
    [table] = tables(out)
    assert table[0] == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                        "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH",
                        "TARGET-ASSIGNMENT"]
    owned: list[int] = []
    for row in table[1:]:
        n, epoch, current, target_epoch, target = row[-5:]
        assert epoch == target_epoch and int(epoch) >= 1     # Stable: at the target epoch
        assert current == target and current.startswith(f"{NEW_TOPIC}:")
        parts = [int(p) for p in current.split(":", 1)[1].split(",")]
        assert len(parts) == int(n) == 2                      # uniform: 2 partitions each
        owned += parts
    assert sorted(owned) == list(range(NEW_PARTITIONS))
    members = {m.consumer.memberid() for m in groups["new"]}
    assert {row[1] for row in table[1:]} == members
    rc, out, _ = tool(cluster, "--describe", "--group", OLD_GROUP, "--members", "--verbose")
    [table] = tables(out)
    [row] = table[1:]
    assert row[-5:] == ["2", "-", f"{OLD_TOPIC}:0,1", "-", "-"]      # classic: no epochs


def test_describe_state_of_both(cluster: Cluster, groups: dict[str, list[Polled]]) -> None:
    rc, out, _ = tool(cluster, "--describe", "--group", NEW_GROUP, "--group", OLD_GROUP,
                      "--state", "--verbose")
    assert rc == 0
    [new] = rows_of(out, NEW_GROUP)
    assert new[3:5] == ["uniform", "Stable"] and new[-1] == "2"
    group_epoch, assignment_epoch = int(new[5]), int(new[6])
    assert group_epoch == assignment_epoch >= 2          # two joins: two bumps at least
    [old] = rows_of(out, OLD_GROUP)
    assert old[3:] == ["range", "Stable", "-", "-", "1"]
    rc, out, _ = tool(cluster, "--describe", "--group", NEW_GROUP, "--state")
    assert rc == 0 and rows_of(out, NEW_GROUP)[0][3:] == ["uniform", "Stable", "2"]


# -- 2. the metrics endpoint ------------------------------------------------------------------

def scrape(cluster: Cluster) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    port = int(cluster.brokers[0].overrides["prometheus.listener"].rsplit(":", 1)[1])
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        if m and not line.startswith("#"):
            labels = frozenset(re.findall(r'([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def test_metrics_count_both_protocols_and_lag(cluster: Cluster,
                                              groups: dict[str, list[Polled]]) -> None:
    s = scrape(cluster)

    def v(name: str, **labels: str) -> float:
        return s.get((name, frozenset(labels.items())), -1.0)
    assert v(GCM + "group_count", protocol="consumer") == 1
    assert v(GCM + "group_count", protocol="classic") == 1
    assert v(GCM + "consumer_group_count", state="Stable") == 1
    assert v(GCM + "consumer_group_count", state="Assigning") == 0
    assert v("kafka_coordinator_group_groupmetadatamanager_numgroupsstable") == 1
    assert v("kafka_consumergroup_members", consumergroup=NEW_GROUP) == 2
    for p, o in NEW_COMMITS.items():
        assert v("kafka_consumergroup_current_offset", consumergroup=NEW_GROUP, topic=NEW_TOPIC,
                 partition=str(p)) == o
        assert v("kafka_consumergroup_lag", consumergroup=NEW_GROUP, topic=NEW_TOPIC,
                 partition=str(p)) == 10 - o
    assert v("kafka_consumergroup_lag_sum", consumergroup=NEW_GROUP, topic=NEW_TOPIC) == sum(
        10 - o for o in NEW_COMMITS.values())


def test_metrics_count_epoch_bumps(cluster: Cluster, groups: dict[str, list[Polled]]) -> None:
    s = scrape(cluster)
    assert s.get((GCM + "consumer_group_rebalance_count", frozenset()), 0) >= 2


# -- 3. the console ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def console(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.integration.test_console import CHROMIUM, Browser
    if not CHROMIUM.exists():
        pytest.skip("headless Chromium is needed: /usr/bin/chromium is absent")
    log = open(tmp_path_factory.mktemp("console-log") / "console.log", "w+b")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.console", "--bootstrap-server", cluster.bootstrap,
         "--listen", "127.0.0.1:0"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)/", line)
        assert m, f"console did not start: {line!r}"
        yield Browser(m.group(1), Path(tmp_path_factory.mktemp("chromium")))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()


def test_console_shows_both_kinds_and_the_consumer_group(
        cluster: Cluster, groups: dict[str, list[Polled]], console: Any) -> None:
    from tests.integration.test_console import element, text_of
    listing = text_of(element(console.dom("/groups", "kip848-groups"), "groups"))
    assert f"{NEW_GROUP} Consumer Stable" in listing and f"{OLD_GROUP} Classic Stable" in listing
    dom = console.dom("/group", "kip848-group", id=NEW_GROUP)
    text = text_of(dom)
    assert "Type consumer (KIP-848)" in text and "Assignor uniform" in text
    epoch = re.search(r"Group epoch (\d+) Assignment epoch (\d+)", text)
    assert epoch is not None and epoch.group(1) == epoch.group(2)
    members = text_of(element(dom, "members"))
    assert "Member epoch Reconciliation Current assignment Target assignment" in members
    for m in groups["new"]:
        assert m.consumer.memberid() in members
    assert members.count(" stable ") == 2
    assert members.count(f"{NEW_TOPIC}: ") == 4           # current and target of each member
    offsets = text_of(element(dom, "offsets"))
    assert f"{NEW_TOPIC} 0 2 10 8" in offsets
    why = text_of(element(dom, "rebalance-why"))
    assert "to group epoch" in why and "joined" in why
    old = text_of(console.dom("/group", "classic-group", id=OLD_GROUP))
    assert "Type classic" in old and "Group epoch" not in old


# -- 4. an empty consumer group: reset, delete offsets, delete ------------------------------

def test_empty_consumer_group_reset_delete_offsets_and_delete(
        cluster: Cluster, groups: dict[str, list[Polled]]) -> None:
    for m in groups["new"]:
        m.close()
    groups["new"] = []
    wait_until(lambda: [NEW_GROUP, "Consumer", "Empty"] in tables(
        tool(cluster, "--list", "--type", "--state")[1])[0], 60, "the consumer group Empty")
    rc, out, err = tool(cluster, "--describe", "--group", NEW_GROUP)
    assert rc == 0 and "has no active members" in err
    rows = rows_of(out, NEW_GROUP)      # every partition listed, none with a member
    assert sorted(int(r[2]) for r in rows) == list(range(NEW_PARTITIONS))
    assert all(r[6:] == ["-", "-", "-"] for r in rows)
    rc, out, _ = tool(cluster, "--describe", "--group", NEW_GROUP, "--state", "--verbose")
    assert rows_of(out, NEW_GROUP)[0][4] == "Empty"
    rc, out, _ = tool(cluster, "--reset-offsets", "--group", NEW_GROUP, "--topic", NEW_TOPIC,
                      "--to-earliest", "--execute")
    assert rc == 0, out
    rc, out, _ = tool(cluster, "--describe", "--group", NEW_GROUP)
    assert {int(r[2]): int(r[3]) for r in rows_of(out, NEW_GROUP)} == dict.fromkeys(
        range(NEW_PARTITIONS), 0)
    rc, out, _ = tool(cluster, "--delete-offsets", "--group", NEW_GROUP, "--topic",
                      f"{NEW_TOPIC}:0")
    assert rc == 0 and tables(out)[0][1:] == [[NEW_TOPIC, "0", "Successful"]]
    rc, out, _ = tool(cluster, "--describe", "--group", NEW_GROUP)
    assert sorted(int(r[2]) for r in rows_of(out, NEW_GROUP)) == [1, 2, 3]
    rc, out, _ = tool(cluster, "--delete", "--group", NEW_GROUP)
    assert rc == 0 and f"('{NEW_GROUP}') was successful" in out
    assert NEW_GROUP not in tool(cluster, "--list")[1].split()
    rc, out, _ = tool(cluster, "--describe", "--group", NEW_GROUP)
    assert rc == 1 and f"Consumer group '{NEW_GROUP}' does not exist." in out
    # the classic group is untouched
    rc, out, _ = tool(cluster, "--describe", "--group", OLD_GROUP, "--state")
    assert rows_of(out, OLD_GROUP)[0][3:] == ["range", "Stable", "1"]
