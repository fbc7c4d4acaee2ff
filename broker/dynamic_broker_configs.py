"""Dynamic broker configs: which keys ``/config/brokers/<id>`` and
``/config/brokers/<default>`` may hold here, checking and applying them.

Keys (Kafka 3.9, ZooKeeper mode):

* a TLS listener's keystore and truststore (``listener.name.<l>.ssl.*``):
  certificate rotation, broker/security/reconfigure.py; on a broker id only.
* ``leader.replication.throttled.rate`` / ``follower.replication.throttled.rate``
  (DynamicConfig.Broker, KIP-73): bytes per second, a long >= 0, default
  Long.MAX_VALUE (no throttle). On a broker id they set that broker's
  replication quotas (broker/replication/throttle.py) at once, and again at
  start-up from ZooKeeper; deleting one restores the default. On the cluster
  default (resource name "", stored as ``<default>``) they are accepted and
  stored, and, as in Kafka 3.9's ZooKeeper mode (BrokerConfigHandler; KAFKA-10190),
  they do not set any broker's quotas: only a broker's own entry does.

A bad value is INVALID_CONFIG naming the key and the value, checked before
anything changes; any other key stays read-only (INVALID_REQUEST, from
reconfigure.check_keys). Storage and change notifications: reconfigure.store.
"""

from __future__ import annotations

from typing import Any

from broker.replication.throttle import (FOLLOWER, FOLLOWER_RATE, LEADER, LEADER_RATE,
                                         UNLIMITED, ReplicationQuota)
from broker.security import reconfigure
from broker.security.reconfigure import ReconfigureError
from broker.topic_config import ConfigEntry, ConfigSource, ConfigType, SynonymValue

THROTTLE_RATES = frozenset({LEADER_RATE, FOLLOWER_RATE})
DEFAULT_ENTITY = "<default>"
RATE_DOCS = {
    LEADER_RATE: "A long representing the upper bound (bytes/sec) on replication traffic "
                 "for leaders enumerated in the property leader.replication.throttled.replicas "
                 "(for each topic).",
    FOLLOWER_RATE: "A long representing the upper bound (bytes/sec) on replication traffic "
                   "for followers enumerated in the property "
                   "follower.replication.throttled.replicas (for each topic).",
}


def check_rate(key: str, value: str) -> int:
    """The rate in bytes/s; ReconfigureError (INVALID_CONFIG) naming key and value."""
    try:
        rate = int(value.strip())
    except ValueError:
        raise ReconfigureError(f"Invalid value {value} for configuration {key}: Not a number "
                               f"of type LONG", invalid_config=True) from None
    if not 0 <= rate <= UNLIMITED:
        raise ReconfigureError(f"Invalid value {value} for configuration {key}: Value must "
                               f"be at least 0", invalid_config=True)
    return rate


def _check_rates(updates: dict[str, str | None]) -> None:
    for key, value in updates.items():
        if key in THROTTLE_RATES and value is not None:
            check_rate(key, value)


def apply(broker: Any, updates: dict[str, str | None], validate_only: bool) -> None:
    """Check ``updates`` to this broker's entry (None deletes a key), then unless
    ``validate_only`` apply them: TLS keys through reconfigure.apply, rates to the
    replication quotas. Nothing changes when any key or value is refused."""
    _check_rates(updates)
    tls = {k: v for k, v in updates.items() if k not in THROTTLE_RATES}
    if tls:
        reconfigure.apply(broker, tls, validate_only)   # checks everything before it swaps
    if validate_only:
        return
    dynamic = dict(broker.dynamic_configs)
    for key, value in updates.items():
        if value is None:
            dynamic.pop(key, None)
        else:
            dynamic[key] = value
    apply_rates(broker, dynamic)


def check_default(updates: dict[str, str | None]) -> None:
    """The cluster-wide default entry takes only the throttle rates here (TLS stores
    are per broker, as in Kafka)."""
    per_broker = sorted(k for k in updates if k not in THROTTLE_RATES)
    if per_broker:
        raise ReconfigureError("Cannot update these configs at default cluster level, broker "
                               "id must be specified: " + ", ".join(per_broker))
    _check_rates(updates)


def apply_rates(broker: Any, dynamic: dict[str, str]) -> None:
    """Set the broker's replication quotas (if it has them yet) from its dynamic entry."""
    quotas: dict[str, ReplicationQuota] | None = getattr(broker, "replication_quotas", None)
    if not quotas:
        return
    quotas[LEADER].update_quota(_rate(dynamic, LEADER_RATE))
    quotas[FOLLOWER].update_quota(_rate(dynamic, FOLLOWER_RATE))


def _rate(dynamic: dict[str, str], key: str) -> int:
    value = dynamic.get(key)
    try:
        return check_rate(key, value) if value is not None else UNLIMITED
    except ReconfigureError:
        return UNLIMITED    # a value stored by hand that does not parse: no throttle


def install_replication_quotas(broker: Any) -> dict[str, ReplicationQuota]:
    """Make the broker's two replication quotas (topic configs read from
    ``broker.topic_overrides``; windows from replication.quota.window.*), hand them
    to its ReplicaManager (leader side) and fetchers (follower side) and set their
    rates from its dynamic entry."""
    config = broker.config

    def topic_configs(topic: str) -> dict[str, str]:
        return broker.topic_overrides.get(topic) or {}

    quotas = {side: ReplicationQuota(side, broker.broker_id, topic_configs,
                                     samples=config.replication_quota_window_num,
                                     window_seconds=config.replication_quota_window_size_seconds)
              for side in (LEADER, FOLLOWER)}
    broker.replication_quotas = quotas
    broker.replicas.leader_quota = quotas[LEADER]
    set_quota = getattr(broker.replicas.fetchers, "set_quota", None)
    if set_quota is not None:
        set_quota(quotas[FOLLOWER])
    apply_rates(broker, broker.dynamic_configs)
    return quotas


async def load(broker: Any) -> dict[str, str]:
    """This broker's stored dynamic entry: the keys served here (others are
    ignored with a warning by reconfigure.load)."""
    return await reconfigure.load(broker.cluster, broker.broker_id, THROTTLE_RATES)


async def load_default(broker: Any) -> dict[str, str]:
    """The cluster-wide default entry's throttle rates ({} from a store that keeps
    no broker entries, as the handlers' unit-test fakes)."""
    if not hasattr(broker.cluster, "get_data"):
        return {}
    stored = await reconfigure.load(broker.cluster, DEFAULT_ENTITY, THROTTLE_RATES)
    return {k: v for k, v in stored.items() if k in THROTTLE_RATES}


def rate_rows(dynamic: dict[str, str], default_entry: bool = False) -> list[ConfigEntry]:
    """DescribeConfigs rows for the two rates: the stored value (DYNAMIC_BROKER_CONFIG,
    or DYNAMIC_DEFAULT_BROKER_CONFIG for the default entry), else Long.MAX_VALUE
    (DEFAULT_CONFIG). The default entry lists only what it holds."""
    rows = []
    source = (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG if default_entry
              else ConfigSource.DYNAMIC_BROKER_CONFIG)
    for key in sorted(THROTTLE_RATES):
        value = dynamic.get(key)
        default = SynonymValue(key, str(UNLIMITED), ConfigSource.DEFAULT_CONFIG)
        if value is not None:
            rows.append(ConfigEntry(key, value, source, ConfigType.LONG,
                                    (SynonymValue(key, value, source), default), RATE_DOCS[key]))
        elif not default_entry:
            rows.append(ConfigEntry(key, str(UNLIMITED), ConfigSource.DEFAULT_CONFIG,
                                    ConfigType.LONG, (default,), RATE_DOCS[key]))
    return rows
