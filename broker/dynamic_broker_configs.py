"""Dynamic broker configs: the entry points the broker and the config handlers call
(the capability itself is broker/dynamic_config/: keys, layers, live, describe,
alter, loggers).

* ``load`` (start-up, before the logs and listeners): both ZooKeeper entries,
  ``/config/brokers/<id>`` and ``/config/brokers/<default>``; the default is applied
  at once (``broker.dynamic_default_configs``), the broker's own entry returned for
  ``apply``; stored keys or values no longer accepted are dropped with a warning.
* ``apply``: this broker's entry with ``updates`` (None deletes), checked, applied
  (TLS contexts swapped, effective config recomputed and pushed to the components).
* ``watch``: the /config/changes subscription that keeps both entries current.
* ``install_replication_quotas`` / ``apply_rates``: the replication throttles
  (``leader.replication.throttled.rate`` / ``follower.replication.throttled.rate``,
  KIP-73; a long >= 0, default Long.MAX_VALUE): only a broker's own entry sets its
  quotas; on the default entry they are stored but set no quota (Kafka 3.9's
  ZooKeeper mode, BrokerConfigHandler; KAFKA-10190).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from broker.dynamic_config import keys, live
from broker.dynamic_config.rates import apply_rates
from broker.dynamic_config.keys import DEFAULT_ENTITY, THROTTLE_RATES, check_rate
from broker.replication.fetcher import ReplicaFetcherManager
from broker.replication.throttle import FOLLOWER, LEADER, ReplicationQuota
from broker.security import reconfigure
from broker.security.reconfigure import ReconfigureError

if TYPE_CHECKING:
    from broker.dynamic_config.host import DynamicConfigHost

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_ENTITY", "THROTTLE_RATES", "check_rate", "apply", "check_default",
           "apply_rates", "install_replication_quotas", "load", "load_default", "watch"]


def apply(broker: DynamicConfigHost, updates: dict[str, str | None],
          validate_only: bool) -> None:
    """Check ``updates`` to this broker's own entry, then unless ``validate_only``
    apply them. Nothing changes when any key or value is refused (ReconfigureError)."""
    keys.check(updates, per_broker=True, broker=broker)
    tls = keys.tls_updates(broker, updates)     # the other listener keys: stored only
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
    broker.dynamic_configs = live.normalise(dynamic)
    live.refresh(broker)


def check_default(updates: dict[str, str | None]) -> None:
    """The cluster default entry's keys and values (ReconfigureError)."""
    keys.check(updates, per_broker=False)


def install_replication_quotas(broker: DynamicConfigHost) -> dict[str, ReplicationQuota]:
    """Make the broker's two replication quotas (topic configs read from
    ``broker.topic_overrides``; windows from replication.quota.window.*), hand them
    to its ReplicaManager (leader side) and fetchers (follower side), set their
    rates from its dynamic entry, and push the effective config to the components
    made since ``load``."""
    replicas = broker.replicas
    assert replicas is not None, "Broker.start makes the ReplicaManager first"
    config = broker.config

    def topic_configs(topic: str) -> dict[str, str]:
        return broker.topic_overrides.get(topic) or {}

    quotas = {side: ReplicationQuota(side, broker.broker_id, topic_configs,
                                     samples=config.replication_quota_window_num,
                                     window_seconds=config.replication_quota_window_size_seconds)
              for side in (LEADER, FOLLOWER)}
    broker.replication_quotas = quotas
    replicas.leader_quota = quotas[LEADER]
    if isinstance(replicas.fetchers, ReplicaFetcherManager):   # not NoFetchers: replicating
        replicas.fetchers.set_quota(quotas[FOLLOWER])
    apply_rates(broker, broker.dynamic_configs)
    return quotas


def _accepted(entry: dict[str, str], where: str) -> dict[str, str]:
    out = {}
    for key, value in live.normalise(entry).items():
        try:
            keys.check_level([key], per_broker=where != DEFAULT_ENTITY)
            keys.check_value(key, value)
        except ReconfigureError as e:
            log.warning("dynamic broker config %s=%r in /config/brokers/%s not applied: %s",
                        key, value, where, e)
            continue
        out[key] = value
    return out


async def load(broker: DynamicConfigHost) -> dict[str, str]:
    """Read both entries; apply the default one now; -> this broker's own entry."""
    default = _accepted(await live.read_entry(broker.cluster, DEFAULT_ENTITY), DEFAULT_ENTITY)
    own = _accepted(await live.read_entry(broker.cluster, str(broker.broker_id)),
                    str(broker.broker_id))
    broker.dynamic_default_configs = default
    live.refresh(broker)
    if default:
        log.info("cluster default dynamic broker configs applied: %s", default)
    return own


async def load_default(broker: DynamicConfigHost) -> dict[str, str]:
    """The cluster default entry as stored ({} when there is none)."""
    return await live.read_entry(broker.cluster, DEFAULT_ENTITY)


def watch(broker: DynamicConfigHost) -> Callable[[], None]:
    """Keep both entries current from /config/changes; -> the cancel function."""
    return live.watch(broker)


def rate_rows(dynamic: dict[str, str], default_entry: bool = False) -> list[Any]:
    """DescribeConfigs rows of the two rates alone (the per-broker entry ``dynamic``,
    or the default entry's rates)."""
    from broker.config import BrokerConfig
    from broker.dynamic_config import describe
    from broker.dynamic_config.layers import DynamicLayers
    rates = {k: v for k, v in dynamic.items() if k in THROTTLE_RATES}
    if default_entry:
        return describe.default_rows(DynamicLayers(BrokerConfig(), {}, rates))
    layers = DynamicLayers(BrokerConfig(), rates, {})
    return [r for r in describe.broker_rows(BrokerConfig(), layers) if r.name in THROTTLE_RATES]
