"""``pybroker consumer-groups`` against a real broker (real ZooKeeper), with a
confluent-kafka consumer as the group member: list, describe (offsets, members,
state) while active and when empty, reset offsets (refused while active; dry run,
execute, each scenario), delete offsets, delete the group."""

from __future__ import annotations

import io
import time
import uuid

import pytest

from tools import consumer_groups as cg
from tests.integration.cluster import Cluster, MakeCluster
from tests.integration.multi import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("cg-tool")


def tool(cluster: Cluster, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = cg.main(["--bootstrap-server", cluster.bootstrap, "--timeout", "15000", *argv],
                 stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def table(text: str) -> list[list[str]]:
    """Rows after the header line (the line starting with GROUP/TOPIC), split on spaces."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith(("GROUP ", "TOPIC ")))
    return [ln.split() for ln in lines[start + 1:]]


def committed(cluster: Cluster, group: str) -> dict[int, int]:
    rc, out, _ = tool(cluster, "--describe", "--group", group)
    assert rc == 0, out
    return {int(r[2]): int(r[3]) for r in table(out) if r[3] != "-"}


def test_list_describe_reset_delete(cluster: Cluster) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = f"cgt-{uuid.uuid4().hex[:6]}", f"cgt-g-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    before = int(time.time() * 1000)
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(30):   # ten per partition
        p.produce(topic, value=b"%d" % i, partition=i % PARTITIONS)
    p.flush(30)

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                  "client.id": "tool-test-client", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    wait_until(lambda: c.poll(0.2) is not None and len(c.assignment()) == PARTITIONS, 60,
               "the consumer's assignment and first record")
    commits = {0: 3, 1: 5, 2: 10}
    c.commit(offsets=[TopicPartition(topic, p, o) for p, o in commits.items()],
             asynchronous=False)
    try:
        assert group in wait_until(lambda: tool(cluster, "--list")[1].split(), 20, "listed")
        rc, out, _ = tool(cluster, "--list", "--state", "stable")
        assert rc == 0 and [group, "Stable"] in table(out)

        rc, out, err = tool(cluster, "--describe", "--group", group)
        assert rc == 0, out + err
        rows = table(out)
        assert sorted(int(r[2]) for r in rows) == [0, 1, 2]
        for r in rows:
            assert r[0] == group and r[1] == topic and r[4] == "10"
            assert int(r[5]) == 10 - int(r[3])            # LAG = LOG-END - CURRENT
            assert r[6].startswith("tool-test-client") and r[8] == "tool-test-client"
        assert {int(r[2]): int(r[3]) for r in rows} == commits

        rc, out, _ = tool(cluster, "--describe", "--group", group, "--members", "--verbose")
        # Kafka 4.0's verbose members: a classic member has no epochs and no target
        assert rc == 0 and table(out)[0][-5:] == ["3", "-", f"{topic}:0,1,2", "-", "-"]
        rc, out, _ = tool(cluster, "--describe", "--group", group, "--state")
        assert rc == 0 and table(out)[0][-3:] == ["range", "Stable", "1"]

        rc, out, _ = tool(cluster, "--reset-offsets", "--group", group, "--topic", topic,
                          "--to-earliest", "--execute")
        assert rc == 1 and "can only be reset if the group" in out and "Stable" in out
    finally:
        c.close()

    rc, out, err = tool(cluster, "--describe", "--group", group)
    assert rc == 0 and "has no active members" in err
    rows = table(out)                   # every partition listed, none with a member
    assert sorted(int(r[2]) for r in rows) == list(range(PARTITIONS))
    assert all(r[6:] == ["-", "-", "-"] for r in rows)
    before_reset = committed(cluster, group)

    rc, out, _ = tool(cluster, "--reset-offsets", "--group", group, "--topic", topic,
                      "--to-earliest", "--dry-run")
    assert rc == 0 and [r[2:] for r in table(out)] == [["0", "0"], ["1", "0"], ["2", "0"]]
    assert committed(cluster, group) == before_reset           # a dry run changes nothing

    scenarios = [(["--to-earliest"], {0: 0, 1: 0, 2: 0}),
                 (["--shift-by", "4"], {0: 4, 1: 4, 2: 4}),
                 (["--to-offset", "99"], {0: 10, 1: 10, 2: 10}),   # clamped to the log end
                 (["--shift-by", "-3"], {0: 7, 1: 7, 2: 7}),
                 (["--to-datetime", time.strftime("%Y-%m-%dT%H:%M:%S.000",
                                                  time.gmtime(before / 1000 - 60))],
                  {0: 0, 1: 0, 2: 0}),
                 (["--to-latest"], {0: 10, 1: 10, 2: 10})]
    for flags, expected in scenarios:
        rc, out, _ = tool(cluster, "--reset-offsets", "--group", group, "--topic", topic,
                          *flags, "--execute")
        assert rc == 0, (flags, out)
        assert {int(r[2]): int(r[3]) for r in table(out)} == expected, flags
        assert committed(cluster, group) == expected, flags
    rc, out, _ = tool(cluster, "--reset-offsets", "--group", group, "--topic", f"{topic}:1",
                      "--to-offset", "2", "--execute")
    assert rc == 0 and committed(cluster, group) == {0: 10, 1: 2, 2: 10}

    rc, out, _ = tool(cluster, "--delete-offsets", "--group", group, "--topic", f"{topic}:0")
    assert rc == 0 and "Request succeed for deleting offsets" in out
    assert table(out) == [[topic, "0", "Successful"]]
    assert committed(cluster, group) == {1: 2, 2: 10}

    rc, out, _ = tool(cluster, "--delete", "--group", group)
    assert rc == 0 and out.strip() == f"Deletion of requested consumer groups ('{group}') " \
                                      "was successful."
    assert group not in tool(cluster, "--list")[1].split()
    rc, out, _ = tool(cluster, "--describe", "--group", group)
    assert rc == 1 and f"Consumer group '{group}' does not exist." in out
    rc, out, _ = tool(cluster, "--delete", "--group", group)
    assert rc == 1 and "GROUP_ID_NOT_FOUND" in out
