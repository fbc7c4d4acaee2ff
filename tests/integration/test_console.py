"""The web console (``pybroker console``) against a real 3-broker cluster,
its pages loaded in headless Chromium (Debian's /usr/bin/chromium, driven by
its own command line: ``--dump-dom`` for the rendered DOM, ``--screenshot``).

1. Every page loads and shows the cluster: broker ids, the topic and its
   partition rows, the consumer group's member (a confluent-kafka consumer)
   and its lag, a produced message's key / value / header (JSON pretty-printed,
   a ``<script>`` key escaped so that it is text in the DOM, not an element).
2. A second group member joins and leaves: the group page's last rebalance
   names it ("... (client console-leaver, ...) left").
3. After a follower is killed (SIGKILL) and the ISR shrinks
   (replica.lag.time.max.ms=3000), the partition page shows the partition
   under-replicated and (with the why facts of client/why_admin.py) names that
   broker as the one that left the ISR, and why.

Screenshots of every page are kept under ``test-artifacts/console/`` at the
repository root (git-ignored). The console runs as a subprocess
(``python -m tools.console --listen 127.0.0.1:0``) and is stopped by its pid;
each Chromium run gets a fresh profile directory and its own process group,
stopped by that group's id if it overruns.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from protocol.errors import ErrorCode
from tests.integration.cluster import REPO, Cluster, MakeCluster
from tests.integration.multi import controller_id, create_topic, partition_state, wait_until

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts" / "console"
TOPIC = "console-topic"
GROUP = "console-group"
LAG_MS = 3000
EVIL_KEY = "<script>alert('k')</script>"

if not CHROMIUM.exists():
    pytest.skip("headless Chromium is needed: /usr/bin/chromium is absent "
                "(apt-get install -y chromium; `make test` installs it when root)",
                allow_module_level=True)
confluent_kafka = pytest.importorskip("confluent_kafka")


# -- Chromium -------------------------------------------------------------------------------

def chromium(args: list[str], tmp: Path, timeout: float = 60.0) -> str:
    """Run headless Chromium once with a fresh profile and temp dir; -> its stdout.

    With --disable-dev-shm-usage Chromium keeps its shared memory in files it creates
    in TMPDIR (``.org.chromium.Chromium.XXXXXX``) and unlinks once mapped; a process
    that ends between the two leaves its file behind (seen in /tmp after full runs).
    TMPDIR is a directory of this call's own, removed with the profile. It is made by
    mkdtemp (short, in the system temp dir), not under pytest's tmp: Chromium puts its
    SingletonSocket there, and a Unix socket's path must fit in 108 bytes."""
    profile = tmp / f"chromium-profile-{time.monotonic_ns()}"
    profile.mkdir(parents=True)
    tmpdir = Path(tempfile.mkdtemp(prefix="pybroker-chromium-"))
    argv = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={profile}", *args]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "TMPDIR": str(tmpdir)})
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)      # the group we started, by its id
        proc.communicate()
        raise AssertionError(f"chromium did not finish within {timeout:g}s: {argv}") from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
        shutil.rmtree(tmpdir, ignore_errors=True)
    assert proc.returncode == 0, f"chromium exited {proc.returncode}: {err.decode()[-2000:]}"
    return out.decode("utf-8", "replace")


class Browser:
    def __init__(self, base_url: str, tmp: Path) -> None:
        self.base_url = base_url
        self.tmp = tmp

    def url(self, path: str, **params: Any) -> str:
        return self.base_url + path + ("?" + urlencode(params) if params else "")

    def dom(self, path: str, shot: str, **params: Any) -> str:
        """The DOM after load, and a screenshot kept as ARTIFACTS/<shot>.png."""
        url = self.url(path, **params)
        dom = chromium(["--dump-dom", url], self.tmp)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        target = ARTIFACTS / f"{shot}.png"
        chromium([f"--screenshot={target}", "--window-size=1280,900", url], self.tmp)
        assert target.exists() and target.stat().st_size > 1000, f"no screenshot of {url}"
        assert "<title>" in dom, dom[:500]
        return dom


def text_of(dom: str) -> str:
    """The DOM's text with tags removed and whitespace collapsed (entities kept)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))


def element(dom: str, element_id: str) -> str:
    m = re.search(rf'<(\w+)[^>]*\bid="{re.escape(element_id)}"', dom)
    assert m is not None, f'no element id="{element_id}"'
    end = dom.find(f"</{m.group(1)}>", m.end())
    return dom[m.start():end]


# -- the cluster, data, a consumer group and the console -------------------------------------

@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    c = make_cluster("console", size=3, first_id=1, overrides={
        "replica.lag.time.max.ms": str(LAG_MS), "default.replication.factor": "3"})
    assert create_topic(c.brokers[0].port, TOPIC, 3, 3) == ErrorCode.NONE
    wait_until(lambda: all(_in_sync(c, p) for p in range(3)), 30, "leaders and full ISRs")
    return c


def _in_sync(c: Cluster, p: int) -> bool:
    st = partition_state(c.brokers[0].port, TOPIC, p)
    return st is not None and st.leader >= 0 and len(st.isr) == 3


@pytest.fixture(scope="module")
def produced(cluster: Cluster) -> dict[str, Any]:
    """10 messages to partition 0 (the first with a <script> key, a JSON value and a
    header), 3 to partition 1; -> what was sent and when."""
    before_ms = int(time.time() * 1000) - 1000
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    producer.produce(TOPIC, key=EVIL_KEY.encode(),
                     value=json.dumps({"order": 17, "items": ["a", "b"]}), partition=0,
                     headers=[("trace-id", b"abc-123")])
    for i in range(1, 10):
        producer.produce(TOPIC, key=f"key-{i}".encode(), value=f"value-{i}".encode(), partition=0)
    for i in range(3):
        producer.produce(TOPIC, key=b"\xff\xfe", value=f"p1-{i}".encode(), partition=1)
    assert producer.flush(30) == 0
    return {"before_ms": before_ms}


@pytest.fixture(scope="module")
def group_member(cluster: Cluster, produced: dict[str, Any]) -> Iterator[Any]:
    """A confluent-kafka consumer in GROUP (kept alive), with committed offsets
    4 (partition 0) and 1 (partition 1): lags 6 and 2."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap, "group.id": GROUP, "client.id": "console-probe",
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": 30000})
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 40
    while not consumer.assignment():
        assert time.monotonic() < deadline, "no assignment for the console's group member"
        consumer.poll(0.5)
    tp = confluent_kafka.TopicPartition
    consumer.commit(offsets=[tp(TOPIC, 0, 4), tp(TOPIC, 1, 1)], asynchronous=False)
    yield consumer
    consumer.close()


@pytest.fixture(scope="module")
def browser(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    log = open(tmp_path_factory.mktemp("console-log") / "console.log", "w+b")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.console", "--bootstrap-server", cluster.bootstrap,
         "--listen", "127.0.0.1:0", "--access-log"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)/", line)
        assert m, f"console did not start: {line!r}"
        yield Browser(m.group(1), tmp_path_factory.mktemp("chromium"))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(15) == 0, "the console did not exit cleanly on SIGTERM"
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()


# -- the pages ---------------------------------------------------------------------------------

def test_overview_lists_brokers_and_controller(cluster: Cluster, browser: Browser) -> None:
    dom = browser.dom("/", "overview")
    rows = element(dom, "brokers")
    for b in cluster.brokers:
        assert f"<td>{b.broker_id}</td><td>127.0.0.1:{b.port}</td>" in rows
    ctl = controller_id(cluster.brokers[0].port)
    assert f"<dt>Controller</dt><dd>broker {ctl}</dd>" in dom
    assert rows.count("CONNECTED") == 3, rows


def test_topics_and_topic_page(cluster: Cluster, browser: Browser, produced: Any) -> None:
    dom = browser.dom("/topics", "topics")
    assert f'href="/topic?name={TOPIC}"' in element(dom, "topics")
    dom = browser.dom("/topic", "topic", name=TOPIC)
    rows = element(dom, "partitions")
    for p in range(3):
        assert f'href="/partition?topic={TOPIC}&amp;p={p}"' in rows
    row0 = re.search(r"<tr[^>]*><td><a [^>]*p=0\">0</a></td>(.*?)</tr>", rows)
    assert row0 is not None, rows
    cells = re.findall(r"<td>(.*?)</td>", row0.group(1))
    # leader, epoch, replicas, ISR, out of ISR, log start, HW, leader LEO, ...
    assert cells[4] == "-" and cells[5] == "0" and cells[6] == "10" and cells[7] == "10", cells
    # each replica's LEO, as the leader sees it
    assert cells[8].count(": 10") == 3 and "(leader)" in cells[8], cells


def test_group_page_members_and_lag(browser: Browser, group_member: Any) -> None:
    dom = browser.dom("/groups", "groups")
    assert f'href="/group?id={GROUP}"' in element(dom, "groups")
    dom = browser.dom("/group", "group", id=GROUP)
    members = element(dom, "members")
    assert "console-probe" in members and f"{TOPIC}: 0, 1, 2" in members
    offsets = element(dom, "offsets")
    # topic, partition, committed, log end, lag
    for row in ("<td>0</td><td>4</td><td>10</td><td>6</td>",
                "<td>1</td><td>1</td><td>3</td><td>2</td>"):
        assert f">{TOPIC}</a></td>{row}" in offsets, offsets
    assert "rebalance-why" in dom and "Last rebalance" in dom


def test_group_page_says_who_left(cluster: Cluster, browser: Browser, group_member: Any) -> None:
    """A second member joins, then leaves: the group page's last rebalance names it."""
    leaver = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap, "group.id": GROUP, "client.id": "console-leaver",
        "enable.auto.commit": False, "session.timeout.ms": 30000})
    leaver.subscribe([TOPIC])
    deadline = time.monotonic() + 40
    while not (leaver.assignment() and len(group_member.assignment()) < 3):
        assert time.monotonic() < deadline, "the second member never got partitions"
        leaver.poll(0.2)
        group_member.poll(0.2)
    leaver.close()                                   # LeaveGroup
    while len(group_member.assignment()) < 3:
        assert time.monotonic() < deadline, "the first member never got its partitions back"
        group_member.poll(0.2)
    dom = browser.dom("/group", "group-after-leave", id=GROUP)
    last = text_of(element(dom, "rebalance-why")).split("Time Generation")[0]
    assert "console-leaver" in last and " left" in last, last
    assert "console-leaver" not in element(dom, "members")


def test_message_browser_by_offset_and_time(browser: Browser, produced: Any) -> None:
    dom = browser.dom("/messages", "messages", topic=TOPIC, p=0, offset=0, n=5)
    table = element(dom, "messages")
    assert "<script" not in table.lower().replace("&lt;script", "")
    assert "&lt;script&gt;alert('k')&lt;/script&gt;" in table or \
        "&lt;script&gt;alert(&#x27;k&#x27;)&lt;/script&gt;" in table
    assert '"order": 17' in table.replace("&quot;", '"') and "<strong>trace-id</strong>" in table
    assert "abc-123" in table and "value-4" in table and "value-5" not in table
    dom = browser.dom("/messages", "messages-by-time", topic=TOPIC, p=1,
                      ts=produced["before_ms"], n=10)
    table = element(dom, "messages")
    assert all(f"p1-{i}" in table for i in range(3)) and "ff fe" in table
    dom = browser.dom("/messages", "messages-beyond-hw", topic=TOPIC, p=1, offset=50)
    assert "offset 50 is beyond the high watermark 3" in text_of(dom)
    assert "no messages there" in element(dom, "messages")


def test_partition_page_names_the_killed_follower(cluster: Cluster, browser: Browser,
                                                  produced: Any) -> None:
    st = partition_state(cluster.brokers[0].port, TOPIC, 0)
    assert st is not None and len(st.isr) == 3
    ctl = controller_id(cluster.brokers[0].port)
    victim = next(r for r in st.replicas if r != st.leader and r != ctl)
    cluster.broker(victim).kill9()                      # SIGKILL by pid
    live = [b for b in cluster.brokers if b.broker_id != victim]
    # in every live broker's metadata: the console asks whichever it connects to, and
    # each applies the controller's UpdateMetadata in its own time
    wait_until(lambda: all(victim not in partition_state(b.port, TOPIC, 0).isr for b in live),
               30, f"broker {victim} out of the ISR of {TOPIC}-0 everywhere")
    dom = browser.dom("/partition", "partition-after-kill", topic=TOPIC, p=0)
    text = text_of(dom)
    assert f"Under-replicated: {victim} not in the ISR" in text
    why = text_of(element(dom, "isr-why"))
    assert f"Broker {victim} left the ISR" in why, why
    assert "replica.lag.time.max.ms" in why, why     # the leader's reason, as it gave it
    changes = element(dom, "isr-changes")
    assert re.search(rf"<td>shrink</td><td>{victim}</td>", changes), changes
