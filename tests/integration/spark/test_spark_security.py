"""The PySpark data source and sink over a SASL_SSL listener (SCRAM-SHA-512): the
``kafka.security.protocol`` / ``kafka.sasl.*`` / ``kafka.ssl.*`` options reach the
driver's and the executors' connections (the broker's PLAINTEXT listener, its
inter-broker one, is the harness's; User:ANONYMOUS is a super user for the
controller's requests to itself). A wrong password fails the job with the broker's
authentication error."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.cluster import Cluster, MakeCluster
from tests.integration.security.certs import Pki, make_pki
from tests.integration.security.scram_users import store_scram_credentials

pytestmark = [pytest.mark.integration, pytest.mark.slow]

JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="spark" password="spark-secret";')


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), names=("broker",))


@pytest.fixture(scope="module")
def secure(make_cluster: MakeCluster, pki: Pki) -> Cluster:
    c = make_cluster("brokers", listeners=("SASL_SSL",), start=False,
                     overrides={"log.level": "WARNING",
                                "ssl.keystore.type": "PEM",
                                "ssl.keystore.location": pki.keystore("broker"),
                                "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
                                "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                "allow.everyone.if.no.acl.found": "false",
                                "super.users": "User:spark;User:ANONYMOUS"})
    store_scram_credentials(c.zk_connect, {"spark": "spark-secret"}, ["SCRAM-SHA-512"])
    return c.start()


def options(secure: Cluster, pki: Pki, password: str = "spark-secret") -> dict[str, str]:
    return {"kafka.bootstrap.servers": secure.bootstrap_on("SASL_SSL"),
            "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": JAAS.replace("spark-secret", password),
            "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": pki.ca}


def test_sink_and_source_over_sasl_ssl(spark: Any, secure: Cluster, pki: Pki) -> None:
    opts = options(secure, pki)
    df = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(200)], "key string, value string")
    w = df.write.format("pybroker").option("topic", "secure-spark").mode("append")
    for k, v in opts.items():
        w = w.option(k, v)
    w.save()
    r = spark.read.format("pybroker").option("subscribe", "secure-spark")
    for k, v in opts.items():
        r = r.option(k, v)
    got = sorted(row.value.decode() for row in r.load().select("value").collect())
    assert got == sorted(f"v{i}" for i in range(200))


def test_a_wrong_password_fails_the_job_with_the_brokers_error(spark: Any, secure: Cluster,
                                                              pki: Pki) -> None:
    r = spark.read.format("pybroker").option("subscribe", "secure-spark")
    for k, v in options(secure, pki, password="wrong").items():
        r = r.option(k, v)
    with pytest.raises(Exception, match="SASL_AUTHENTICATION_FAILED|authentication"):
        r.load().collect()
