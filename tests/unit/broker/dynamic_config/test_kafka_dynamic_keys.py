"""Issue 30: every broker config Kafka 3.9 takes dynamically is taken here.

Walks Kafka's list (broker/dynamic_config/kafka_keys.py, written from Kafka 3.9.0's
DynamicBrokerConfig.scala and the ConfigDefs): each key is accepted per broker (and on
the cluster default unless Kafka keeps it per broker), stored in the fake ZooKeeper,
and described with the source of the layer that holds it; listener-prefixed keys per
listener. Then: a bad value of every typed key is INVALID_CONFIG naming key and value;
keys without an effect here are stored but never folded into the running config;
password keys are refused when stored (no password.encoder.secret); the TLS keys of a
listener without TLS are stored only; listener.name.<l>.max.connections is applied to
the open listener.
"""

from __future__ import annotations

import asyncio
import json
import socket
from types import SimpleNamespace
from typing import Any

import pytest

from broker import dynamic_broker_configs
from broker.dynamic_config import alter, describe, effects, keys, live
from broker.dynamic_config import kafka_keys as kafka
from broker.handlers import configs as handlers
from broker.network.connection_quotas import UNLIMITED
from broker.replication.throttle import FOLLOWER_RATE, LEADER_RATE
from broker.security.reconfigure import ReconfigureError
from broker.topic_config import ConfigSource as S
from broker.topic_creation import TopicError
from protocol.errors import ErrorCode
from tests.unit.broker.dynamic_config.fakes import FakeBroker

T = kafka.T

# values Kafka and pybroker both take, where a type's generic sample would not do
SAMPLES = {
    "listeners": "PLAINTEXT://:9092",
    "advertised.listeners": f"PLAINTEXT://{socket.getfqdn()}:9092",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:SSL",
    "log.cleanup.policy": "compact",
    "compression.type": "lz4",
    "compression.gzip.level": "5",
    "log.message.timestamp.type": "LogAppendTime",
    "ssl.client.auth": "requested",
    "max.connections.per.ip.overrides": "127.0.0.1:5",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "sasl.kerberos.principal.to.local.rules": "RULE:[1:$1@$0](.*@EXAMPLE.COM)s/@.*//,DEFAULT",
    "ssl.enabled.protocols": "TLSv1.3",
    "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256",
    "ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM",
}


def sample(name: str) -> str:
    """A value of Kafka's type for ``name`` that both Kafka and pybroker take (not its
    default, so that a described value shows the layer it came from)."""
    if name in SAMPLES:
        return SAMPLES[name]
    key = kafka.KEYS[name]
    if key.type in (T.INT, T.LONG, T.SHORT):
        default = int(key.default) if key.default is not None else None
        return str(default + 1) if default is not None and default < 1_000_000_000 else "1000"
    return {T.DOUBLE: "0.25", T.BOOLEAN: "false" if key.default == "true" else "true",
            T.CLASS: "com.example.Plugin", T.LIST: "com.example.A,com.example.B",
            T.PASSWORD: "secret"}.get(key.type, "/etc/pybroker/some-value")


def row(b: FakeBroker, name: str) -> Any:
    rows = {r.name: r for r in describe.broker_rows(b.config, live.layers_of(b))}
    return rows[name]


def stored(b: FakeBroker, entity: str) -> dict[str, str]:
    got = b.cluster.nodes.get(f"/config/brokers/{entity}")
    return json.loads(got[0])["config"] if got else {}


# ---- the list itself ------------------------------------------------------------------

def test_kafka_39_list_size_and_cross_checks() -> None:
    assert len(kafka.ALL_DYNAMIC) == 89 and len(kafka.BROKER_DYNAMIC) == 92
    assert set(kafka.KEYS) == kafka.BROKER_DYNAMIC
    # the log defaults of the list are the topic keys' first broker synonyms
    assert kafka.DYNAMIC_LOG == set(keys.log_default_keys())
    for name, tk in keys.log_default_keys().items():
        assert kafka.KEYS[name].type == tk.type, name
    # every key is applied or accepted without effect (the SSL stores: per listener)
    assert effects.APPLIED <= kafka.BROKER_DYNAMIC
    assert not effects.APPLIED & effects.WITHOUT_EFFECT
    assert effects.APPLIED | effects.WITHOUT_EFFECT | kafka.DYNAMIC_SECURITY == \
        kafka.BROKER_DYNAMIC
    assert set(effects.REASONS) == effects.WITHOUT_EFFECT
    assert effects.THROTTLE_RATES == {LEADER_RATE, FOLLOWER_RATE}
    assert kafka.PASSWORDS == {"ssl.keystore.password", "ssl.key.password",
                               "ssl.truststore.password", "ssl.keystore.certificate.chain",
                               "ssl.keystore.key", "ssl.truststore.certificates",
                               "sasl.jaas.config"}


# ---- the walk: per broker, cluster default, per listener ----------------------------------

PLAIN_KEYS = sorted(kafka.BROKER_DYNAMIC - kafka.DYNAMIC_SECURITY - kafka.PASSWORDS)


@pytest.mark.parametrize("name", PLAIN_KEYS)
def test_every_kafka_key_is_accepted_stored_and_described_per_broker(name: str) -> None:
    b = FakeBroker()
    value = sample(name)
    asyncio.run(alter.alter(b, False, {name: value}, validate_only=False))
    assert stored(b, "0") == {name: value}
    r = row(b, name)
    assert (r.value, r.source, r.read_only) == (value, S.DYNAMIC_BROKER_CONFIG, False)
    assert r.synonyms[0].name == name and r.synonyms[0].source == S.DYNAMIC_BROKER_CONFIG
    assert r.type == kafka.KEYS[name].type
    # and deleted again: the default (or static) value is back
    asyncio.run(alter.alter(b, False, {name: None}, validate_only=False))
    assert stored(b, "0") == {} and row(b, name).source != S.DYNAMIC_BROKER_CONFIG


@pytest.mark.parametrize("name", PLAIN_KEYS)
def test_every_kafka_key_at_the_cluster_default_or_refused_as_kafka(name: str) -> None:
    b = FakeBroker()
    value = sample(name)
    if name in kafka.PER_BROKER:
        with pytest.raises(ReconfigureError, match="broker id must be specified: " + name) as e:
            asyncio.run(alter.alter(b, True, {name: value}, validate_only=False))
        assert not e.value.invalid_config and stored(b, "<default>") == {}
        return
    asyncio.run(alter.alter(b, True, {name: value}, validate_only=False))
    assert stored(b, "<default>") == {name: value}
    r = row(b, name)
    assert (r.value, r.source) == (value, S.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert [(d.name, d.value, d.source) for d in describe.default_rows(live.layers_of(b))] \
        == [(name, value, S.DYNAMIC_DEFAULT_BROKER_CONFIG)]


PER_LISTENER = sorted(keys.PER_LISTENER_KEYS - kafka.PASSWORDS)


@pytest.mark.parametrize("name", PER_LISTENER)
def test_every_per_listener_key_is_accepted_stored_and_described(name: str) -> None:
    b = FakeBroker()        # EXTERNAL is not one of its listeners: stored, no effect
    key, value = f"listener.name.external.{name}", sample(name)
    asyncio.run(alter.alter(b, False, {key: value}, validate_only=False))
    assert stored(b, "0") == {key: value}
    rows = {r.name: r for r in describe.broker_rows(b.config, live.layers_of(b))}
    assert (rows[key].value, rows[key].source, rows[key].read_only) == \
        (value, S.DYNAMIC_BROKER_CONFIG, False)
    assert rows[key].synonyms[0].name == key
    default = FakeBroker()
    if name in kafka.CLUSTER_LEVEL_LISTENER:
        asyncio.run(alter.alter(default, True, {key: value}, validate_only=False))
        assert stored(default, "<default>") == {key: value}
        assert row(default, key).source == S.DYNAMIC_DEFAULT_BROKER_CONFIG
    else:
        with pytest.raises(ReconfigureError, match="broker id must be specified: " + key):
            asyncio.run(alter.alter(default, True, {key: value}, validate_only=False))


def test_the_security_stores_only_with_a_listener_prefix() -> None:
    for name in sorted(kafka.DYNAMIC_SECURITY):
        with pytest.raises(ReconfigureError, match="only per-listener using the listener "
                                                   "prefix: " + name):
            keys.check({name: sample(name)}, per_broker=True)
    keys.check({f"listener.name.external.{n}": sample(n) for n in kafka.DYNAMIC_SECURITY},
               per_broker=True)
    keys.check({"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": "x"}, per_broker=True)
    for bad in ("listener.name.external.broker.id", "listener.name.external.log.retention.ms",
                "listener.name.external.listeners", "sasl.login.class"):
        with pytest.raises(ReconfigureError, match="Cannot update these configs dynamically"):
            keys.check({bad: "1"}, per_broker=True)


# ---- values -------------------------------------------------------------------------------

TYPED = sorted(k.name for k in kafka.KEYS.values()
               if k.type in (T.INT, T.LONG, T.SHORT, T.DOUBLE, T.BOOLEAN, T.CLASS))


@pytest.mark.parametrize("name", TYPED)
def test_a_bad_value_of_every_typed_key_is_invalid_config_naming_key_and_value(name: str
                                                                               ) -> None:
    bad = "a b c" if kafka.KEYS[name].type == T.CLASS else "abc"
    with pytest.raises(ReconfigureError) as e:
        keys.check({name: bad}, per_broker=True)
    assert e.value.invalid_config
    assert f"Invalid value {bad} for configuration {name}: " in str(e.value)


@pytest.mark.parametrize("key,value,why", [
    ("sasl.kerberos.min.time.before.relogin", "abc", "Not a number of type LONG"),
    ("sasl.login.refresh.buffer.seconds", "40000", "Not a number of type SHORT"),
    ("num.network.threads", "0", "Value must be at least 1"),
    ("remote.fetch.max.wait.ms", "2147483648", "Not a number of type INT"),
    ("replica.alter.log.dirs.io.max.bytes.per.second", "-1", "Value must be at least 0"),
    ("ssl.client.auth", "maybe", "String must be one of: required, requested, none"),
    ("sasl.kerberos.ticket.renew.jitter", "1,5", "Not a number of type DOUBLE"),
    ("listener.name.external.sasl.kerberos.min.time.before.relogin", "soon",
     "Not a number of type LONG"),
    ("listener.name.external.max.connections", "-1", "Value must be at least 0"),
])
def test_kafkas_words_for_bad_values(key: str, value: str, why: str) -> None:
    with pytest.raises(ReconfigureError) as e:
        keys.check({key: value}, per_broker=True)
    assert e.value.invalid_config
    assert str(e.value) == f"Invalid value {value} for configuration {key}: {why}"


def test_good_values_in_kafkas_forms_are_taken() -> None:
    keys.check({"sasl.kerberos.ticket.renew.jitter": "1e-2", "log.preallocate": "TRUE",
                "sasl.kerberos.min.time.before.relogin": " +58000 ",
                "principal.builder.class": "org.example.My$Builder",
                "log.cleaner.io.max.bytes.per.second": "1.7976931348623157E308"},
               per_broker=True)


def test_the_handler_answers_invalid_config_for_a_bad_kerberos_value() -> None:
    b = FakeBroker()
    op = SimpleNamespace(name="sasl.kerberos.min.time.before.relogin", value="abc",
                         config_operation=handlers.SET)
    with pytest.raises(TopicError) as e:
        asyncio.run(handlers._alter_broker(b, SimpleNamespace(resource_name="0", configs=[op]),
                                           True, False))
    assert e.value.error == ErrorCode.INVALID_CONFIG
    assert "sasl.kerberos.min.time.before.relogin" in str(e.value.message)
    assert "abc" in str(e.value.message) and stored(b, "0") == {}
    op.value = "58000"      # librdkafka's 0081-admin value: NONE, stored, described
    asyncio.run(handlers._alter_broker(b, SimpleNamespace(resource_name="0", configs=[op]),
                                       True, False))
    r = row(b, "sasl.kerberos.min.time.before.relogin")
    assert (r.value, r.source) == ("58000", S.DYNAMIC_BROKER_CONFIG)


# ---- effects ------------------------------------------------------------------------------

def test_keys_without_effect_are_never_folded_into_the_running_config() -> None:
    b = FakeBroker()
    asyncio.run(alter.alter(b, False, {"sasl.enabled.mechanisms": "PLAIN",
                                       "ssl.client.auth": "required",
                                       "num.io.threads": "16"}, validate_only=False))
    assert b.config.sasl_enabled_mechanisms == "GSSAPI"      # the static value still
    assert b.config.ssl_client_auth == "none"
    r = row(b, "sasl.enabled.mechanisms")
    assert (r.value, r.source) == ("PLAIN", S.DYNAMIC_BROKER_CONFIG)
    assert [(s.source, s.value) for s in r.synonyms] == [
        (S.DYNAMIC_BROKER_CONFIG, "PLAIN"), (S.DEFAULT_CONFIG, "GSSAPI")]
    assert "without effect" in r.doc
    # a restart reads them back (load keeps them) and still does not fold them
    again = FakeBroker()
    again.cluster = b.cluster
    own = asyncio.run(dynamic_broker_configs.load(again))
    assert own == {"sasl.enabled.mechanisms": "PLAIN", "ssl.client.auth": "required",
                   "num.io.threads": "16"}
    dynamic_broker_configs.apply(again, own, validate_only=False)
    assert again.config.sasl_enabled_mechanisms == "GSSAPI"
    assert row(again, "num.io.threads").value == "16"


def test_passwords_are_refused_when_stored_but_pass_validate_only() -> None:
    b = FakeBroker()
    for key in ("sasl.jaas.config", "listener.name.external.ssl.keystore.password",
                "listener.name.sasl_ssl.plain.sasl.jaas.config"):
        asyncio.run(alter.alter(b, False, {key: "s3cret"}, validate_only=True))
        with pytest.raises(ReconfigureError, match="Password encoder secret not configured"
                           ) as e:
            asyncio.run(alter.alter(b, False, {key: "s3cret"}, validate_only=False))
        assert e.value.invalid_config and "s3cret" not in str(e.value)
    assert stored(b, "0") == {}
    asyncio.run(alter.alter(b, False, {"sasl.jaas.config": None}, validate_only=False))


def test_tls_stores_of_a_listener_without_tls_are_stored_without_effect() -> None:
    b = FakeBroker()        # PLAINTEXT only: nothing for reconfigure to swap
    key = "listener.name.plaintext.ssl.keystore.location"
    asyncio.run(alter.alter(b, False, {key: "/etc/pybroker/k.pem"}, validate_only=False))
    assert stored(b, "0") == {key: "/etc/pybroker/k.pem"}
    assert key not in b.config.listener_overrides and b.listener_security["PLAINTEXT"].tls is None
    # a notification of the same entry (another broker's view) keeps it too
    other = FakeBroker()
    live.adopt_entry(other, stored(b, "0"), default=False)
    assert other.dynamic_configs == {key: "/etc/pybroker/k.pem"}


def test_listener_max_connections_applies_to_the_open_listener() -> None:
    b = FakeBroker()
    quotas = b.network_limits.quotas
    quotas.add_listener("PLAINTEXT")        # as KafkaServer.start does
    key = "listener.name.plaintext.max.connections"
    asyncio.run(alter.alter(b, True, {key: "7"}, validate_only=False))
    assert quotas.listener_max["PLAINTEXT"] == 7 and b.config.listener_overrides[key] == "7"
    asyncio.run(alter.alter(b, False, {key: "3"}, validate_only=False))   # own over default
    assert quotas.listener_max["PLAINTEXT"] == 3
    assert row(b, key).source == S.DYNAMIC_BROKER_CONFIG
    assert [(s.name, s.source) for s in row(b, key).synonyms] == [
        (key, S.DYNAMIC_BROKER_CONFIG), (key, S.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("max.connections", S.DEFAULT_CONFIG)]
    asyncio.run(alter.alter(b, False, {key: None}, validate_only=False))
    assert quotas.listener_max["PLAINTEXT"] == 7
    asyncio.run(alter.alter(b, True, {key: None}, validate_only=False))
    assert quotas.listener_max["PLAINTEXT"] == UNLIMITED and key not in b.config.listener_overrides
