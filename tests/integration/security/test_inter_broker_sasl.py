"""Brokers that replicate over SASL: inter.broker.listener.name=INTERNAL, a
SASL_PLAINTEXT listener with SCRAM-SHA-256, the brokers logging in as User:broker
with the username/password of the listener's JAAS config (credentials stored in
ZooKeeper before start, as kafka-configs.sh --zookeeper does). The controller's
requests and the followers' fetches go over it; User:broker is the super user,
so an RF-2 topic's ISR fills. A PLAINTEXT listener stays for the harness (with
allow.everyone.if.no.acl.found=true for its anonymous probe)."""

from __future__ import annotations

import time

import pytest

from tests.integration.cluster import Cluster, MakeCluster, WireClient
from tests.integration.security.scram_users import store_scram_credentials

pytestmark = [pytest.mark.integration, pytest.mark.slow]

JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="broker" password="broker-secret";')


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    c = make_cluster("ibsasl", size=2, listeners=("INTERNAL",), start=False,
                     overrides={
                    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
                    "inter.broker.listener.name": "INTERNAL",
                    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
                    "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-256",
                    "listener.name.internal.scram-sha-256.sasl.jaas.config": JAAS,
                    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                    "allow.everyone.if.no.acl.found": "true",
                    "super.users": "User:broker"})
    store_scram_credentials(c.zk_connect, {"broker": "broker-secret"}, ["SCRAM-SHA-256"])
    return c.start(timeout=60)


def test_replication_and_the_controller_run_over_sasl(cluster: Cluster) -> None:
    from protocol.api_keys import ApiKey
    from protocol.spec import api
    req = api(ApiKey.CREATE_TOPICS).request
    topic = req.structs["CreatableTopic"].new(name="over-sasl", num_partitions=2,
                                              replication_factor=2, configs=[])
    with WireClient(cluster.brokers[0].port) as w:
        resp = w.request(ApiKey.CREATE_TOPICS, 5, req.new(topics=[topic], timeout_ms=20000))
        assert resp.topics[0].error_code == 0
    deadline = time.monotonic() + 30
    while True:                               # every follower fetches over INTERNAL
        with WireClient(cluster.brokers[1].port) as w:
            md = w.metadata(["over-sasl"])
        parts = md.topics[0].partitions if md.topics else []
        if len(parts) == 2 and all(len(p.isr_nodes) == 2 for p in parts):
            break
        assert time.monotonic() < deadline, parts
        time.sleep(0.2)
    for b in cluster.brokers:
        text = b.log_text()
        assert "Failed authentication" not in text
        assert "is Denied Operation" not in text
