"""Dynamic listeners with real processes (issue 18): a real ZooKeeper and two brokers
(ids 0, 1), each with only PLAINTEXT at start.

1. ``pybroker configs --alter --entity-type brokers --entity-name N --add-config
   'listeners=[PLAINTEXT://...,EXTERNAL://127.0.0.1:P],listener.security.protocol.map=
   [PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT]'`` on each broker opens EXTERNAL at once;
   DescribeConfigs shows ``listeners`` with source DYNAMIC_BROKER_CONFIG; Metadata
   through broker 1's EXTERNAL lists broker 0 at its EXTERNAL port (the controller's
   UpdateMetadata after broker 0 rewrote /brokers/ids/0); confluent-kafka bootstrapped
   on EXTERNAL only produces and consumes.
2. Removing the inter-broker listener is refused (INVALID_CONFIG), nothing changed.
3. Broker 0 restarted: EXTERNAL opens again from the ZooKeeper entry.
4. Deleting the keys on broker 0 (asked over EXTERNAL itself) closes its EXTERNAL port
   (connect refused), broker 1's Metadata on EXTERNAL drops broker 0, and after another
   restart it stays closed.
"""

from __future__ import annotations

import io
import socket
import time

import pytest

from tests.integration.cluster import HOST, Cluster, MakeCluster, WireClient
from tests.integration.multi import wait_until
from tests.integration.zookeeper import free_port

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource  # noqa: E402

from tools import configs as configs_tool  # noqa: E402

pytestmark = pytest.mark.integration
MAP = "listener.security.protocol.map=[PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT]"


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("dynamic-listeners", size=2)


def tool(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = configs_tool.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def alter(cluster: Cluster, broker_id: int, *args: str, bootstrap: str = "") -> tuple[int, str]:
    code, _out, err = tool("--bootstrap-server", bootstrap or cluster.bootstrap, "--alter",
                           "--entity-type", "brokers", "--entity-name", str(broker_id), *args)
    return code, err


def connects(port: int) -> bool:
    try:
        socket.create_connection((HOST, port), timeout=2).close()
        return True
    except OSError:
        return False


def brokers_on(port: int) -> dict[int, int]:
    """node id -> port in the Metadata a broker answers on ``port``."""
    with WireClient(port, timeout=5) as c:
        return {int(b.node_id): int(b.port) for b in c.metadata([]).brokers}


def test_add_use_and_remove_a_listener(cluster: Cluster) -> None:
    b0, b1 = cluster.broker(0), cluster.broker(1)
    ext = {0: free_port(), 1: free_port()}
    for b in (b0, b1):
        code, err = alter(cluster, b.broker_id, "--add-config",
                          f"listeners=[PLAINTEXT://{HOST}:{b.port},EXTERNAL://{HOST}:"
                          f"{ext[b.broker_id]}],{MAP}")
        assert code == 0, err
        assert connects(ext[b.broker_id])
    assert "listening on EXTERNAL://127.0.0.1:%d" % ext[0] in b0.log_text()

    admin = AdminClient({"bootstrap.servers": b0.bootstrap})
    res = ConfigResource(ConfigResource.Type.BROKER, "0")
    row = admin.describe_configs([res])[res].result(timeout=20)["listeners"]
    assert row.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert f"EXTERNAL://{HOST}:{ext[0]}" in row.value

    # every broker's cache has both EXTERNAL endpoints (UpdateMetadata from the controller,
    # one per rewritten registration, each applied by each broker in its own time)
    wait_until(lambda: brokers_on(ext[1]) == {0: ext[0], 1: ext[1]}, 15,
               "broker 1's Metadata on EXTERNAL lists broker 0 at its EXTERNAL port")
    wait_until(lambda: brokers_on(ext[0]) == {0: ext[0], 1: ext[1]}, 15,
               "broker 0's Metadata on EXTERNAL lists broker 1 at its EXTERNAL port")
    assert brokers_on(b1.port) == {0: b0.port, 1: b1.port}

    # a stock client that knows only the EXTERNAL listener
    boot = f"{HOST}:{ext[0]}"
    producer = ck.Producer({"bootstrap.servers": boot})
    for i in range(10):
        producer.produce("dyn-listeners", value=b"v%d" % i)
    assert producer.flush(30) == 0
    consumer = ck.Consumer({"bootstrap.servers": boot, "group.id": "dl",
                            "auto.offset.reset": "earliest"})
    consumer.subscribe(["dyn-listeners"])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 10 and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    consumer.close()
    assert sorted(got) == sorted(b"v%d" % i for i in range(10))

    # the inter-broker listener stays
    code, err = alter(cluster, 0, "--add-config", f"listeners=[EXTERNAL://{HOST}:{ext[0]}]")
    assert code == 1 and "INVALID_CONFIG" in err and "inter-broker listener PLAINTEXT" in err, err
    assert connects(b0.port) and connects(ext[0])

    # restart: opened again from /config/brokers/0
    cluster.restart(b0)
    assert connects(ext[0])
    wait_until(lambda: brokers_on(ext[1]).get(0) == ext[0], 15,
               "broker 0 back at its EXTERNAL port")

    # removed (asked over that very listener): the port closes, the others forget it,
    # and a restart keeps it closed
    code, err = alter(cluster, 0, "--delete-config", "listeners,listener.security.protocol.map",
                      bootstrap=f"{HOST}:{ext[0]}")
    assert code == 0, err
    wait_until(lambda: not connects(ext[0]), 5, "broker 0's EXTERNAL port closed")
    wait_until(lambda: brokers_on(ext[1]) == {1: ext[1]}, 15,
               "broker 1's Metadata on EXTERNAL without broker 0")
    cluster.restart(b0)
    assert not connects(ext[0])
    assert brokers_on(b0.port) == {0: b0.port, 1: b1.port}
