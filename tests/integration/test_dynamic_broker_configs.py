"""Dynamic broker configs with real processes (issue 18): a real ZooKeeper and two
broker processes (ids 0, 1; log.retention.check.interval.ms=500).

1. ``pybroker configs --alter --entity-type brokers --entity-default --add-config
   log.retention.ms=1000`` takes effect without a restart: a topic without its own
   retention.ms describes it (confluent-kafka's AdminClient) with source
   DYNAMIC_DEFAULT_BROKER_CONFIG and its old segments are deleted (the log start
   offset moves); after broker 0 restarts, it still holds (read back from ZooKeeper).
2. A per-broker message.max.bytes is refused/accepted live: a record bigger than it is
   refused by broker 0 at once, and taken again once the key is deleted. Bad values and
   non-dynamic keys are refused with the key and value named, nothing stored.
3. The Java admin client sets a default key and reads sources and synonyms.
4. BROKER_LOGGER: pybroker.request set to DEBUG at run time makes its DEBUG lines appear
   in broker 0's log; DELETE makes them stop.
5. compression.type=zstd on a topic: lz4 batches from librdkafka are stored as zstd
   (the batch attributes of a Fetch say so) and read back intact.
6. Issue 30: keys Kafka takes dynamically that pybroker has no feature for (Kerberos,
   the SSL engine factory, the remote log manager, a listener-prefixed SASL key):
   librdkafka's AlterConfigs on BROKER 1 (its 0081-admin test sets
   sasl.kerberos.min.time.before.relogin) answers NONE, DescribeConfigs shows them as
   DYNAMIC_BROKER_CONFIG, and they survive a restart of broker 1; a bad value is
   INVALID_CONFIG naming key and value.
"""

from __future__ import annotations

import asyncio
import io
import subprocess
import time
import warnings
from pathlib import Path

import pytest

from tests.integration.cluster import REPO, Cluster, MakeCluster, WireClient
from tests.integration.clients.test_java_client import java_classpath  # noqa: F401
from tests.integration.multi import wait_until

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,  # noqa: E402
                                   ConfigResource, ConfigSource)

from client import KafkaAdmin  # noqa: E402
from client.admin import NewTopic  # noqa: E402
from protocol import records  # noqa: E402
from tools import configs as configs_tool  # noqa: E402

pytestmark = pytest.mark.integration
PROGRAM = Path(__file__).with_name("JavaDynamicConfigs.java")


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("dynamic-configs", size=2,
                        overrides={"log.retention.check.interval.ms": "500"})


def tool(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = configs_tool.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def create(bootstrap: str, name: str, configs: dict[str, str] | None = None,
           replicas: list[int] | None = None) -> None:
    async def go() -> None:
        async with KafkaAdmin(bootstrap) as admin:
            done = await admin.create_topics([NewTopic(name, assignment={0: replicas or [0]},
                                                       configs=configs or {})])
            assert all(code == 0 for code, _ in done.values()), done
    asyncio.run(go())


def describe_topic(bootstrap: str, topic: str) -> dict[str, object]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([res])[res].result(timeout=20)


def describe_broker(bootstrap: str, broker_id: str) -> dict[str, object]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.BROKER, broker_id)
    return admin.describe_configs([res])[res].result(timeout=20)


def earliest(port: int, topic: str) -> int:
    with WireClient(port) as c:
        error, offset = c.list_offset(topic, 0, timestamp=-2)
    assert error == 0
    return offset


def test_default_retention_applies_live_and_survives_a_restart(cluster: Cluster) -> None:
    b0 = cluster.broker(0)
    create(cluster.bootstrap, "ret", {"segment.bytes": "1000"})
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0, "acks": "1"})
    for i in range(30):
        p.produce("ret", b"x" * 300, key=b"%d" % i, partition=0)
        p.flush(10)
    assert earliest(b0.port, "ret") == 0
    before = describe_topic(cluster.bootstrap, "ret")["retention.ms"]
    assert before.value == "604800000" and before.source == ConfigSource.DEFAULT_CONFIG.value
    time.sleep(1.2)     # the records are older than the new retention

    code, out, err = tool("--bootstrap-server", cluster.bootstrap, "--alter", "--entity-type",
                          "brokers", "--entity-default", "--add-config", "log.retention.ms=1000")
    assert code == 0, err
    assert out == "Completed updating default config for brokers in the cluster.\n"

    for b in cluster.brokers:       # the one that took it, and the other by notification
        wait_until(lambda b=b: describe_broker(b.bootstrap, str(b.broker_id))[
            "log.retention.ms"].value == "1000", timeout=10,
            what=f"broker {b.broker_id} applying the default")
    entry = describe_topic(cluster.bootstrap, "ret")["retention.ms"]
    assert entry.value == "1000"
    assert entry.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    # no restart: the retention check deletes the old segments
    wait_until(lambda: earliest(b0.port, "ret") > 0, timeout=15,
               what="retention by the dynamic default log.retention.ms")

    code, out, _ = tool("--bootstrap-server", cluster.bootstrap, "--describe", "--entity-type",
                        "brokers", "--entity-default")
    assert code == 0 and "log.retention.ms=1000 sensitive=false synonyms={" \
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000" in out, out

    cluster.restart(b0)
    row = describe_broker(b0.bootstrap, "0")["log.retention.ms"]
    assert row.value == "1000"
    assert row.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    assert [s.source for s in row.synonyms.values()][0] == \
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    assert not row.is_read_only

    code, _, err = tool("--bootstrap-server", cluster.bootstrap, "--alter", "--entity-type",
                        "brokers", "--entity-default", "--delete-config", "log.retention.ms")
    assert code == 0, err
    wait_until(lambda: describe_topic(b0.bootstrap, "ret")["retention.ms"].value
               == "604800000", timeout=10, what="the default deleted on broker 0")


def produce_one(bootstrap: str, topic: str, size: int) -> str | None:
    """-> the delivery error's name, or None."""
    p = ck.Producer({"bootstrap.servers": bootstrap, "acks": "1", "retries": 0,
                     "message.max.bytes": 1_000_000})
    errors: list[str | None] = []
    p.produce(topic, b"v" * size, partition=0,
              on_delivery=lambda e, _m: errors.append(None if e is None else e.name()))
    p.flush(20)
    return errors[0]


def test_message_max_bytes_per_broker_live_and_bad_values(cluster: Cluster) -> None:
    create(cluster.bootstrap, "mmb")
    assert produce_one(cluster.bootstrap, "mmb", 5000) is None
    code, _, err = tool("--bootstrap-server", cluster.bootstrap, "--alter", "--entity-type",
                        "brokers", "--entity-name", "0", "--add-config", "message.max.bytes=2000")
    assert code == 0, err
    assert produce_one(cluster.bootstrap, "mmb", 5000) == "MSG_SIZE_TOO_LARGE"
    row = describe_broker(cluster.broker(0).bootstrap, "0")["message.max.bytes"]
    assert (row.value, row.source) == ("2000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert [(s.source, s.value) for s in row.synonyms.values()][-1] == \
        (ConfigSource.DEFAULT_CONFIG.value, "1048588")

    # bad value and read-only key: refused, naming key and value; nothing changed
    code, _, err = tool("--bootstrap-server", cluster.bootstrap, "--alter", "--entity-type",
                        "brokers", "--entity-name", "0", "--add-config", "message.max.bytes=lots")
    assert code == 1 and "message.max.bytes" in err and "lots" in err and "INVALID_CONFIG" in err
    code, _, err = tool("--bootstrap-server", cluster.bootstrap, "--alter", "--entity-type",
                        "brokers", "--entity-default", "--add-config", "broker.id=7")
    assert code == 1 and "Cannot update these configs dynamically: broker.id" in err, err
    assert describe_broker(cluster.broker(0).bootstrap, "0")["message.max.bytes"].value == "2000"

    code, _, err = tool("--bootstrap-server", cluster.bootstrap, "--alter", "--entity-type",
                        "brokers", "--entity-name", "0", "--delete-config", "message.max.bytes")
    assert code == 0, err
    assert produce_one(cluster.bootstrap, "mmb", 5000) is None


def test_java_admin_client_reads_sources(cluster: Cluster, java_classpath: str  # noqa: F811
                                         ) -> None:
    create(cluster.bootstrap, "javacfg")
    res = subprocess.run(["java", "-cp", java_classpath, str(PROGRAM), cluster.bootstrap, "1",
                          "javacfg"], capture_output=True, text=True, timeout=180, cwd=REPO)
    assert res.returncode == 0, f"{res.stdout[-3000:]}\n{res.stderr[-5000:]}"
    lines = {tuple(line.split()[1:3]): line.split()[3:] for line in res.stdout.splitlines()
             if line.startswith("CONFIG ")}
    assert lines[("BROKER:1", "log.cleaner.min.cleanable.ratio")][:2] == \
        ["0.3", "DYNAMIC_DEFAULT_BROKER_CONFIG"]
    assert lines[("BROKER:", "log.cleaner.min.cleanable.ratio")][:2] == \
        ["0.3", "DYNAMIC_DEFAULT_BROKER_CONFIG"]
    topic = lines[("TOPIC:javacfg", "min.cleanable.dirty.ratio")]
    assert topic[:3] == ["0.3", "DYNAMIC_DEFAULT_BROKER_CONFIG",
                         "DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.min.cleanable.ratio=0.3"]
    assert lines[("BROKER:1", "num.io.threads")][:2] == ["8", "DEFAULT_CONFIG"]
    assert "DONE" in res.stdout


def test_log_levels_change_at_run_time(cluster: Cluster) -> None:
    b0 = cluster.broker(0)
    marker = "pybroker.request"
    code, _, err = tool("--bootstrap-server", b0.bootstrap, "--alter", "--entity-type",
                        "broker-loggers", "--entity-name", "0", "--add-config",
                        f"{marker}=DEBUG")
    assert code == 0, err
    code, out, _ = tool("--bootstrap-server", b0.bootstrap, "--describe", "--entity-type",
                        "broker-loggers", "--entity-name", "0")
    assert f"  {marker}=DEBUG sensitive=false" in out and "  root=INFO" in out, out
    with WireClient(b0.port) as c:
        c.api_versions()
    wait_until(lambda: "ApiVersionsRequest v3 corr" in b0.log_text(), timeout=5,
               what="a DEBUG request line in broker 0's log")
    code, _, err = tool("--bootstrap-server", b0.bootstrap, "--alter", "--entity-type",
                        "broker-loggers", "--entity-name", "0", "--delete-config", marker)
    assert code == 0, err
    mark = len(b0.log_text())
    with WireClient(b0.port) as c:
        c.api_versions()
    time.sleep(0.5)
    assert "ApiVersionsRequest v3 corr" not in b0.log_text()[mark:]
    code, _, err = tool("--bootstrap-server", b0.bootstrap, "--alter", "--entity-type",
                        "broker-loggers", "--entity-name", "0", "--add-config", "root=LOUD")
    assert code == 1 and "LOUD" in err and "INVALID_CONFIG" in err, err


def test_topic_compression_type_recompresses(cluster: Cluster) -> None:
    create(cluster.bootstrap, "zt", {"compression.type": "zstd"}, replicas=[0, 1])
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                     "compression.type": "lz4", "linger.ms": 20})
    for i in range(50):
        p.produce("zt", b"value-%d " % i * 20, key=b"k%d" % i, partition=0)
    assert p.flush(20) == 0
    with WireClient(cluster.broker(0).port) as c:
        error, hw, data = c.fetch_batches("zt", 0, 0)
    assert error == 0 and hw == 50
    headers = [h for _pos, h in records.iter_batches(data)]
    assert headers and all(h.compression == 4 for h in headers), \
        [h.compression for h in headers]
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "zt-check",
                            "auto.offset.reset": "earliest"})
    consumer.assign([ck.TopicPartition("zt", 0, 0)])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 50 and time.monotonic() < deadline:
        m = consumer.poll(1.0)
        if m is not None and m.error() is None:
            got.append((m.key(), m.value()))
    consumer.close()
    assert got == [(b"k%d" % i, b"value-%d " % i * 20) for i in range(50)]


WITHOUT_EFFECT = {"sasl.kerberos.min.time.before.relogin": "58000",
                  "ssl.engine.factory.class": "com.example.EngineFactory",
                  "remote.fetch.max.wait.ms": "600",
                  "listener.name.external.sasl.kerberos.service.name": "kafka"}


def test_keys_without_effect_are_accepted_stored_and_described(cluster: Cluster) -> None:
    b1 = cluster.broker(1)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    res = ConfigResource(ConfigResource.Type.BROKER, "1", set_config=WITHOUT_EFFECT)
    with warnings.catch_warnings():     # AlterConfigs (deprecated), as librdkafka's test sends
        warnings.simplefilter("ignore", DeprecationWarning)
        admin.alter_configs([res])[res].result(timeout=20)     # NONE (else it raises)

    def described() -> dict[str, object]:
        return describe_broker(b1.bootstrap, "1")
    rows = described()
    for key, value in WITHOUT_EFFECT.items():
        assert (rows[key].value, rows[key].source) == \
            (value, ConfigSource.DYNAMIC_BROKER_CONFIG.value), key
        assert not rows[key].is_read_only, key
    # synonyms (confluent-kafka keys them by name, so read them as kafka-configs.sh prints)
    code, out, err = tool("--bootstrap-server", b1.bootstrap, "--describe", "--entity-type",
                          "brokers", "--entity-name", "1")
    assert code == 0, err
    assert "sasl.kerberos.min.time.before.relogin=58000 sensitive=false synonyms={" \
        "DYNAMIC_BROKER_CONFIG:sasl.kerberos.min.time.before.relogin=58000, " \
        "DEFAULT_CONFIG:sasl.kerberos.min.time.before.relogin=60000}" in out, out
    untouched = describe_broker(cluster.broker(0).bootstrap, "0")
    assert untouched["sasl.kerberos.min.time.before.relogin"].value == "60000"
    assert untouched["sasl.kerberos.min.time.before.relogin"].source == \
        ConfigSource.DEFAULT_CONFIG.value

    # a bad value of a typed key: INVALID_CONFIG naming key and value, nothing stored
    bad = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[ConfigEntry(
        "sasl.kerberos.min.time.before.relogin", "abc",
        incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(ck.KafkaException) as e:
        admin.incremental_alter_configs([bad])[bad].result(timeout=20)
    error = e.value.args[0]
    assert error.code() == ck.KafkaError.INVALID_CONFIG, error
    assert "sasl.kerberos.min.time.before.relogin" in error.str() and "abc" in error.str()
    assert described()["sasl.kerberos.min.time.before.relogin"].value == "58000"

    # read back from ZooKeeper at start-up, still described as dynamic
    cluster.restart(b1)
    rows = described()
    assert {k: (rows[k].value, rows[k].source) for k in WITHOUT_EFFECT} == \
        {k: (v, ConfigSource.DYNAMIC_BROKER_CONFIG.value) for k, v in WITHOUT_EFFECT.items()}

    # deleted again (IncrementalAlterConfigs DELETE): Kafka's default, the listener key gone
    gone = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
        ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)
        for k in WITHOUT_EFFECT])
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.incremental_alter_configs([gone])[gone].result(timeout=20)
    rows = described()
    assert rows["sasl.kerberos.min.time.before.relogin"].source == \
        ConfigSource.DEFAULT_CONFIG.value
    assert "listener.name.external.sasl.kerberos.service.name" not in rows
