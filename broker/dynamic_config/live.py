"""Applying the dynamic broker configs to a running broker, and keeping them current.

The broker's state (declared by the Broker, typed by host.DynamicConfigHost):

* ``broker.static_config``: the config server.properties made;
* ``broker.dynamic_configs``: its own entry ``/config/brokers/<id>`` (raw strings);
* ``broker.dynamic_default_configs``: the cluster default ``/config/brokers/<default>``;
* ``broker.config``: the effective config (layers.effective_config) every reader uses.

``refresh`` recomputes the effective config from the layers and pushes what components
copied at start-up: every partition log's LogConfig (a default changes every topic
without its own override, at once), the LogManager's default, the connection quotas,
the cleaner's config, the controller's unclean.leader.election.enable, the replication
throttle rates. Readers of ``broker.config`` (Produce's message.max.bytes,
min.insync.replicas, the cleaner's back-off) see the new value on their next read.

The listener keys (listeners, advertised.listeners, listener.security.protocol.map)
are folded in like the others; ``listeners.sync`` then opens and closes KafkaServers
and rewrites the broker's registration (after an alter and on a notification; at
start-up ``listeners.prepare`` from ``refresh`` sets what the start-up loop opens).

When: after an alter on the broker that took it (at once, so its answer holds),
on every ``/config/changes`` notification ``brokers/<id>`` / ``brokers/<default>``
(``watch``: each broker re-reads the entry, as Kafka's BrokerConfigHandler) and at
start-up (``load`` before the listeners open).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.config import BrokerConfig
from broker.dynamic_config import limits, listeners
from broker.dynamic_config.keys import DEFAULT_ENTITY, applies_tls
from broker.dynamic_config.layers import DynamicLayers, default_entry, effective_config, static_of
from broker.dynamic_config.rates import apply_rates
from broker.security import reconfigure
from broker.security.reconfigure import ReconfigureError

if TYPE_CHECKING:
    from broker.dynamic_config.host import DynamicConfigHost
    from controller import ClusterStore
    from storage.config import LogConfig

log = logging.getLogger(__name__)



def layers_of(broker: DynamicConfigHost) -> DynamicLayers:
    return DynamicLayers(static_of(broker), dict(broker.dynamic_configs), default_entry(broker))


def refresh(broker: DynamicConfigHost) -> None:
    """Recompute the effective config and apply it to the running components (those
    not built yet, None before Broker.start, start from ``broker.config``)."""
    old = broker.config
    new = effective_config(layers_of(broker), old.listener_overrides)
    broker.config = new
    _apply_logs(broker)
    _apply_network(broker, new)
    _apply_cleaner(broker, new)
    if broker.controller is not None:
        broker.controller.set_unclean_leader_election(new.unclean_leader_election_enable)
    if broker.replicas is not None:
        broker.replicas.producer_id_expiration_ms = new.producer_id_expiration_ms
    apply_rates(broker, broker.dynamic_configs)
    limits.apply_listener_limits(broker)
    if not broker.servers:
        listeners.prepare(broker)       # start-up: the listeners open from these
    changed = sorted(f.name for f in dataclasses.fields(new)
                     if f.compare and getattr(new, f.name) != getattr(old, f.name))
    if changed:
        log.info("dynamic broker config applied: %s", ", ".join(
            f"{name.replace('_', '.')}={getattr(new, name)!r}" for name in changed))


def _apply_logs(broker: DynamicConfigHost) -> None:
    logs = broker.logs
    if logs is None:
        return
    logs.config = broker.default_log_config()
    per_topic: dict[str, LogConfig] = {}
    for (topic, _p), plog in logs:
        config = per_topic.get(topic)
        if config is None:
            config = per_topic[topic] = broker.log_config_for(topic)
        if plog.config != config:
            plog.config = config


def _apply_network(broker: DynamicConfigHost, config: BrokerConfig) -> None:
    from broker.network.connection_quotas import parse_overrides, resolve_overrides
    quotas = broker.network_limits.quotas
    quotas.max_connections = config.max_connections
    quotas.max_per_ip = config.max_connections_per_ip
    quotas.per_ip_overrides = dict(resolve_overrides(
        parse_overrides(config.max_connections_per_ip_overrides)))
    quotas.max_creation_rate = config.max_connection_creation_rate


def _apply_cleaner(broker: DynamicConfigHost, config: BrokerConfig) -> None:
    cleaner = broker.cleaner
    if cleaner is None:
        return
    cleaner.config = dataclasses.replace(
        cleaner.config, dedupe_buffer_size=config.log_cleaner_dedupe_buffer_size,
        dedupe_buffer_load_factor=config.log_cleaner_io_buffer_load_factor,
        backoff_ms=config.log_cleaner_backoff_ms)


# ---- ZooKeeper: load, store, notifications ---------------------------------------------

async def read_entry(cluster: ClusterStore, entity: str) -> dict[str, str]:
    """``/config/brokers/<entity>``'s config map ({} when absent or unreadable)."""
    got = await cluster.get_data(f"/config/brokers/{entity}")
    return reconfigure._decode(got[0]) if got else {}


def normalise(entry: dict[str, str]) -> dict[str, str]:
    """Listener keys with the listener part lower case (as reconfigure keeps them)."""
    out = {}
    for key, value in entry.items():
        parts = reconfigure.split(key)
        out[f"{reconfigure.PREFIX}{parts[0].lower()}.{parts[1]}" if parts else key] = value
    return out


def tls_changes(broker: DynamicConfigHost, new_entry: dict[str, str]) -> dict[str, str | None]:
    """The TLS listener keys reconfigure applies (keys.applies_tls) whose value differs
    between the applied entry and ``new_entry``; other listener keys are stored only."""
    old = {k: v for k, v in broker.dynamic_configs.items() if applies_tls(broker, k)}
    new = {k: v for k, v in new_entry.items() if applies_tls(broker, k)}
    changes: dict[str, str | None] = {k: v for k, v in new.items() if old.get(k) != v}
    changes.update({k: None for k in old if k not in new})
    return changes


def adopt_entry(broker: DynamicConfigHost, entry: dict[str, str], default: bool) -> None:
    """Make ``entry`` the broker's own (or the default) entry and apply it. TLS keys
    that changed are applied through reconfigure (refused ones logged, kept out)."""
    if default:     # listener keys there are cluster-level ones (keys.per_broker_only)
        broker.dynamic_default_configs = normalise(entry)
    else:
        entry = normalise(entry)
        tls = tls_changes(broker, entry)
        if tls:
            try:
                reconfigure.apply(broker, tls, validate_only=False)
            except ReconfigureError as e:
                log.error("dynamic TLS configs of broker %s not applied: %s",
                          broker.broker_id, e)
                for key in tls:
                    if broker.dynamic_configs.get(key) is None:
                        entry.pop(key, None)
                    else:
                        entry[key] = broker.dynamic_configs[key]
        broker.dynamic_configs = entry
    refresh(broker)


def watch(broker: DynamicConfigHost) -> Callable[[], None]:
    """Subscribe to /config/changes for brokers/<id> and brokers/<default>; -> cancel."""
    def on_change(entity_path: str) -> None:
        kind, _, name = entity_path.partition("/")
        if kind != "brokers" or name not in (str(broker.broker_id), DEFAULT_ENTITY):
            return
        broker.spawn(_reload(broker, name))
    return broker.cluster.watch_config_entity_changes(on_change)


async def catch_up(broker: DynamicConfigHost) -> None:
    """Adopt the default and this broker's entries as ZooKeeper holds them now.

    DescribeConfigs calls this first, so a describe answered by any broker shows an
    alter another broker acknowledged before it (the alter's ZooKeeper write precedes
    its response; the change notification may not have reached this broker yet).
    Kafka's ZooKeeper mode answers from the broker's cache and can show the old value."""
    await _reload(broker, DEFAULT_ENTITY)
    await _reload(broker, str(broker.broker_id))


async def _reload(broker: DynamicConfigHost, name: str) -> None:
    try:
        default = name == DEFAULT_ENTITY
        entry = await read_entry(broker.cluster, name)
        current = default_entry(broker) if default else dict(broker.dynamic_configs)
        if normalise(entry) == current:
            return
        adopt_entry(broker, entry, default)
        if not default:
            await listeners.sync(broker)    # listeners added/removed, registration
        log.info("applied dynamic config change of brokers/%s", name)
    except Exception:
        log.exception("dynamic config change of brokers/%s not applied", name)


__all__ = ["refresh", "watch", "catch_up", "adopt_entry", "read_entry", "static_of", "layers_of"]
