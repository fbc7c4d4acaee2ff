"""Which broker keys may be set dynamically, at which level, and checking their values
(Kafka 3.9, ZooKeeper mode: DynamicConfig.Broker, the data in kafka_keys.py).

Accepted (``check``): every key of Kafka's list (kafka_keys.BROKER_DYNAMIC), but the
DynamicSecurityConfigs (ssl.keystore.location, ...) only with a listener prefix, as
Kafka ("These security configs can be dynamically updated only per-listener using the
listener prefix"); and ``listener.name.<l>.<key>`` for every key Kafka reads per
listener (``PER_LISTENER_KEYS``: the SSL, SASL and connection-limit keys of
DynamicListenerConfig, and ``listener.name.<l>.<mechanism>.sasl.jaas.config``), for
any listener name. Which of them act on anything: effects.py.

Refused (INVALID_REQUEST with Kafka's messages; Kafka's ZooKeeper mode answers these
INVALID_CONFIG): any other key ("Cannot update these configs
dynamically"); at the cluster default ("" / ``<default>``) Kafka's PerBrokerConfigs
(the SSL, SASL and listener keys) and the listener-prefixed keys but
listener.name.<l>.{max.connections, max.connection.creation.rate, num.network.threads}
("Cannot update these configs at default cluster level, broker id must be specified").
The throttle rates may be stored at the default but set no broker's quota (Kafka 3.9
ZooKeeper mode).

A bad value is INVALID_CONFIG naming the key and the value (ReconfigureError with
``invalid_config``), checked before anything changes: Kafka's type and validator
(kafka_keys.problem; a listener-prefixed key as its base key), then pybroker's own
rules for the keys it applies (BrokerConfig's, the topic keys' for the log defaults,
listeners.check). Password keys (``check_passwords``) are refused when stored, with
Kafka's "Password encoder secret not configured": pybroker keeps no
password.encoder.secret to encrypt them in ZooKeeper with.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from broker import topic_config
from broker.config import _FIELDS, ConfigError, _parse_value
from broker.dynamic_config import effects
from broker.dynamic_config import kafka_keys as kafka
from broker.dynamic_config import listeners as listener_keys
from broker.replication.throttle import UNLIMITED
from broker.security import reconfigure
from broker.security.reconfigure import ReconfigureError

if TYPE_CHECKING:
    from broker.dynamic_config.host import DynamicConfigHost

THROTTLE_RATES = effects.THROTTLE_RATES
DEFAULT_ENTITY = "<default>"

# SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only with a listener prefix
SSL_RECONFIGURABLE = kafka.DYNAMIC_SECURITY
# what a listener prefix may name: the keys Kafka reads per listener (not the keys
# that define the listeners themselves)
PER_LISTENER_KEYS = (kafka.DYNAMIC_SECURITY | kafka.DYNAMIC_LISTENER) - kafka.LISTENER_DEFINITION


def log_default_keys() -> dict[str, topic_config.TopicKey]:
    """DynamicLogConfig's keys: broker key -> the topic key it is the default of."""
    return {k.synonyms[0].key: k for k in topic_config.TOPIC_KEYS.values()
            if k.synonyms and k.name != "message.format.version"}


def accepted_keys() -> frozenset[str]:
    """Every key (not listener-prefixed) a dynamic entry may hold."""
    return kafka.BROKER_DYNAMIC - kafka.DYNAMIC_SECURITY


def is_listener_key(key: str) -> bool:
    return reconfigure.split(key) is not None


def listener_base(key: str) -> str | None:
    """The key a listener-prefixed key sets for its listener, as Kafka looks it up:
    ``listener.name.<l>.<key>`` -> key, ``listener.name.<l>.<mechanism>.sasl.jaas.config``
    -> sasl.jaas.config; None for keys without the prefix or with one we do not take."""
    parts = reconfigure.split(key)
    if parts is None:
        return None
    sub = parts[1]
    if sub in PER_LISTENER_KEYS:
        return sub
    mechanism, dot, rest = sub.partition(".")
    if dot and mechanism and rest in kafka.LISTENER_MECHANISM & kafka.BROKER_DYNAMIC:
        return rest
    return None


def applies_tls(broker: DynamicConfigHost, key: str) -> bool:
    """A listener key reconfigure applies: a keystore/truststore key of a TLS listener
    this broker runs. Other listener keys are stored without effect."""
    parts = reconfigure.split(key)
    if parts is None or parts[1] not in reconfigure.RECONFIGURABLE:
        return False
    sec = broker.listener_security.get(parts[0])
    return sec is not None and sec.uses_tls


def tls_updates(broker: DynamicConfigHost,
                updates: dict[str, str | None]) -> dict[str, str | None]:
    """The part of ``updates`` reconfigure.apply swaps TLS contexts for."""
    return {k: v for k, v in updates.items() if applies_tls(broker, k)}


def per_broker_only(key: str) -> bool:
    """Kafka's PerBrokerConfigs, and listener keys but the cluster-level ones."""
    base = listener_base(key)
    if base is not None:
        return base not in kafka.CLUSTER_LEVEL_LISTENER
    return key in kafka.PER_BROKER


def check_level(keys: list[str], per_broker: bool) -> None:
    """INVALID_REQUEST for keys not dynamic (or per-broker-only at the default)."""
    unprefixed = sorted(k for k in keys if k in SSL_RECONFIGURABLE)
    if unprefixed:
        raise ReconfigureError("These security configs can be dynamically updated only "
                               "per-listener using the listener prefix: " + ", ".join(unprefixed))
    accepted = accepted_keys()
    others = sorted(k for k in keys if k not in accepted and listener_base(k) is None)
    if others:
        raise ReconfigureError("Cannot update these configs dynamically: " + ", ".join(others))
    only = sorted(k for k in keys if per_broker_only(k))
    if only and not per_broker:
        raise ReconfigureError("Cannot update these configs at default cluster level, "
                               "broker id must be specified: " + ", ".join(only))


def check_value(key: str, value: str) -> None:
    """ReconfigureError(INVALID_CONFIG) naming key and value when ``value`` is bad."""
    base = listener_base(key) or key
    why = kafka.problem(base, value)
    if why is not None:
        raise ReconfigureError(f"Invalid value {value} for configuration {key}: {why}",
                               invalid_config=True)
    if base != key or key not in effects.APPLIED:
        return      # without effect (or per listener: for_listener parses it when read)
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


def check_passwords(updates: dict[str, str | None]) -> None:
    """Kafka's ZooKeeper mode stores a password key encrypted with
    password.encoder.secret and refuses it without one (DynamicBrokerConfig.
    toPersistentProps); pybroker has none, so it refuses to store them (INVALID_CONFIG).
    ValidateOnly does not get here, as in Kafka."""
    passwords = sorted(k for k, v in updates.items() if v is not None and kafka.is_password(k))
    if passwords:
        raise ReconfigureError("Password encoder secret not configured (pybroker keeps no "
                               "password.encoder.secret; set passwords in server.properties): "
                               + ", ".join(passwords), invalid_config=True)


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
    check_level(list(updates), per_broker)
    for key, value in updates.items():
        if value is not None:
            check_value(key, value)
    if per_broker and broker is not None:
        listener_keys.check(broker, updates)
