"""Consumer groups with the Java client (kafka-clients 3.9.1) against one real broker.

The scenario of tests/integration/test_groups.py, with JavaGroupMember.java as the member
process (compiled once per module with javac; the jars as test_java_client.py gets them),
for the eager RangeAssignor and the CooperativeStickyAssignor: three members over six
partitions get two each; one leaves (SIGTERM -> close -> LeaveGroup), one crashes (SIGKILL ->
session timeout), one joins; every record is consumed; after all members stop, new ones
resume exactly after the committed offsets.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.integration.clients.test_java_client import JAR_DIR, JARS, java_classpath  # noqa: F401
from tests.integration.cluster import REPO, Cluster, MakeCluster
from tests.integration.test_groups import (MemberProcess, balanced, create_topic, flatten,
                                           produce, wait_for)

pytestmark = pytest.mark.integration

PROGRAM = Path(__file__).with_name("JavaGroupMember.java")


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("groups-java")


@pytest.fixture(scope="module")
def member_classpath(java_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> str:  # noqa: F811
    if shutil.which("javac") is None:
        pytest.skip("no javac on PATH (JDK 17 needed)")
    out = tmp_path_factory.mktemp("java-member")
    res = subprocess.run(["javac", "-cp", java_classpath, "-d", str(out), str(PROGRAM)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"javac failed:\n{res.stdout}\n{res.stderr}"
    return f"{java_classpath}:{out}"


class JavaMember(MemberProcess):
    """One JavaGroupMember process (tests/integration/JavaGroupMember.java)."""

    leave_timeout = 60.0

    def __init__(self, classpath: str, bootstrap: str, topic: str, group: str,
                 assignor: str) -> None:
        super().__init__(["java", "-cp", classpath, "JavaGroupMember", bootstrap, topic, group,
                          assignor])


@pytest.mark.parametrize("assignor", ["eager", "cooperative"])
def test_java_group_lifecycle(cluster: Cluster, member_classpath: str, assignor: str) -> None:
    bootstrap = cluster.bootstrap
    topic = f"groups-java-{assignor}-{uuid.uuid4().hex[:6]}"
    group = f"gj-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    expected = flatten(produce(bootstrap, topic, 300, 0))

    def member() -> JavaMember:
        m = JavaMember(member_classpath, bootstrap, topic, group, assignor)
        everyone.append(m)
        return m
    everyone: list[JavaMember] = []
    try:
        members = [member() for _ in range(3)]
        wait_for(lambda: balanced(members, [2, 2, 2]), 90,  # type: ignore[arg-type]
                 "three members with two partitions each")
        seen = lambda: {r for m in everyone for r in m.records}  # noqa: E731
        wait_for(lambda: expected <= seen(), 60, "every record of phase 1")

        leaving, crashing, staying = members
        leaving.leave()
        assert leaving.closed and leaving.proc.returncode is not None
        wait_for(lambda: balanced([crashing, staying], [3, 3]), 60,  # type: ignore[list-item]
                 "rebalance after a leave")

        crashing.crash()
        wait_for(lambda: balanced([staying], [6]), 60,  # type: ignore[list-item]
                 "rebalance after a crash (session timeout)")

        joining = member()
        wait_for(lambda: balanced([staying, joining], [3, 3]), 60,  # type: ignore[list-item]
                 "rebalance after a join")

        expected |= flatten(produce(bootstrap, topic, 300, 300))
        wait_for(lambda: expected <= seen(), 60, "every record of phase 2")
        for m in (staying, joining):
            m.leave()
            assert m.closed

        # commits survive a restart of every member: the next ones resume after them
        fresh = flatten(produce(bootstrap, topic, 60, 600))
        restarted = [member() for _ in range(3)]
        wait_for(lambda: fresh <= {r for m in restarted for r in m.records}, 90,
                 "the records written after the restart")
        time.sleep(1)
        assert {r for m in restarted for r in m.records} == fresh
        for m in restarted:
            m.leave()
    finally:
        for m in everyone:
            m.stop()
