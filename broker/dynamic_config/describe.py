"""DescribeConfigs rows for BROKER resources, with Kafka's sources and synonyms.

BROKER "<id>" (``broker_rows``): every key we know: BrokerConfig's fields, the log
defaults it does not model (log.cleaner.min.cleanable.ratio, log.preallocate, ...),
every other key of Kafka 3.9's dynamic list (kafka_keys.py: num.io.threads,
sasl.kerberos.min.time.before.relogin, the replication throttle rates, ...) with
Kafka's type and default, and the listener-prefixed keys (static or dynamic). Per key
(Kafka's ConfigHelper.configSynonyms):

* the synonym group: the broker synonyms of the topic key the key belongs to, from
  the key itself on (so log.retention.ms lists log.retention.ms, .minutes, .hours;
  log.retention.hours only itself), else just the key;
* synonyms in Kafka's order: every group member set in the per-broker entry
  (DYNAMIC_BROKER_CONFIG), in the default entry (DYNAMIC_DEFAULT_BROKER_CONFIG),
  statically (STATIC_BROKER_CONFIG: a value different from the default), then the
  defaults (DEFAULT_CONFIG);
* value: the effective value of the key itself (for a key accepted without effect,
  effects.py, the one its first synonym holds: it is never folded into the config);
  source: the first synonym's;
* a listener key ``listener.name.<l>.<key>`` lists its own values, then its base key's
  (``<key>``; ``sasl.jaas.config`` for ``<mechanism>.sasl.jaas.config``), by source,
  from its own first one on (Kafka's ``dropWhile``);
* ReadOnly false for the keys Kafka 3.9 updates dynamically (kafka_keys.BROKER_DYNAMIC)
  and the listener keys keys.py accepts.

BROKER "" (``default_rows``): the keys the cluster default entry holds, source
DYNAMIC_DEFAULT_BROKER_CONFIG (Kafka lists only those).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from broker import topic_config
from broker.config import BrokerConfig, key_of
from broker.dynamic_config import effects, keys
from broker.dynamic_config import kafka_keys as kafka
from broker.dynamic_config.layers import DynamicLayers
from broker.replication.throttle import FOLLOWER_RATE, LEADER_RATE, UNLIMITED
from broker.topic_config import ConfigEntry, ConfigSource, ConfigType, SynonymValue, to_text

# Kafka's PASSWORD-type keys (and JAAS configs, which hold passwords): described
# with a null value and IsSensitive, never in clear.
SENSITIVE_SUFFIXES = ("ssl.keystore.password", "ssl.key.password", "ssl.truststore.password",
                      "ssl.keystore.key", "ssl.keystore.certificate.chain",
                      "ssl.truststore.certificates", "sasl.jaas.config")
RATE_DOCS = {
    LEADER_RATE: "A long representing the upper bound (bytes/sec) on replication traffic "
                      "for leaders enumerated in the property "
                      "leader.replication.throttled.replicas (for each topic).",
    FOLLOWER_RATE: "A long representing the upper bound (bytes/sec) on replication "
                        "traffic for followers enumerated in the property "
                        "follower.replication.throttled.replicas (for each topic).",
}
_SKIP_FIELDS = ("listener_overrides", "dynamic")
_FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(BrokerConfig))
_SOURCE_ORDER = (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                 ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG)


def sensitive(key: str) -> bool:
    return key.endswith(SENSITIVE_SUFFIXES)


def type_of(f: dataclasses.Field[Any]) -> ConfigType:
    t = str(f.type)
    if t.startswith("bool"):
        return ConfigType.BOOLEAN
    if t.startswith("int"):
        return ConfigType.LONG if f.name.endswith(("_ms", "_bytes")) else ConfigType.INT
    if t.startswith("float"):
        return ConfigType.DOUBLE
    return ConfigType.STRING


def _group(key: str) -> tuple[list[str], topic_config.TopicKey | None]:
    for tk in topic_config.TOPIC_KEYS.values():
        names = [s.key for s in tk.synonyms]
        if key in names:
            return names[names.index(key):], tk
    return [key], None


def _static_and_default(static: BrokerConfig, name: str,
                        tk: topic_config.TopicKey | None) -> list[SynonymValue]:
    """The static (when it differs from the default) and default values of ``name``."""
    fields = {f.name: f for f in dataclasses.fields(BrokerConfig)}
    f = fields.get(name.replace(".", "_"))
    out: list[SynonymValue] = []
    if f is not None and f.name not in _SKIP_FIELDS:
        value, default = getattr(static, f.name), f.default
        if value is not None and value != default:
            out.append(SynonymValue(name, to_text(value), ConfigSource.STATIC_BROKER_CONFIG))
        if default is not None and default is not dataclasses.MISSING:
            out.append(SynonymValue(name, to_text(default), ConfigSource.DEFAULT_CONFIG))
        return out
    if name in keys.THROTTLE_RATES:
        return [SynonymValue(name, str(UNLIMITED), ConfigSource.DEFAULT_CONFIG)]
    if tk is not None:
        syn = next((s for s in tk.synonyms if s.key == name), None)
        if syn is not None and syn.default is not None:
            return [SynonymValue(name, syn.default, ConfigSource.DEFAULT_CONFIG)]
    kafka_key = kafka.KEYS.get(name)
    if kafka_key is not None and kafka_key.default is not None:
        return [SynonymValue(name, kafka_key.default, ConfigSource.DEFAULT_CONFIG)]
    return out


def synonyms_of(layers: DynamicLayers, key: str) -> list[SynonymValue]:
    names, tk = _group(key)
    out: list[SynonymValue] = []
    for entry, source in ((layers.per_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
                          (layers.cluster_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)):
        out += [SynonymValue(n, entry[n], source) for n in names if n in entry]
    found = [v for n in names for v in _static_and_default(layers.static, n, tk)]
    return out + sorted(found, key=lambda v: v.source == ConfigSource.DEFAULT_CONFIG)


def _row(layers: DynamicLayers, config: BrokerConfig, key: str, type_: ConfigType,
         doc: str, accepted: frozenset[str]) -> ConfigEntry:
    synonyms = synonyms_of(layers, key)
    own = [s for s in synonyms if s.name == key]
    attr = key.replace(".", "_")
    if attr in _FIELD_NAMES and key not in effects.WITHOUT_EFFECT:
        value = getattr(config, attr)
        text = None if value is None else to_text(value)
    else:
        text = own[0].value if own else None
    source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
    hidden = sensitive(key)
    if hidden:
        text = None
        synonyms = [dataclasses.replace(s, value=None) for s in synonyms]
    return ConfigEntry(key, text, source, ConfigType.PASSWORD if hidden else type_,
                       tuple(synonyms), doc, read_only=key not in accepted, sensitive=hidden)


def broker_rows(config: BrokerConfig, layers: DynamicLayers) -> list[ConfigEntry]:
    """Every key of this broker (see the module docstring), sorted by name; then the
    listener-prefixed keys."""
    accepted = keys.accepted_keys() | kafka.BROKER_DYNAMIC      # Kafka's ReadOnly flags
    rows: dict[str, ConfigEntry] = {}
    for f in dataclasses.fields(BrokerConfig):
        if f.name in _SKIP_FIELDS:
            continue
        key = key_of(f.name)
        rows[key] = _row(layers, config, key, _type_for(key), effects.doc(key), accepted)
    for key, tk in keys.log_default_keys().items():
        if key not in rows:
            rows[key] = _row(layers, config, key, _type_for(key), tk.doc, accepted)
    for key in kafka.BROKER_DYNAMIC - kafka.DYNAMIC_SECURITY:
        if key not in rows:
            rows[key] = _row(layers, config, key, _type_for(key),
                             RATE_DOCS.get(key) or effects.doc(key), accepted)
    return [rows[k] for k in sorted(rows)] + listener_rows(config, layers)


def listener_rows(config: BrokerConfig, layers: DynamicLayers) -> list[ConfigEntry]:
    """The listener-prefixed keys set anywhere: statically, in either dynamic entry, or
    applied by reconfigure (``config.listener_overrides``)."""
    names = set(layers.static.listener_overrides) | set(config.listener_overrides)
    names |= {k for k in (*layers.per_broker, *layers.cluster_default) if keys.is_listener_key(k)}
    out = []
    for key in sorted(names):
        base = keys.listener_base(key)
        synonyms = listener_synonyms(layers, key, base)
        own = [s for s in synonyms if s.name == key]
        source = own[0].source if own else ConfigSource.STATIC_BROKER_CONFIG
        value = own[0].value if own else config.listener_overrides.get(key)
        hidden = sensitive(key)
        if hidden:
            value = None
            synonyms = [dataclasses.replace(s, value=None) for s in synonyms]
        out.append(ConfigEntry(key, value, source,
                               ConfigType.PASSWORD if hidden else _type_for(base or ""),
                               tuple(synonyms), "", read_only=base is None, sensitive=hidden))
    return out


def listener_synonyms(layers: DynamicLayers, key: str, base: str | None) -> list[SynonymValue]:
    """Kafka's synonyms of a listener key: its own values and its base key's, ordered
    by source (the listener key first within one), from its own first value on."""
    own = [SynonymValue(key, entry[key], source) for entry, source in (
        (layers.per_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (layers.cluster_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (layers.static.listener_overrides, ConfigSource.STATIC_BROKER_CONFIG)) if key in entry]
    of_base = [s for s in synonyms_of(layers, base) if s.name == base] if base else []
    merged = sorted(own + of_base, key=lambda s: _SOURCE_ORDER.index(s.source))
    first = next((i for i, s in enumerate(merged) if s.name == key), len(merged))
    return merged[first:]


def default_rows(layers: DynamicLayers) -> list[ConfigEntry]:
    """The cluster default entry's keys (BROKER "")."""
    out = []
    for key, value in sorted(layers.cluster_default.items()):
        source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        synonyms = [s for s in synonyms_of(layers, key)
                    if s.source != ConfigSource.DYNAMIC_BROKER_CONFIG]
        out.append(ConfigEntry(key, value, source, _type_for(keys.listener_base(key) or key),
                               tuple(synonyms), effects.doc(key), read_only=False))
    return out


def _type_for(key: str) -> ConfigType:
    """A key's ConfigType: Kafka's for its dynamic keys, else guessed from BrokerConfig's
    field, else the topic key's for a log default; STRING when we do not know it."""
    kafka_key = kafka.KEYS.get(key)
    if kafka_key is not None:
        return kafka_key.type
    f = {key_of(f.name): f for f in dataclasses.fields(BrokerConfig)}.get(key)
    if f is not None:
        return type_of(f)
    tk = keys.log_default_keys().get(key)
    return tk.type if tk is not None else ConfigType.STRING
