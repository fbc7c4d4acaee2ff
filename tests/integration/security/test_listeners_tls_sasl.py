"""Security end to end: three brokers with four listeners, stock clients on each.

    PLAINTEXT        the harness's readiness probe (User:ANONYMOUS)
    INTERNAL (SSL)   mutual TLS between brokers: inter.broker.listener.name; the
                     brokers' certificates map to User:CN=broker,OU=test,O=pybroker,
                     a super user
    SASL_SSL         SCRAM-SHA-512 / SCRAM-SHA-256, credentials in ZooKeeper
    SASL_PLAINTEXT   PLAIN, users in the listener's JAAS config
    REAUTH           SASL_PLAINTEXT / PLAIN with connections.max.reauth.ms=2000 (KIP-368)

AclAuthorizer with allow.everyone.if.no.acl.found=false; ``admin`` is a super user,
``alice`` gets only what a test grants her. Checked: replication runs over the TLS
listener (an RF-3 topic's ISR fills), confluent-kafka / kafka-python / aiokafka
produce and consume in groups over the SASL listeners, Metadata answers each
listener's own endpoints, a wrong password is an authentication error (not a
hang), alice sees and reads nothing until granted Describe/Read on the topic and
Read on the group, a certificate that is not a broker's cannot replicate, and bad
handshakes (plaintext on the TLS port, TLS on the plaintext port, a stall) close
only their own connection, each with a log line.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster import HOST, Cluster, MakeCluster, WireClient
from tests.integration.security.certs import Pki, make_pki
from tests.integration.security.scram_users import store_scram_credentials

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" '
              'user_admin="admin-secret" user_alice="alice-secret";')
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="admin" password="admin-secret";')
BROKER_PRINCIPAL = "User:CN=broker,OU=test,O=pybroker"
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret"}


def overrides(pki: Pki) -> dict[str, str]:
    return {
        "listener.security.protocol.map":
            "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "REAUTH:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": pki.keystore("broker"),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.ca,
        "listener.name.internal.ssl.client.auth": "required",
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.reauth.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.reauth.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.reauth.connections.max.reauth.ms": "2000",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        "super.users": f"{BROKER_PRINCIPAL};User:admin",
        "connection.failed.authentication.delay.ms": "200",
        "request.timeout.ms": "8000",
        "offsets.topic.replication.factor": "3",
        "default.replication.factor": "3",
    }


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster, pki: Pki) -> Cluster:
    c = make_cluster("secure", size=3, start=False,
                     listeners=("INTERNAL", "SASL_SSL", "SASL_PLAINTEXT", "REAUTH"),
                     overrides=overrides(pki))
    store_scram_credentials(c.zk_connect, PASSWORDS)
    return c.start(timeout=60)


def rdkafka_conf(cluster: Cluster, pki: Pki, listener: str, user: str,
                 password: str | None = None, mechanism: str = "SCRAM-SHA-512") -> dict[str, Any]:
    protocol = "SASL_PLAINTEXT" if listener == "REAUTH" else listener
    conf: dict[str, Any] = {"bootstrap.servers": cluster.bootstrap_on(listener),
                            "security.protocol": protocol, "sasl.mechanisms": mechanism,
                            "sasl.username": user,
                            "sasl.password": password or PASSWORDS[user]}
    if listener == "SASL_SSL":
        conf["ssl.ca.location"] = pki.ca
    return conf


def admin_create_topic(cluster: Cluster, pki: Pki, topic: str, partitions: int = 3) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient(rdkafka_conf(cluster, pki, "SASL_SSL", "admin"))
    from confluent_kafka import KafkaError, KafkaException
    try:
        admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(30)
    except KafkaException as e:      # a test run alone makes the topics it needs
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    wait_isr_full(cluster, pki, topic, partitions)


def wait_isr_full(cluster: Cluster, pki: Pki, topic: str, partitions: int,
                  timeout: float = 60) -> None:
    """Every partition's ISR holds all 3 replicas: followers fetch over INTERNAL."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient(rdkafka_conf(cluster, pki, "SASL_SSL", "admin"))
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == partitions and all(
                len(p.isrs) == 3 for p in md.partitions.values()):
            return
        assert time.monotonic() < deadline, f"ISR of {topic} not full: {md and md.partitions}"
        time.sleep(0.3)


def produce_consume_rdkafka(conf: dict[str, Any], topic: str, n: int = 20) -> list[bytes]:
    from confluent_kafka import Consumer, Producer
    p = Producer({**conf, "acks": "all"})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i)
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 45
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
            elif m is not None:
                assert m.error().retriable() or "PARTITION_EOF" in str(m.error()), m.error()
        c.commit(asynchronous=False)
    finally:
        c.close()
    return got


def test_replication_runs_over_the_mutual_tls_listener(cluster: Cluster, pki: Pki) -> None:
    admin_create_topic(cluster, pki, "over-tls")
    for b in cluster.brokers:     # the brokers' certificates authenticated each other
        assert "TLS handshake failed" not in b.log_text()


def test_confluent_kafka_scram_sha_512_over_sasl_ssl(cluster: Cluster, pki: Pki) -> None:
    admin_create_topic(cluster, pki, "scram-topic")
    got = produce_consume_rdkafka(rdkafka_conf(cluster, pki, "SASL_SSL", "admin"), "scram-topic")
    assert sorted(got) == sorted(b"v%d" % i for i in range(20))


def test_confluent_kafka_plain_over_sasl_plaintext(cluster: Cluster, pki: Pki) -> None:
    admin_create_topic(cluster, pki, "plain-topic")
    conf = rdkafka_conf(cluster, pki, "SASL_PLAINTEXT", "admin", mechanism="PLAIN")
    assert len(produce_consume_rdkafka(conf, "plain-topic")) == 20


def test_metadata_answers_the_endpoints_of_the_listener_asked(cluster: Cluster,
                                                              pki: Pki) -> None:
    from confluent_kafka.admin import AdminClient
    for listener, mechanism in (("SASL_SSL", "SCRAM-SHA-256"), ("SASL_PLAINTEXT", "PLAIN")):
        admin = AdminClient(rdkafka_conf(cluster, pki, listener, "admin", mechanism=mechanism))
        brokers = admin.list_topics(timeout=15).brokers
        assert {(b.host, b.port) for b in brokers.values()} == {
            (HOST, b.extra_listeners[listener]) for b in cluster.brokers}
    with WireClient(cluster.brokers[0].port) as w:
        ports = {b.port for b in w.metadata([]).brokers}
    assert ports == {b.port for b in cluster.brokers}


def test_kafka_python_scram_and_plain(cluster: Cluster, pki: Pki) -> None:
    kafka = pytest.importorskip("kafka")
    admin_create_topic(cluster, pki, "kp-topic")
    settings = [dict(bootstrap_servers=cluster.bootstrap_on("SASL_SSL"),
                     security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                     ssl_cafile=pki.ca, ssl_check_hostname=True),
                dict(bootstrap_servers=cluster.bootstrap_on("SASL_PLAINTEXT"),
                     security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN")]
    for i, s in enumerate(settings):
        auth = dict(sasl_plain_username="admin", sasl_plain_password="admin-secret")
        producer = kafka.KafkaProducer(acks="all", **s, **auth)
        for j in range(10):
            producer.send("kp-topic", b"kp-%d-%d" % (i, j))
        producer.flush(30)
        producer.close()
        consumer = kafka.KafkaConsumer("kp-topic", group_id=f"kp-{i}",
                                       auto_offset_reset="earliest",
                                       consumer_timeout_ms=20000, **s, **auth)
        got = set()
        for m in consumer:
            got.add(m.value)
            if {b"kp-%d-%d" % (i, j) for j in range(10)} <= got:
                break
        consumer.close()
        assert {b"kp-%d-%d" % (i, j) for j in range(10)} <= got
        admin = kafka.KafkaAdminClient(**s, **auth)
        try:
            assert "kp-topic" in admin.list_topics()
            assert len(admin.describe_cluster()["brokers"]) == 3
        finally:
            admin.close()


@pytest.mark.parametrize("listener,mechanism", [("SASL_SSL", "SCRAM-SHA-256"),
                                                ("SASL_PLAINTEXT", "PLAIN")])
def test_aiokafka(cluster: Cluster, pki: Pki, listener: str, mechanism: str) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    topic = f"aio-{listener.lower()}"
    admin_create_topic(cluster, pki, topic)

    async def go() -> list[bytes]:
        from aiokafka.admin import AIOKafkaAdminClient
        from aiokafka.helpers import create_ssl_context
        common: dict[str, Any] = dict(
            bootstrap_servers=cluster.bootstrap_on(listener), security_protocol=listener,
            sasl_mechanism=mechanism, sasl_plain_username="admin",
            sasl_plain_password="admin-secret")
        if listener == "SASL_SSL":
            common["ssl_context"] = create_ssl_context(cafile=pki.ca)
        admin = AIOKafkaAdminClient(**common)
        await admin.start()
        try:
            assert topic in await admin.list_topics()
        finally:
            await admin.close()
        producer = aiokafka.AIOKafkaProducer(acks="all", **common)
        await producer.start()
        try:
            for i in range(10):
                await producer.send_and_wait(topic, b"aio-%d" % i)
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(topic, group_id=f"{topic}-group",
                                             auto_offset_reset="earliest", **common)
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(30):
                async for m in consumer:
                    got.append(m.value)
                    if len(got) == 10:
                        break
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    assert sorted(asyncio.run(go())) == sorted(b"aio-%d" % i for i in range(10))


def test_wrong_password_is_an_authentication_error_not_a_hang(cluster: Cluster,
                                                              pki: Pki) -> None:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient
    errors: list[Any] = []
    conf = rdkafka_conf(cluster, pki, "SASL_SSL", "alice", password="wrong")
    admin = AdminClient({**conf, "error_cb": errors.append})
    t0 = time.monotonic()
    with pytest.raises(Exception):
        admin.list_topics(timeout=10)
    admin.poll(1)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert time.monotonic() - t0 < 15
    logs = "".join(b.log_text() for b in cluster.brokers)
    assert "Failed authentication with /127.0.0.1 (listener=SASL_SSL)" in logs


def test_alice_needs_acls_to_see_and_read(cluster: Cluster, pki: Pki) -> None:
    from confluent_kafka import Consumer, KafkaError
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                       AdminClient, ResourcePatternType, ResourceType)
    topic, group = "alices-topic", "alices-group"
    admin_create_topic(cluster, pki, topic, partitions=1)
    produce_consume_rdkafka(rdkafka_conf(cluster, pki, "SASL_SSL", "admin"), topic, n=5)
    alice = rdkafka_conf(cluster, pki, "SASL_SSL", "alice")
    assert topic not in AdminClient(alice).list_topics(timeout=10).topics

    c = Consumer({**alice, "group.id": group, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    denied = None
    deadline = time.monotonic() + 20
    while denied is None and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is not None and m.error().code() in (
                KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED):
            denied = m.error()
    c.close()
    assert denied is not None, "alice consumed without ACLs"

    admin = AdminClient(rdkafka_conf(cluster, pki, "SASL_SSL", "admin"))
    grants = [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice",
                         "*", op, AclPermissionType.ALLOW)
              for op in (AclOperation.READ, AclOperation.DESCRIBE)]
    grants.append(AclBinding(ResourceType.GROUP, group, ResourcePatternType.LITERAL,
                             "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW))
    for f in admin.create_acls(grants).values():
        f.result(15)
    deadline = time.monotonic() + 20       # every broker learns the ACLs from ZooKeeper
    while topic not in AdminClient(alice).list_topics(timeout=10).topics:
        assert time.monotonic() < deadline
        time.sleep(0.3)
    wait_acls_everywhere(cluster, {(TOPIC_RESOURCE, topic): 2, (GROUP_RESOURCE, group): 1},
                         deadline)
    assert len(produce_consume_only(alice, topic, group, 5)) == 5


TOPIC_RESOURCE, GROUP_RESOURCE = 2, 3      # DescribeAcls resource types


def acl_counts(cluster: Cluster, wanted: list[tuple[int, str]]
               ) -> list[dict[tuple[int, str], int]]:
    """Per broker, how many literal ACLs its cache holds on each (resource type, name)
    of ``wanted``: DescribeAcls v1 (answered from the broker's own cache) as admin, a
    super user, on its SASL_PLAINTEXT listener."""
    from client.connection import KafkaConnection
    from client.security import ClientSecurity
    from protocol.api_keys import ApiKey
    from protocol.spec import api
    security = ClientSecurity(protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                              sasl_username="admin", sasl_password=PASSWORDS["admin"])
    spec = api(ApiKey.DESCRIBE_ACLS).request

    async def one(port: int) -> dict[tuple[int, str], int]:
        conn = await KafkaConnection.open(HOST, port, security=security)
        try:
            out = {}
            for kind, name in wanted:
                r = await conn.request(ApiKey.DESCRIBE_ACLS, spec.new(
                    resource_type_filter=kind, resource_name_filter=name, pattern_type_filter=3,
                    principal_filter=None, host_filter=None, operation=1, permission_type=1), 1)
                assert r is not None and r.error_code == 0, r
                out[(kind, name)] = sum(len(x.acls) for x in r.resources)
            return out
        finally:
            await conn.close()
    return [asyncio.run(one(b.extra_listeners["SASL_PLAINTEXT"])) for b in cluster.brokers]


def wait_acls_everywhere(cluster: Cluster, wanted: dict[tuple[int, str], int],
                         deadline: float) -> None:
    """Until every broker's cache holds ``wanted[(resource type, name)]`` ACLs on each
    resource (``acl_counts``), by ``deadline`` (time.monotonic). Each broker learns them
    from ZooKeeper's change notifications, one per resource, in its own time, and a
    client then asks whichever broker it needs (the group's coordinator, a partition's
    leader): one broker's answer, and a fixed sleep after it, did not make sure of that."""
    while True:
        counts = acl_counts(cluster, list(wanted))
        if all(c == wanted for c in counts):
            return
        assert time.monotonic() < deadline, f"ACLs per broker: {counts}, wanted {wanted}"
        time.sleep(0.3)


def produce_consume_only(conf: dict[str, Any], topic: str, group: str, n: int) -> list[bytes]:
    from confluent_kafka import Consumer
    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 40
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    return got


def test_a_certificate_that_is_not_a_brokers_cannot_replicate(cluster: Cluster,
                                                              pki: Pki) -> None:
    """mallory's certificate is signed by the same CA (TLS succeeds) but maps to
    User:CN=mallory,...: neither a super user nor granted ClusterAction."""
    from client.connection import KafkaConnection
    from client.security import ClientSecurity
    from protocol.api_keys import ApiKey
    from protocol.errors import ErrorCode
    from protocol.spec import api

    ctx = ssl.create_default_context(cafile=pki.ca)
    ctx.load_cert_chain(pki.keystore("mallory"))
    security = ClientSecurity(protocol="SSL", ssl_context=ctx, check_hostname=True)
    port = cluster.brokers[0].extra_listeners["INTERNAL"]

    async def go() -> tuple[set[int], int]:
        conn = await KafkaConnection.open(HOST, port, security=security)
        try:
            spec = api(ApiKey.FETCH).request
            part = spec.structs["FetchPartition"].new(
                partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                log_start_offset=-1, partition_max_bytes=1024)
            fetch = spec.new(
                replica_id=2, max_wait_ms=0, min_bytes=1, max_bytes=1024, isolation_level=0,
                session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
                topics=[spec.structs["FetchTopic"].new(topic="over-tls", partitions=[part])])
            resp = await conn.request(ApiKey.FETCH, fetch, 12)
            # Kafka answers a follower fetch without ClusterAction per partition
            codes = {p.error_code for t in resp.responses for p in t.partitions}
            meta = api(ApiKey.UPDATE_METADATA).request.new(
                controller_id=1, controller_epoch=99, broker_epoch=-1, topic_states=[],
                live_brokers=[])
            um = await conn.request(ApiKey.UPDATE_METADATA, meta, 7)
            return codes, um.error_code
        finally:
            await conn.close()

    admin_create_topic(cluster, pki, "over-tls")
    fetch_errors, um_error = asyncio.run(go())
    assert fetch_errors == {ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert um_error == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_bad_handshakes_close_only_their_connection(cluster: Cluster, pki: Pki) -> None:
    b = cluster.brokers[1]
    tls_port, plain_port = b.extra_listeners["SASL_SSL"], b.port
    # plaintext Kafka request on the TLS port
    from protocol.headers import RequestHeader, encode_request
    from protocol.spec import api
    frame = encode_request(RequestHeader(18, 0, 1, "plain-on-tls"), api(18).request.new())
    with socket.create_connection((HOST, tls_port), timeout=10) as s:
        s.sendall(len(frame).to_bytes(4, "big") + frame)
        s.settimeout(10)
        try:
            assert s.recv(1) == b""        # no answer: closed by the broker
        except ConnectionResetError:
            pass
    # TLS ClientHello on the plaintext port
    raw = socket.create_connection((HOST, plain_port), timeout=10)
    try:
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            ssl.create_default_context(cafile=pki.ca).wrap_socket(raw, server_hostname=HOST)
    finally:
        raw.close()
    # a client that stops in the middle of the TLS handshake (half a ClientHello)
    stalled = socket.create_connection((HOST, tls_port), timeout=20)
    stalled.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    t0 = time.monotonic()
    stalled.settimeout(20)
    assert stalled.recv(1) == b""          # closed by the broker (request.timeout.ms)
    assert time.monotonic() - t0 < 15
    stalled.close()
    # meanwhile other connections work
    with WireClient(plain_port) as w:
        assert w.api_versions().error_code == 0
    deadline = time.monotonic() + 10
    while True:
        text = b.log_text()
        if text.count("TLS handshake failed") >= 2 and "a TLS handshake on a PLAINTEXT" in text:
            break
        assert time.monotonic() < deadline, text[-3000:]
        time.sleep(0.2)


@pytest.mark.parametrize("listener", ["SASL_SSL", "SASL_PLAINTEXT"])
def test_java_client(cluster: Cluster, pki: Pki, tmp_path: Path, listener: str) -> None:
    from tests.integration.clients.test_java_client import JAR_DIR, JARS, REPO
    if shutil.which("java") is None:
        pytest.skip("no java on PATH (JDK 17 needed)")
    if not all((JAR_DIR / f"{j}.jar").is_file() for j in JARS):
        res = subprocess.run([sys.executable, str(REPO / "tests/oracle/install_java_client.py")],
                             capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, f"install_java_client failed:\n{res.stdout}\n{res.stderr}"
    props = tmp_path / "client.properties"
    if listener == "SASL_SSL":
        security = ["sasl.mechanism=SCRAM-SHA-512", "sasl.jaas.config=" + SCRAM_JAAS,
                    "ssl.truststore.type=PEM", f"ssl.truststore.location={pki.ca}"]
    else:
        security = ["sasl.mechanism=PLAIN", "sasl.jaas.config=" + PLAIN_JAAS]
    props.write_text("\n".join([f"bootstrap.servers={cluster.bootstrap_on(listener)}",
                                 f"security.protocol={listener}", *security, ""]))
    res = subprocess.run(["java", "-cp", ":".join(str(JAR_DIR / f"{j}.jar") for j in JARS),
                          str(Path(__file__).with_name("JavaSecureClient.java")), str(props),
                          f"java-{listener.lower()}", f"java-{listener.lower()}-group"],
                         capture_output=True, text=True, timeout=240, cwd=REPO)
    assert res.returncode == 0, (f"java exited {res.returncode}\nstdout:\n{res.stdout[-3000:]}"
                                 f"\nstderr:\n{res.stderr[-5000:]}")
    assert "OK 30 records" in res.stdout


def test_librdkafka_reauthenticates_and_a_client_that_does_not_is_closed(
        cluster: Cluster, pki: Pki) -> None:
    """KIP-368 on the REAUTH listener (sessions of 2 s): librdkafka re-authenticates
    on its connections and produces for 7 s without a broken connection, so does
    our client (6 s on one connection, requests in flight when a session ends); a
    client that does not re-authenticate has its connection closed once its session
    is over."""
    from confluent_kafka import Producer
    admin_create_topic(cluster, pki, "reauth-topic", partitions=1)
    conf = rdkafka_conf(cluster, pki, "REAUTH", "admin", mechanism="PLAIN")
    errors: list[Any] = []
    p = Producer({**conf, "acks": "all", "error_cb": errors.append})
    delivered: list[Any] = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < 7:
        p.produce("reauth-topic", b"x", on_delivery=lambda e, m: delivered.append(e))
        p.poll(0.05)
    assert p.flush(30) == 0
    assert delivered and all(e is None for e in delivered), [e for e in delivered if e][:3]
    assert not errors, errors
    logs = "".join(b.log_text() for b in cluster.brokers)
    assert "SASL session expired" not in logs

    from client.connection import KafkaConnection
    from client.security import ClientSecurity
    from protocol.api_keys import ApiKey
    from protocol.sasl_plain import plain_token
    from protocol.spec import api
    security = ClientSecurity(protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                              sasl_username="admin", sasl_password="admin-secret")
    port = cluster.brokers[0].extra_listeners["REAUTH"]
    body = api(ApiKey.METADATA).request.new(topics=[], allow_auto_topic_creation=False)

    async def ours() -> int:      # our client re-authenticates too: one connection throughout
        conn = await KafkaConnection.open(HOST, port, security=security)
        assert conn.session_lifetime_ms == 2000
        first = conn.authenticated_at
        for _ in range(12):
            await asyncio.gather(*(conn.request(ApiKey.METADATA, body, 9) for _ in range(3)))
            await asyncio.sleep(0.5)
        assert not conn.closed and conn.authenticated_at != first
        await conn.close()
        return 0

    asyncio.run(ours())
    assert "SASL session expired" not in "".join(b.log_text() for b in cluster.brokers)
    # a client that does not re-authenticate: PLAIN by hand, then a request too late
    with WireClient(port) as w:
        assert w.request(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == 0
        done = w.request(ApiKey.SASL_AUTHENTICATE, 1,
                         auth_bytes=plain_token("admin", "admin-secret"))
        assert done.error_code == 0 and done.session_lifetime_ms == 2000
        assert w.request(ApiKey.METADATA, 9, body).brokers
        time.sleep(2.5)
        w.send_frame(w.request_bytes(ApiKey.METADATA, 9, body)[1])
        assert w.is_closed_by_peer(wait=10)
    deadline = time.monotonic() + 10
    while "SASL session expired" not in "".join(b.log_text() for b in cluster.brokers):
        assert time.monotonic() < deadline, "the expired session was not closed"
        time.sleep(0.2)


@pytest.mark.parametrize("listener,mechanism", [("SASL_SSL", "SCRAM-SHA-512"),
                                                ("SASL_PLAINTEXT", "PLAIN")])
def test_kcat(cluster: Cluster, pki: Pki, listener: str, mechanism: str) -> None:
    """kcat (librdkafka 2.0.2): metadata (-L), produce, and consume in a balanced
    consumer group (-G)."""
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        pytest.skip("kcat not installed (make test installs it with apt-get where it can)")
    topic = f"kcat-{listener.lower()}"
    admin_create_topic(cluster, pki, topic, partitions=1)
    auth = ["-b", cluster.bootstrap_on(listener), "-X", f"security.protocol={listener}",
            "-X", f"sasl.mechanisms={mechanism}", "-X", "sasl.username=admin",
            "-X", "sasl.password=admin-secret"]
    if listener == "SASL_SSL":
        auth += ["-X", f"ssl.ca.location={pki.ca}"]

    def run(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run([kcat, *auth, *args], input=stdin, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert f'topic "{topic}"' in run("-L")
    run("-P", "-t", topic, stdin="one\ntwo\nthree\n")
    assert run("-C", "-t", topic, "-o", "beginning", "-e", "-c", "3").split() == \
        ["one", "two", "three"]
    got = subprocess.run([kcat, *auth, "-X", "auto.offset.reset=earliest", "-G",
                          f"{topic}-group", topic, "-c", "3"],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["one", "two", "three"]


def test_tools_over_sasl_ssl_with_command_config(cluster: Cluster, pki: Pki,
                                                 tmp_path: Path) -> None:
    """pybroker topics / configs / acls with Kafka's --command-config file."""
    import io

    from broker.cli import main as pybroker
    props = tmp_path / "admin.properties"
    props.write_text("\n".join(["security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
                                "sasl.jaas.config=" + SCRAM_JAAS, "ssl.truststore.type=PEM",
                                f"ssl.truststore.location={pki.ca}", ""]))
    common = ["--bootstrap-server", cluster.bootstrap_on("SASL_SSL"),
              "--command-config", str(props)]

    def run(*argv: str) -> str:
        import contextlib
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = pybroker(list(argv))
        assert code == 0, f"pybroker {' '.join(argv)} -> {code}\n{out.getvalue()}{err.getvalue()}"
        return out.getvalue()

    run("topics", *common, "--create", "--topic", "tool-secure", "--partitions", "2",
        "--replication-factor", "3")
    assert "tool-secure" in run("topics", *common, "--list")
    run("configs", *common, "--alter", "--entity-type", "users", "--entity-name", "carol",
        "--add-config", "SCRAM-SHA-512=[password=carol-secret]")
    assert "SCRAM-SHA-512=iterations=4096" in run("configs", *common, "--describe",
                                                  "--entity-type", "users",
                                                  "--entity-name", "carol")
    run("acls", *common, "--add", "--allow-principal", "User:carol", "--operation", "Describe",
        "--topic", "tool-secure")
    assert "User:carol" in run("acls", *common, "--list", "--topic", "tool-secure")
    # carol logs in with the credential the tool stored, and sees only her topic
    from confluent_kafka.admin import AdminClient
    carol = {**rdkafka_conf(cluster, pki, "SASL_SSL", "admin"), "sasl.username": "carol",
             "sasl.password": "carol-secret"}
    deadline = time.monotonic() + 20
    while True:
        topics = set(AdminClient(carol).list_topics(timeout=10).topics)
        if "tool-secure" in topics:
            break
        assert time.monotonic() < deadline, topics
        time.sleep(0.3)
    assert "scram-topic" not in topics, topics


def test_a_stalled_sasl_handshake_is_closed(cluster: Cluster) -> None:
    """Connected to a SASL listener, ApiVersions answered, then nothing: closed after
    request.timeout.ms (8 s here) with a log line; other connections unaffected."""
    b = cluster.brokers[2]
    with WireClient(b.extra_listeners["SASL_PLAINTEXT"]) as w:
        assert w.api_versions().error_code == 0
        t0 = time.monotonic()
        assert w.is_closed_by_peer(wait=15)
        assert 5 < time.monotonic() - t0 < 15
    with WireClient(b.port) as w:
        assert w.api_versions().error_code == 0
    assert "SASL authentication not completed within 8000 ms" in b.log_text()


def test_a_request_before_authentication_closes_the_connection(cluster: Cluster) -> None:
    b = cluster.brokers[2]
    with WireClient(b.extra_listeners["SASL_PLAINTEXT"]) as w:
        from protocol.spec import api
        w.send_frame(w.request_bytes(3, 9, api(3).request.new(topics=[]))[1])
        assert w.is_closed_by_peer(wait=10)
    assert "unexpected MetadataRequest request during SASL authentication" in b.log_text()


def _served_cn(port: int, ca: str) -> str:
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection((HOST, port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=HOST) as s:
            subject = dict(rdn[0] for rdn in s.getpeercert()["subject"])
    return subject["commonName"]


def test_certificate_rotation_without_restart(cluster: Cluster, pki: Pki) -> None:
    """IncrementalAlterConfigs on BROKER 0 sets its SASL_SSL listener's keystore to a new
    certificate: new handshakes get it at once, an open connection keeps working, a
    keystore OpenSSL cannot load is INVALID_CONFIG, DescribeConfigs names the key
    DYNAMIC_BROKER_CONFIG, and a restart keeps it (read from /config/brokers/0)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, ConfigSource, ResourceType)
    pki.issue("rotated")
    b0 = cluster.brokers[0]
    port = b0.extra_listeners["SASL_SSL"]
    key = "listener.name.sasl_ssl.ssl.keystore.location"
    assert _served_cn(port, pki.ca) == "broker"
    admin = AdminClient(rdkafka_conf(cluster, pki, "SASL_SSL", "admin"))

    def alter(value: str) -> None:
        res = ConfigResource(ResourceType.BROKER, str(b0.broker_id), incremental_configs=[
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
        for f in admin.incremental_alter_configs([res]).values():
            f.result(30)

    with pytest.raises(KafkaException, match="SSLFactory"):
        alter(str(pki.dir / "missing.pem"))
    assert _served_cn(port, pki.ca) == "broker"
    alter(pki.keystore("rotated"))
    assert _served_cn(port, pki.ca) == "rotated"
    admin.list_topics(timeout=10)                    # its connections still work
    res = ConfigResource(ResourceType.BROKER, str(b0.broker_id))
    configs = admin.describe_configs([res])[res].result(30)
    assert configs[key].value == pki.keystore("rotated")
    assert configs[key].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert configs["listener.name.sasl_plaintext.plain.sasl.jaas.config"].is_sensitive
    assert configs["listener.name.sasl_plaintext.plain.sasl.jaas.config"].value is None
    cluster.restart(b0)
    assert _served_cn(port, pki.ca) == "rotated"
    # back to the static keystore with pybroker configs (kafka-configs.sh's flags)
    import contextlib
    import io

    from broker.cli import main as pybroker
    props = pki.dir / "admin.properties"
    props.write_text("\n".join(["security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
                                "sasl.jaas.config=" + SCRAM_JAAS, "ssl.truststore.type=PEM",
                                f"ssl.truststore.location={pki.ca}", ""]))
    common = ["configs", "--bootstrap-server", cluster.bootstrap_on("SASL_SSL"),
              "--command-config", str(props), "--entity-type", "brokers",
              "--entity-name", str(b0.broker_id)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert pybroker([*common, "--describe"]) == 0
        assert pybroker([*common, "--alter", "--delete-config", key]) == 0
    assert f"{key}={pki.keystore('rotated')} sensitive=false" in out.getvalue()
    assert _served_cn(port, pki.ca) == "broker"
