"""Which broker keys may be set dynamically, at which level, and checking their values
(Kafka 3.9, ZooKeeper mode: DynamicBrokerConfig.AllDynamicConfigs).

Three groups of keys are accepted (``check``):

* APPLIED live here (broker/dynamic_config/live.py): the log defaults (the first
  broker synonym of every topic key but message.format.version: log.retention.ms,
  log.segment.bytes, log.roll.ms, log.cleanup.policy, compression.type,
  message.max.bytes, min.insync.replicas, unclean.leader.election.enable, ...), the
  log cleaner's (log.cleaner.dedupe.buffer.size, log.cleaner.io.buffer.load.factor,
  log.cleaner.backoff.ms), the connection limits (max.connections,
  max.connections.per.ip, max.connections.per.ip.overrides,
  max.connection.creation.rate), producer.id.expiration.ms, the replication throttle
  rates (per broker), a TLS listener's keystore/truststore (per broker,
  broker/security/reconfigure.py) and the listener keys (per broker: listeners,
  advertised.listeners, listener.security.protocol.map; checked and applied by
  broker/dynamic_config/listeners.py: listeners added and removed live).
* STORED ONLY (``STORED_ONLY``): keys Kafka reconfigures that have nothing to act on
  here: thread pool sizes (num.io.threads, num.network.threads,
  num.replica.fetchers, num.recovery.threads.per.data.dir, background.threads,
  log.cleaner.threads: pybroker has one event loop and worker threads on demand),
  log.cleaner.io.max.bytes.per.second and log.cleaner.io.buffer.size (the cleaner
  neither throttles nor sizes buffers by them), metric.reporters and the remote log
  (tiered storage) keys. They are checked as Kafka types them, stored, described with
  their sources, and otherwise ignored (documented in config/server.properties).
* refused (INVALID_REQUEST): every other key, with Kafka's "Cannot update these configs
  dynamically" for the keys Kafka refuses too, and a message of ours for the ones
  Kafka would take but pybroker cannot change on a running broker (they still describe
  ReadOnly false, as Kafka's): the SASL keys, listener-prefixed keys other than the
  TLS stores; ssl.* keystore/truststore keys without a listener prefix get Kafka's
  "only per-listener" message.

Levels: the per-broker-only keys (Kafka's PerBrokerConfigs: the listener-prefixed
keys and listeners.LISTENER_KEYS) are refused on the cluster default ("" /
``<default>``) with Kafka's message "Cannot update these configs at default cluster
level, broker id must be specified"; the
throttle rates may be stored there but set no broker's quota (Kafka 3.9 ZooKeeper mode).

A bad value is INVALID_CONFIG naming the key and the value (ReconfigureError with
``invalid_config``), checked before anything changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from broker import topic_config
from broker.config import _FIELDS, ConfigError, _parse_value
from broker.dynamic_config import listeners as listener_keys
from broker.replication.throttle import FOLLOWER_RATE, LEADER_RATE, UNLIMITED
from broker.security import reconfigure
from broker.security.reconfigure import ReconfigureError
from broker.topic_config import ConfigType

if TYPE_CHECKING:
    from broker.dynamic_config.host import DynamicConfigHost

THROTTLE_RATES = frozenset({LEADER_RATE, FOLLOWER_RATE})
DEFAULT_ENTITY = "<default>"
LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
DOUBLE_MAX = "1.7976931348623157E308"


@dataclasses.dataclass(frozen=True)
class ExtraKey:
    """A dynamic key BrokerConfig does not model: its type, Kafka's default, the check."""
    name: str
    type: ConfigType
    default: str
    check: Callable[[Any], bool] = lambda _v: True
    doc: str = ""


def _at_least(n: float) -> Callable[[Any], bool]:
    return lambda v: v >= n


# Kafka 3.9's defaults; none of these acts on anything here (module docstring)
STORED_ONLY: dict[str, ExtraKey] = {k.name: k for k in [
    ExtraKey("num.io.threads", ConfigType.INT, "8", _at_least(1),
             "Request handler threads (stored only: pybroker serves requests on one event loop)."),
    ExtraKey("num.network.threads", ConfigType.INT, "3", _at_least(1),
             "Network threads (stored only: asyncio serves every connection)."),
    ExtraKey("num.replica.fetchers", ConfigType.INT, "1", _at_least(1),
             "Fetcher threads per source broker (stored only)."),
    ExtraKey("num.recovery.threads.per.data.dir", ConfigType.INT, "1", _at_least(1),
             "Log recovery threads per data dir (stored only)."),
    ExtraKey("background.threads", ConfigType.INT, "10", _at_least(1),
             "Background threads (stored only)."),
    ExtraKey("log.cleaner.threads", ConfigType.INT, "1", _at_least(0),
             "Log cleaner threads (stored only: one cleaner task)."),
    ExtraKey("log.cleaner.io.max.bytes.per.second", ConfigType.DOUBLE, DOUBLE_MAX,
             doc="Cleaner I/O throttle (stored only: the cleaner is not throttled)."),
    ExtraKey("log.cleaner.io.buffer.size", ConfigType.INT, "524288", _at_least(0),
             "Cleaner I/O buffer size (stored only)."),
    ExtraKey("metric.reporters", ConfigType.LIST, "",
             doc="Metric reporter classes (stored only: see prometheus.listener)."),
    ExtraKey("remote.log.index.file.cache.total.size.bytes", ConfigType.LONG, "1073741824",
             _at_least(1), "Tiered storage (stored only)."),
    ExtraKey("remote.fetch.max.wait.ms", ConfigType.INT, "500", _at_least(1),
             "Tiered storage (stored only)."),
    ExtraKey("remote.log.manager.copy.max.bytes.per.second", ConfigType.LONG, str(LONG_MAX),
             _at_least(1), "Tiered storage (stored only)."),
    ExtraKey("remote.log.manager.fetch.max.bytes.per.second", ConfigType.LONG, str(LONG_MAX),
             _at_least(1), "Tiered storage (stored only)."),
]}

# Kafka's SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only with a listener prefix
SSL_RECONFIGURABLE = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates"})

# BrokerConfig fields applied live besides the log defaults
_APPLIED_FIELDS = frozenset({
    "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.backoff.ms", "max.connections", "max.connections.per.ip",
    "max.connections.per.ip.overrides", "max.connection.creation.rate",
    "producer.id.expiration.ms", "transaction.partition.verification.enable",
})


def log_default_keys() -> dict[str, topic_config.TopicKey]:
    """DynamicLogConfig's keys: broker key -> the topic key it is the default of."""
    return {k.synonyms[0].key: k for k in topic_config.TOPIC_KEYS.values()
            if k.synonyms and k.name != "message.format.version"}


def applied_keys() -> frozenset[str]:
    """Keys (not listener-prefixed) accepted and applied live."""
    return (frozenset(log_default_keys()) | _APPLIED_FIELDS | THROTTLE_RATES
            | listener_keys.LISTENER_KEYS)


def accepted_keys() -> frozenset[str]:
    """Every key a dynamic entry may hold, but the listener-prefixed TLS keys."""
    return applied_keys() | frozenset(STORED_ONLY)


def is_listener_key(key: str) -> bool:
    return reconfigure.split(key) is not None


def check_level(keys: list[str], per_broker: bool,
                broker: DynamicConfigHost | None = None) -> None:
    """INVALID_REQUEST for keys not dynamic here (or per-broker-only at the default)."""
    accepted = accepted_keys()
    per_broker_only = [k for k in keys if is_listener_key(k) or k in listener_keys.LISTENER_KEYS]
    prefixed = [k for k in keys if is_listener_key(k)]
    others = sorted(k for k in keys if not is_listener_key(k) and k not in accepted)
    unprefixed = [k for k in others if k in SSL_RECONFIGURABLE]
    if unprefixed:
        raise ReconfigureError("These security configs can be dynamically updated only "
                               "per-listener using the listener prefix: " + ", ".join(unprefixed))
    kafkas = [k for k in others if k in topic_config.dynamic_broker_keys()]
    if kafkas:
        raise ReconfigureError("pybroker cannot update these configs dynamically (Kafka can; "
                               "set them in server.properties and restart): "
                               + ", ".join(kafkas))
    if others:
        raise ReconfigureError("Cannot update these configs dynamically: " + ", ".join(others))
    if per_broker_only and not per_broker:
        raise ReconfigureError("Cannot update these configs at default cluster level, "
                               "broker id must be specified: "
                               + ", ".join(sorted(per_broker_only)))
    if prefixed and broker is not None:
        reconfigure.check_keys(broker, prefixed)


def check_value(key: str, value: str) -> None:
    """ReconfigureError(INVALID_CONFIG) naming key and value when ``value`` is bad."""
    def bad(why: str) -> ReconfigureError:
        return ReconfigureError(f"Invalid value {value} for configuration {key}: {why}",
                                invalid_config=True)
    if key in THROTTLE_RATES:
        check_rate(key, value)
        return
    f = _FIELDS.get(key)
    if f is not None:
        try:
            _parse_value(key, value, f)
        except ConfigError as e:
            raise ReconfigureError(str(e), invalid_config=True) from None
    topic_key = log_default_keys().get(key)    # a log default: the topic key's rules too
    if topic_key is not None:
        try:
            topic_config.parse(dataclasses.replace(topic_key, name=key), value)
        except topic_config.InvalidConfig as e:
            raise ReconfigureError(str(e), invalid_config=True) from None
    if f is not None or topic_key is not None:
        return
    extra = STORED_ONLY.get(key)
    if extra is not None:
        parsed = parse_extra(extra, value)
        if parsed is None or not extra.check(parsed):
            raise bad(f"Not a valid {extra.type.name}" if parsed is None
                      else "Value out of range")


def parse_extra(extra: ExtraKey, value: str) -> Any:
    """The typed value, or None when it does not parse."""
    text = value.strip()
    try:
        if extra.type in (ConfigType.INT, ConfigType.LONG):
            number = int(text)
            limit = INT_MAX if extra.type == ConfigType.INT else LONG_MAX
            return number if -limit - 1 <= number <= limit else None
        if extra.type == ConfigType.DOUBLE:
            return float(text)
    except ValueError:
        return None
    return text


def check_rate(key: str, value: str) -> int:
    """A replication throttle rate in bytes/s; ReconfigureError (INVALID_CONFIG)."""
    try:
        rate = int(value.strip())
    except ValueError:
        raise ReconfigureError(f"Invalid value {value} for configuration {key}: Not a number "
                               f"of type LONG", invalid_config=True) from None
    if not 0 <= rate <= UNLIMITED:
        raise ReconfigureError(f"Invalid value {value} for configuration {key}: Value must "
                               f"be at least 0", invalid_config=True)
    return rate


def check(updates: dict[str, str | None], per_broker: bool,
          broker: DynamicConfigHost | None = None) -> None:
    """Keys then values of an update (None deletes: only the key is checked); with
    ``broker``, the listener keys against its listeners too."""
    check_level(list(updates), per_broker, broker)
    for key, value in updates.items():
        if value is not None and not is_listener_key(key):
            check_value(key, value)
    if per_broker and broker is not None:
        listener_keys.check(broker, updates)
