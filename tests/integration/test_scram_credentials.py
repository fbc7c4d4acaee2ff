"""SCRAM credentials end to end: two brokers on a real ZooKeeper; credentials altered and
described with ``pybroker configs``, confluent-kafka's AdminClient and kafka-python's
KafkaAdminClient; the znodes read back with kazoo must be Kafka's format
(/config/users/<user> {"version":1,"config":{"SCRAM-SHA-256":"salt=..,stored_key=..,
server_key=..,iterations=N"}} plus a /config/changes notification naming users/<user>), and
each stored credential must be the one its password makes (recomputed with
protocol.scram). Topic config changes still reach the brokers once user notifications
sit beside them in /config/changes.
"""

from __future__ import annotations

import io
import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.scram import credential_from_salted, parse_credential, salted_password
from tests.integration.cluster import Cluster, MakeCluster
from tools import configs, topics

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SHA256, SHA512 = "SCRAM-SHA-256", "SCRAM-SHA-512"
CREDENTIAL = re.compile(r"salt=[A-Za-z0-9+/]+=*,stored_key=[A-Za-z0-9+/]+=*,"
                        r"server_key=[A-Za-z0-9+/]+=*,iterations=[0-9]+")


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("scram", size=2, overrides={"auto.create.topics.enable": "false"})


@pytest.fixture(scope="module")
def zk(cluster: Cluster) -> Iterator[Any]:
    from kazoo.client import KazooClient  # test-side only; the broker uses controller/zk.py

    client = KazooClient(hosts=cluster.zk_connect, timeout=10)
    client.start(timeout=10)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def tool(module: Any, cluster: Cluster, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = module.main(["--bootstrap-server", cluster.bootstrap, *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def user_config(zk: Any, znode_name: str) -> dict[str, str]:
    data, _ = zk.get(f"/config/users/{znode_name}")
    obj = json.loads(data)
    assert obj["version"] == 1 and set(obj) == {"version", "config"}
    return dict(obj["config"])


def assert_password(text: str, mechanism: str, password: bytes, iterations: int) -> None:
    """``text`` is Kafka's credential form and the credential ``password`` makes."""
    assert CREDENTIAL.fullmatch(text), text
    c = parse_credential(text)
    assert c.iterations == iterations
    remade = credential_from_salted(mechanism, salted_password(
        mechanism, password.decode(), c.salt, c.iterations), c.salt, c.iterations)
    assert remade == c
    wrong = credential_from_salted(mechanism, salted_password(
        mechanism, "not-" + password.decode(), c.salt, c.iterations), c.salt, c.iterations)
    assert wrong != c


def notifications(zk: Any) -> list[dict[str, Any]]:
    return [json.loads(zk.get(f"/config/changes/{name}")[0])
            for name in sorted(zk.get_children("/config/changes"))]


def user_notified(zk: Any, znode_name: str) -> int:
    want = {"version": 2, "entity_path": f"users/{znode_name}"}
    return sum(1 for n in notifications(zk) if n == want)


# ---- pybroker configs ------------------------------------------------------------------------

def test_tool_alters_describes_and_deletes(cluster: Cluster, zk: Any) -> None:
    status, out, err = tool(configs, cluster, "--alter", "--entity-type", "users",
                            "--entity-name", "alice", "--add-config",
                            "SCRAM-SHA-512=[password=alice-secret],"
                            "SCRAM-SHA-256=[iterations=8192,password=x]")
    assert (status, out, err) == (0, "Completed updating config for user alice.\n", "")
    config = user_config(zk, "alice")
    assert set(config) == {SHA256, SHA512}
    assert_password(config[SHA512], SHA512, b"alice-secret", 4096)
    assert_password(config[SHA256], SHA256, b"x", 8192)
    assert user_notified(zk, "alice") == 1

    expected = ("SCRAM credential configs for user-principal 'alice' are "
                "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n")
    assert tool(configs, cluster, "--describe", "--entity-type", "users",
                "--entity-name", "alice") == (0, expected, "")
    status, out, _ = tool(configs, cluster, "--describe", "--entity-type", "users")
    assert status == 0 and expected in out.splitlines(keepends=True)
    # a user without credentials is left out, as kafka-configs.sh does
    assert tool(configs, cluster, "--describe", "--user", "nobody") == (0, "", "")

    assert tool(configs, cluster, "--alter", "--user", "alice", "--delete-config", SHA512) == (
        0, "Completed updating config for user alice.\n", "")
    assert set(user_config(zk, "alice")) == {SHA256}
    assert user_notified(zk, "alice") == 2
    assert tool(configs, cluster, "--describe", "--user", "alice")[1] == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192\n")

    status, out, err = tool(configs, cluster, "--alter", "--user", "alice",
                            "--delete-config", SHA512)
    assert status == 1 and "RESOURCE_NOT_FOUND" in err
    status, out, err = tool(configs, cluster, "--alter", "--user", "alice", "--add-config",
                            "SCRAM-SHA-256=[iterations=20000,password=y]")
    assert status == 1 and "UNACCEPTABLE_CREDENTIAL" in err and "Too many iterations" in err
    assert_password(user_config(zk, "alice")[SHA256], SHA256, b"x", 8192)   # unchanged


def test_user_names_are_sanitized_in_zookeeper(cluster: Cluster, zk: Any) -> None:
    status, _, err = tool(configs, cluster, "--alter", "--user", "CN=svc one,O=acme",
                          "--add-config", "SCRAM-SHA-256=[password=pw]")
    assert (status, err) == (0, "")
    znode = "CN%3Dsvc%20one%2CO%3Dacme"          # Kafka's Sanitizer.sanitize
    assert_password(user_config(zk, znode)[SHA256], SHA256, b"pw", 4096)
    assert user_notified(zk, znode) == 1
    assert tool(configs, cluster, "--describe", "--user", "CN=svc one,O=acme")[1] == (
        "SCRAM credential configs for user-principal 'CN=svc one,O=acme' are "
        "SCRAM-SHA-256=iterations=4096\n")


# ---- confluent-kafka's AdminClient -------------------------------------------------------------

def test_confluent_admin_client(cluster: Cluster, zk: Any) -> None:
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialDeletion,
                                       UserScramCredentialUpsertion)

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256,
                                                                4096), b"bob-pw"),
        UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512,
                                                                10000), b"bob-pw2"),
        UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256,
                                                                  100), b"pw"),
    ])
    assert futures["bob"].result(30) is None
    with pytest.raises(ck.KafkaException) as refused:
        futures["carol"].result(30)
    assert refused.value.args[0].code() == ErrorCode.UNACCEPTABLE_CREDENTIAL

    config = user_config(zk, "bob")
    assert_password(config[SHA256], SHA256, b"bob-pw", 4096)
    assert_password(config[SHA512], SHA512, b"bob-pw2", 10000)
    assert user_notified(zk, "bob") == 1
    assert not zk.exists("/config/users/carol")

    described = admin.describe_user_scram_credentials(["bob", "nobody"])
    bob = described["bob"].result(30)
    assert bob.user == "bob"
    assert sorted((i.mechanism.value, i.iterations) for i in bob.scram_credential_infos) == [
        (1, 4096), (2, 10000)]
    with pytest.raises(ck.KafkaException) as missing:
        described["nobody"].result(30)
    assert missing.value.args[0].code() == ErrorCode.RESOURCE_NOT_FOUND
    everyone = admin.describe_user_scram_credentials().result(30)
    assert "bob" in everyone and "carol" not in everyone

    # what librdkafka stored, our tool reads back
    assert tool(configs, cluster, "--describe", "--user", "bob")[1] == (
        "SCRAM credential configs for user-principal 'bob' are "
        "SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=10000\n")

    futures = admin.alter_user_scram_credentials([
        UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_512)])
    assert futures["bob"].result(30) is None
    assert set(user_config(zk, "bob")) == {SHA256}


# ---- kafka-python's KafkaAdminClient -----------------------------------------------------------

def test_kafka_python_admin_client(cluster: Cluster, zk: Any) -> None:
    pytest.importorskip("kafka")
    from kafka.admin import (KafkaAdminClient, ScramMechanism, UserScramCredentialDeletion,
                             UserScramCredentialUpsertion)

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        assert admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("dora", "SCRAM-SHA-512", "dora-pw", iterations=4096),
        ]) == {"dora": None}
        assert_password(user_config(zk, "dora")[SHA512], SHA512, b"dora-pw", 4096)
        described = admin.describe_user_scram_credentials(["dora"])
        assert described["dora"]["error"] is None
        assert described["dora"]["credential_infos"] == [
            {"mechanism": ScramMechanism.SCRAM_SHA_512, "iterations": 4096}]
        assert admin.alter_user_scram_credentials([
            UserScramCredentialDeletion("dora", "SCRAM-SHA-256")])["dora"] is not None
        assert admin.alter_user_scram_credentials([
            UserScramCredentialDeletion("dora", "SCRAM-SHA-512")]) == {"dora": None}
        assert user_config(zk, "dora") == {}
    finally:
        admin.close()


# ---- the topic-config watcher beside user notifications ----------------------------------------

def test_topic_configs_still_apply_beside_user_notifications(cluster: Cluster, zk: Any) -> None:
    assert any(n.get("entity_path", "").startswith("users/") for n in notifications(zk))
    topic = f"scram-topic-{uuid.uuid4().hex[:6]}"
    status, out, err = tool(topics, cluster, "--create", "--topic", topic, "--partitions", "2",
                            "--replication-factor", "2")
    assert status == 0, out + err
    assert tool(configs, cluster, "--alter", "--entity-type", "topics", "--entity-name", topic,
                "--add-config", "retention.ms=123456") == (
        0, f"Completed updating config for topic {topic}.\n", "")
    status, out, _ = tool(configs, cluster, "--describe", "--topic", topic)
    assert status == 0 and out.startswith(f"Dynamic configs for topic {topic} are:\n")
    assert "  retention.ms=123456 sensitive=false" in out
    deadline = time.monotonic() + 15
    line = f"applied config change for topic {topic}"
    while not all(line in b.log_text() for b in cluster.brokers):
        assert time.monotonic() < deadline, "a broker did not apply the topic config change"
        time.sleep(0.2)
    for b in cluster.brokers:
        assert "Traceback" not in b.log_text(), b.tail()
