"""Kafka 3.9's dynamically updatable broker configs, as data (ZooKeeper mode), and
Kafka's checks of a value by the key's type.

Written from Apache Kafka 3.9.0 (tag 3.9.0-rc3, the release):

* core/src/main/scala/kafka/server/DynamicBrokerConfig.scala: ``AllDynamicConfigs`` =
  DynamicSecurityConfigs ++ LogCleaner.ReconfigurableConfigs ++
  DynamicLogConfig.ReconfigurableConfigs ++ DynamicThreadPool.ReconfigurableConfigs ++
  metric.reporters ++ DynamicListenerConfig.ReconfigurableConfigs ++
  SocketServer.ReconfigurableConfigs ++ DynamicProducerStateManagerConfig ++
  DynamicRemoteLogConfig.ReconfigurableConfigs; ``ClusterLevelListenerConfigs``,
  ``PerBrokerConfigs``, ``ListenerMechanismConfigs``, ``DynamicPasswordConfigs``;
* core/src/main/scala/kafka/server/DynamicConfig.scala: ``DynamicConfig.Broker`` (what
  AlterConfigs on a BROKER resource validates against) = QuotaConfigs.brokerQuotaConfigs()
  plus AllDynamicConfigs;
* clients/.../config/SslConfigs.java (RECONFIGURABLE_CONFIGS = DynamicSecurityConfigs),
  core/.../log/LogCleaner.scala and core/.../network/SocketServer.scala
  (ReconfigurableConfigs), server-common/.../config/ServerTopicConfigSynonyms.java
  (DynamicLogConfig = the first broker synonym of every topic key but
  message.format.version);
* types, defaults and validators: the ConfigDefs AbstractKafkaConfig.CONFIG_DEF merges
  (BrokerSecurityConfigs, ServerConfigs, SocketServerConfigs, ReplicationConfigs,
  LogConfig.SERVER_CONFIG_DEF, CleanerConfig, RemoteLogManagerConfig,
  TransactionLogConfigs, MetricConfigs) and QuotaConfigs.

Defaults are written as DescribeConfigs shows them (a LIST joined with ","; None: null).
Kafka's JVM-dependent defaults are those of a current JDK (TLSv1.3, SunX509, PKIX).

``problem`` is Kafka's ConfigDef.parseType plus the key's validator: the error text
("Not a number of type INT", "Value must be at least 1", ...) or None. The log
defaults (DynamicLogConfig) carry their type only: their ranges are the topic keys'
(broker/topic_config.py), which pybroker checks for them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker.topic_config import ConfigType

T = ConfigType
INT_MAX = (1 << 31) - 1
LONG_MAX = (1 << 63) - 1
SHORT_MAX = (1 << 15) - 1
DOUBLE_MAX = "1.7976931348623157E308"       # Java's Double.MAX_VALUE as Kafka prints it
_BOUNDS = {T.SHORT: SHORT_MAX, T.INT: INT_MAX, T.LONG: LONG_MAX}

Check = Callable[[Any], str | None]         # the typed value -> Kafka's error text, or None


@dataclass(frozen=True)
class KafkaKey:
    """One dynamic broker key as Kafka's ConfigDef defines it."""
    name: str
    type: ConfigType
    default: str | None
    check: Check | None = None


# ---- Kafka's validators (ConfigDef.Range.atLeast, ValidString.in): the error text or None

def at_least(n: float) -> Check:
    return lambda v: None if v >= n else f"Value must be at least {n}"


def one_of(*choices: str) -> Check:
    return lambda v: None if v in choices else f"String must be one of: {', '.join(choices)}"


# ---- the sets, as DynamicBrokerConfig.scala names them ---------------------------------

# SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only with a listener prefix
DYNAMIC_SECURITY = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"})
LOG_CLEANER = frozenset({
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor", "log.cleaner.io.buffer.size", "message.max.bytes",
    "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms"})
DYNAMIC_LOG = frozenset({
    "log.segment.bytes", "log.roll.ms", "log.roll.jitter.ms", "log.index.size.max.bytes",
    "log.flush.interval.messages", "log.flush.interval.ms", "log.retention.bytes",
    "log.retention.ms", "message.max.bytes", "log.index.interval.bytes",
    "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms", "log.segment.delete.delay.ms",
    "log.cleaner.min.cleanable.ratio", "log.cleanup.policy", "unclean.leader.election.enable",
    "min.insync.replicas", "compression.type", "compression.gzip.level",
    "compression.lz4.level", "compression.zstd.level", "log.preallocate",
    "log.message.timestamp.type", "log.message.timestamp.difference.max.ms",
    "log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms",
    "log.message.downconversion.enable", "log.local.retention.ms", "log.local.retention.bytes"})
THREAD_POOL = frozenset({"num.io.threads", "num.replica.fetchers",
                         "num.recovery.threads.per.data.dir", "background.threads"})
METRIC_REPORTERS = frozenset({"metric.reporters"})
LISTENER_DEFINITION = frozenset({"listeners", "advertised.listeners",
                                 "listener.security.protocol.map"})
DYNAMIC_LISTENER = LISTENER_DEFINITION | frozenset({
    # SSL
    "principal.builder.class", "ssl.protocol", "ssl.provider", "ssl.cipher.suites",
    "ssl.enabled.protocols", "ssl.keystore.type", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation", "ssl.client.auth", "ssl.engine.factory.class",
    # SASL
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal.to.local.rules",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
    # connection limits, network threads
    "max.connections", "max.connection.creation.rate", "num.network.threads"})
SOCKET_SERVER = frozenset({"max.connections.per.ip", "max.connections.per.ip.overrides",
                           "max.connections", "max.connection.creation.rate"})
PRODUCER_STATE = frozenset({"producer.id.expiration.ms",
                            "transaction.partition.verification.enable"})
REMOTE_LOG = frozenset({
    "remote.log.index.file.cache.total.size.bytes", "remote.fetch.max.wait.ms",
    "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.fetch.max.bytes.per.second"})

ALL_DYNAMIC = (DYNAMIC_SECURITY | LOG_CLEANER | DYNAMIC_LOG | THREAD_POOL | METRIC_REPORTERS
               | DYNAMIC_LISTENER | SOCKET_SERVER | PRODUCER_STATE | REMOTE_LOG)
# QuotaConfigs.brokerQuotaConfigs(): in DynamicConfig.Broker beside AllDynamicConfigs
BROKER_QUOTAS = frozenset({"leader.replication.throttled.rate",
                           "follower.replication.throttled.rate",
                           "replica.alter.log.dirs.io.max.bytes.per.second"})
# every key AlterConfigs on a BROKER resource takes (DynamicConfig.Broker.names)
BROKER_DYNAMIC = ALL_DYNAMIC | BROKER_QUOTAS

# allowed on the cluster default, also with a listener prefix
CLUSTER_LEVEL_LISTENER = frozenset({"max.connections", "max.connection.creation.rate",
                                    "num.network.threads"})
# only per broker (refused on <default>): so are the listener-prefixed keys whose base
# is not CLUSTER_LEVEL_LISTENER
PER_BROKER = (DYNAMIC_SECURITY | DYNAMIC_LISTENER) - CLUSTER_LEVEL_LISTENER
# given per listener and SASL mechanism: listener.name.<l>.<mechanism>.<key>
LISTENER_MECHANISM = frozenset({"sasl.jaas.config", "sasl.login.callback.handler.class",
                                "sasl.login.class", "sasl.server.callback.handler.class",
                                "connections.max.reauth.ms"})


def _k(name: str, type_: ConfigType, default: Any, check: Check | None = None) -> KafkaKey:
    text = None if default is None else (
        ("true" if default else "false") if isinstance(default, bool) else str(default))
    return KafkaKey(name, type_, text, check)


_PRINCIPAL_BUILDER = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"

KEYS: dict[str, KafkaKey] = {k.name: k for k in [
    # DynamicSecurityConfigs (BrokerSecurityConfigs.CONFIG_DEF)
    _k("ssl.keystore.type", T.STRING, "JKS"),
    _k("ssl.keystore.location", T.STRING, None),
    _k("ssl.keystore.password", T.PASSWORD, None),
    _k("ssl.key.password", T.PASSWORD, None),
    _k("ssl.truststore.type", T.STRING, "JKS"),
    _k("ssl.truststore.location", T.STRING, None),
    _k("ssl.truststore.password", T.PASSWORD, None),
    _k("ssl.keystore.certificate.chain", T.PASSWORD, None),
    _k("ssl.keystore.key", T.PASSWORD, None),
    _k("ssl.truststore.certificates", T.PASSWORD, None),
    # LogCleaner (CleanerConfig.CONFIG_DEF; message.max.bytes: ServerConfigs)
    _k("log.cleaner.threads", T.INT, 1, at_least(0)),
    _k("log.cleaner.dedupe.buffer.size", T.LONG, 128 * 1024 * 1024),
    _k("log.cleaner.io.buffer.load.factor", T.DOUBLE, 0.9),
    _k("log.cleaner.io.buffer.size", T.INT, 512 * 1024, at_least(0)),
    _k("message.max.bytes", T.INT, 1_048_588, at_least(0)),
    _k("log.cleaner.io.max.bytes.per.second", T.DOUBLE, DOUBLE_MAX),
    _k("log.cleaner.backoff.ms", T.LONG, 15_000, at_least(0)),
    # DynamicLogConfig (LogConfig.SERVER_CONFIG_DEF, ServerConfigs, ReplicationConfigs,
    # CleanerConfig, RemoteLogManagerConfig); ranges: the topic keys' (module docstring)
    _k("log.segment.bytes", T.INT, 1 << 30),
    _k("log.roll.ms", T.LONG, None),
    _k("log.roll.jitter.ms", T.LONG, None),
    _k("log.index.size.max.bytes", T.INT, 10 * 1024 * 1024),
    _k("log.flush.interval.messages", T.LONG, LONG_MAX),
    _k("log.flush.interval.ms", T.LONG, None),
    _k("log.retention.bytes", T.LONG, -1),
    _k("log.retention.ms", T.LONG, None),
    _k("log.index.interval.bytes", T.INT, 4096),
    _k("log.cleaner.delete.retention.ms", T.LONG, 86_400_000),
    _k("log.cleaner.min.compaction.lag.ms", T.LONG, 0),
    _k("log.cleaner.max.compaction.lag.ms", T.LONG, LONG_MAX),
    _k("log.segment.delete.delay.ms", T.LONG, 60_000),
    _k("log.cleaner.min.cleanable.ratio", T.DOUBLE, 0.5),
    _k("log.cleanup.policy", T.LIST, "delete"),
    _k("unclean.leader.election.enable", T.BOOLEAN, False),
    _k("min.insync.replicas", T.INT, 1),
    _k("compression.type", T.STRING, "producer"),
    _k("compression.gzip.level", T.INT, -1),
    _k("compression.lz4.level", T.INT, 9),
    _k("compression.zstd.level", T.INT, 3),
    _k("log.preallocate", T.BOOLEAN, False),
    _k("log.message.timestamp.type", T.STRING, "CreateTime"),
    _k("log.message.timestamp.difference.max.ms", T.LONG, LONG_MAX),
    _k("log.message.timestamp.before.max.ms", T.LONG, LONG_MAX),
    _k("log.message.timestamp.after.max.ms", T.LONG, LONG_MAX),
    _k("log.message.downconversion.enable", T.BOOLEAN, True),
    _k("log.local.retention.ms", T.LONG, -2),
    _k("log.local.retention.bytes", T.LONG, -2),
    # DynamicThreadPool (ServerConfigs, ReplicationConfigs, LogConfig.SERVER_CONFIG_DEF).
    # num.replica.fetchers has no validator in its ConfigDef; DynamicThreadPool refuses
    # a count below 1 when it reconfigures, so it is checked here too.
    _k("num.io.threads", T.INT, 8, at_least(1)),
    _k("num.replica.fetchers", T.INT, 1, at_least(1)),
    _k("num.recovery.threads.per.data.dir", T.INT, 1, at_least(1)),
    _k("background.threads", T.INT, 10, at_least(1)),
    # MetricConfigs
    _k("metric.reporters", T.LIST, ""),
    # DynamicListenerConfig (SocketServerConfigs, BrokerSecurityConfigs.CONFIG_DEF: the
    # SASL login refresh keys have no ranges in the broker's ConfigDef)
    _k("listeners", T.STRING, "PLAINTEXT://:9092"),
    _k("advertised.listeners", T.STRING, None),
    _k("listener.security.protocol.map", T.STRING, _PROTOCOL_MAP),
    _k("principal.builder.class", T.CLASS, _PRINCIPAL_BUILDER),
    _k("ssl.protocol", T.STRING, "TLSv1.3"),
    _k("ssl.provider", T.STRING, None),
    _k("ssl.cipher.suites", T.LIST, ""),
    _k("ssl.enabled.protocols", T.LIST, "TLSv1.2,TLSv1.3"),
    _k("ssl.keymanager.algorithm", T.STRING, "SunX509"),
    _k("ssl.trustmanager.algorithm", T.STRING, "PKIX"),
    _k("ssl.endpoint.identification.algorithm", T.STRING, "https"),
    _k("ssl.secure.random.implementation", T.STRING, None),
    _k("ssl.client.auth", T.STRING, "none", one_of("required", "requested", "none")),
    _k("ssl.engine.factory.class", T.CLASS, None),
    _k("sasl.mechanism.inter.broker.protocol", T.STRING, "GSSAPI"),
    _k("sasl.jaas.config", T.PASSWORD, None),
    _k("sasl.enabled.mechanisms", T.LIST, "GSSAPI"),
    _k("sasl.kerberos.service.name", T.STRING, None),
    _k("sasl.kerberos.kinit.cmd", T.STRING, "/usr/bin/kinit"),
    _k("sasl.kerberos.ticket.renew.window.factor", T.DOUBLE, 0.8),
    _k("sasl.kerberos.ticket.renew.jitter", T.DOUBLE, 0.05),
    _k("sasl.kerberos.min.time.before.relogin", T.LONG, 60_000),
    _k("sasl.kerberos.principal.to.local.rules", T.LIST, "DEFAULT"),
    _k("sasl.login.refresh.window.factor", T.DOUBLE, 0.8),
    _k("sasl.login.refresh.window.jitter", T.DOUBLE, 0.05),
    _k("sasl.login.refresh.min.period.seconds", T.SHORT, 60),
    _k("sasl.login.refresh.buffer.seconds", T.SHORT, 300),
    _k("max.connections", T.INT, INT_MAX, at_least(0)),
    _k("max.connection.creation.rate", T.INT, INT_MAX, at_least(0)),
    _k("num.network.threads", T.INT, 3, at_least(1)),
    # SocketServer (SocketServerConfigs)
    _k("max.connections.per.ip", T.INT, INT_MAX, at_least(0)),
    _k("max.connections.per.ip.overrides", T.STRING, ""),
    # DynamicProducerStateManagerConfig (TransactionLogConfigs)
    _k("producer.id.expiration.ms", T.INT, 86_400_000, at_least(1)),
    _k("transaction.partition.verification.enable", T.BOOLEAN, True),
    # DynamicRemoteLogConfig (RemoteLogManagerConfig)
    _k("remote.log.index.file.cache.total.size.bytes", T.LONG, 1 << 30, at_least(1)),
    _k("remote.fetch.max.wait.ms", T.INT, 500, at_least(1)),
    _k("remote.log.manager.copy.max.bytes.per.second", T.LONG, LONG_MAX, at_least(1)),
    _k("remote.log.manager.fetch.max.bytes.per.second", T.LONG, LONG_MAX, at_least(1)),
    # QuotaConfigs.brokerQuotaConfigs
    _k("leader.replication.throttled.rate", T.LONG, LONG_MAX, at_least(0)),
    _k("follower.replication.throttled.rate", T.LONG, LONG_MAX, at_least(0)),
    _k("replica.alter.log.dirs.io.max.bytes.per.second", T.LONG, LONG_MAX, at_least(0)),
]}

# DynamicPasswordConfigs: the PASSWORD-typed dynamic keys; Kafka matches them as
# suffixes, so listener.name.<l>.<mechanism>.sasl.jaas.config is one too
PASSWORDS = frozenset(k.name for k in KEYS.values() if k.type == T.PASSWORD)


def is_password(key: str) -> bool:
    return any(key.endswith(p) for p in PASSWORDS)


# ---- ConfigDef.parseType -----------------------------------------------------------------

_INTEGER = re.compile(r"[+-]?[0-9]+")
# Double.parseDouble's decimal forms (with its optional f/d suffix), NaN and Infinity
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_LIST_SPLIT = re.compile(r"\s*,\s*")
_JAVA_CLASS = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*")


def parse(key: KafkaKey, raw: str) -> Any:
    """The value as Kafka types it; ValueError carrying Kafka's text when it does not
    parse. CLASS: a Java class name (there is no class path here to load it from)."""
    text = raw.strip()
    if key.type in _BOUNDS:
        bound = _BOUNDS[key.type]
        if not _INTEGER.fullmatch(text) or not -bound - 1 <= int(text) <= bound:
            raise ValueError(f"Not a number of type {key.type.name}")
        return int(text)
    if key.type == T.DOUBLE:
        if not _DOUBLE.fullmatch(text):
            raise ValueError("Not a number of type DOUBLE")
        return float(text.rstrip("fFdD").replace("Infinity", "inf"))
    if key.type == T.BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise ValueError("Expected value to be either true or false")
        return text.lower() == "true"
    if key.type == T.LIST:
        return _LIST_SPLIT.split(text) if text else []
    if key.type == T.CLASS and not _JAVA_CLASS.fullmatch(text):
        raise ValueError(f"Class {raw} could not be found.")
    return text


def problem(name: str, raw: str) -> str | None:
    """Kafka's error text for ``raw`` as the value of the dynamic key ``name`` (its type,
    then its validator), or None when Kafka takes it (and for keys not in KEYS)."""
    key = KEYS.get(name)
    if key is None:
        return None
    try:
        value = parse(key, raw)
    except ValueError as e:
        return str(e)
    return key.check(value) if key.check is not None else None
