"""Spark's ``kafka.security.protocol``, ``kafka.ssl.*`` and ``kafka.sasl.*`` options reach
``client.security.ClientSecurity``: the source's and the sink's ClientConfig, KafkaIO's
pool, and the replay into a topic (``--command-config`` on its command line)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from pyspark.sql.types import BinaryType, StructField, StructType

from client.security import PLAINTEXT
from spark_jobs import replay, replay_topic, source_options, source_write
from spark_jobs.kafka_io import KafkaIO
from spark_jobs.kafka_requests import ClientConfig, security_options
from tests.unit.client.test_security import Pki, pki  # noqa: F401 - the fixture

SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="spark" password="spark-secret";')


def options(pki: Pki, **more: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": "127.0.0.1:9093",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": SCRAM_JAAS,
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": str(pki.ca),
            "kafka.group.id": "ignored", "subscribe": "t", **more}


def test_security_options_keep_only_security_keys_without_the_prefix() -> None:
    got = security_options({"kafka.bootstrap.servers": "h:1", "Kafka.Security.Protocol": "SSL",
                            "kafka.ssl.ca.location": "/ca.pem", "kafka.sasl.username": "u",
                            "kafka.enable.ssl.certificate.verification": "false",
                            "kafka.client.id": "c", "ssl.not.kafka": "x"})
    assert got == (("enable.ssl.certificate.verification", "false"),
                   ("sasl.username", "u"), ("security.protocol", "SSL"),
                   ("ssl.ca.location", "/ca.pem"))


def test_client_config_carries_them_to_client_security(pki: Pki) -> None:
    config = ClientConfig.from_kafka_options(options(pki))
    assert dict(config.security)["security.protocol"] == "SASL_SSL"
    assert "group.id" not in dict(config.security)
    sec = config.client_security()
    assert (sec.protocol, sec.sasl_mechanism, sec.sasl_username, sec.sasl_password) == (
        "SASL_SSL", "SCRAM-SHA-512", "spark", "spark-secret")
    assert sec.ssl_context is not None and sec.check_hostname
    # shipped to executors and used as a dict key by shared_client; passwords kept out of repr
    assert pickle.loads(pickle.dumps(config)) == config
    assert hash(config) == hash(ClientConfig.from_kafka_options(options(pki)))
    assert "spark-secret" not in repr(config)


def test_no_security_options_is_plaintext() -> None:
    config = ClientConfig.from_kafka_options({"kafka.bootstrap.servers": "h:1"})
    assert config.security == ()
    assert config.client_security() == PLAINTEXT


def test_a_bad_security_option_fails_on_the_driver(pki: Pki) -> None:
    with pytest.raises(ValueError, match=r"Kafka security options \(kafka\.\*\): "
                                         r"ssl\.truststore\.type='JKS'.*PEM"):
        ClientConfig.from_kafka_options(options(pki, **{"kafka.ssl.truststore.type": "JKS"}))
    with pytest.raises(ValueError, match=r"sasl\.mechanism='GSSAPI' is not supported"):
        ClientConfig.from_kafka_options(options(pki, **{"kafka.sasl.mechanism": "GSSAPI"}))


def test_source_and_sink_options_carry_them(pki: Pki) -> None:
    read = source_options.parse(options(pki), batch=True)
    assert read.client.client_security().protocol == "SASL_SSL"
    schema = StructType([StructField("value", BinaryType())])
    write = source_write.parse_write(options(pki, topic="out"), schema)
    assert write.client.client_security().sasl_username == "spark"


def test_kafka_io_opens_its_pool_with_them(pki: Pki) -> None:
    with KafkaIO(ClientConfig.from_kafka_options(options(pki))) as io:
        security = io.admin.pool.security
        assert security is not None and security.protocol == "SASL_SSL"
        assert security.sasl_mechanism == "SCRAM-SHA-512"


def test_replay_to_topic_checks_security_before_spark(pki: Pki) -> None:
    with pytest.raises(ValueError, match=r"security\.protocol='TLS'"):
        replay_topic.replay_to_topic(None, [], replay.Bounds(), "t", "h:1", 0,
                                     {"security.protocol": "TLS"})
    assert replay_topic.replay_to_topic(None, [], replay.Bounds(), "t", "h:1", 0,
                                        {"security.protocol": "SSL",
                                         "ssl.ca.location": str(pki.ca)}) == 0


def test_replay_command_config(tmp_path: Path, pki: Pki,
                               capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "client.properties"
    bad.write_text(f"security.protocol=SSL\nssl.keystore.type=PKCS12\n"
                   f"ssl.keystore.location={pki.client_p12}\n")
    status = replay.main(["--log-dirs", str(tmp_path), "--to-topic", "t",
                          "--bootstrap-server", "127.0.0.1:1", "--command-config", str(bad)])
    assert status == 2
    assert "--command-config" in capsys.readouterr().err
