"""The broker's configuration as four layers, and the effective config they make.

Precedence, as Kafka's DynamicBrokerConfig: per-broker dynamic
(``/config/brokers/<id>``) > cluster default dynamic (``/config/brokers/<default>``)
> static (server.properties) > Kafka's default. ``DynamicLayers`` holds the static
BrokerConfig and the two dynamic entries (raw strings as stored);
``effective_config`` folds the dynamic values of BrokerConfig fields onto the
static config (so ``broker.config`` answers every reader with the effective value)
and hangs the layers on it (``BrokerConfig.dynamic``) so that topic_config can tell
sources and read the log defaults BrokerConfig does not model (e.g.
log.cleaner.min.cleanable.ratio, log.preallocate).

A stored value that no longer parses (written by hand into ZooKeeper) is skipped
with a warning: the next layer's value applies.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from broker.config import _FIELDS, BrokerConfig, ConfigError, _parse_value

if TYPE_CHECKING:
    from broker.dynamic_config.host import DynamicConfigHost

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DynamicLayers:
    static: BrokerConfig
    per_broker: Mapping[str, str] = field(default_factory=dict)
    cluster_default: Mapping[str, str] = field(default_factory=dict)

    def dynamic_value(self, key: str) -> tuple[str, str] | None:
        """(value, "broker" | "default") of the highest dynamic layer holding ``key``."""
        if key in self.per_broker:
            return self.per_broker[key], "broker"
        if key in self.cluster_default:
            return self.cluster_default[key], "default"
        return None


def effective_config(layers: DynamicLayers,
                     listener_overrides: Mapping[str, str] | None = None) -> BrokerConfig:
    """The static config with the dynamic values of BrokerConfig fields over it (the
    default entry first, then the broker's own), ``listener_overrides`` (the TLS
    keys as reconfigure applied them) and the layers attached."""
    changes: dict[str, Any] = {}
    for entry in (layers.cluster_default, layers.per_broker):
        for key, raw in entry.items():
            f = _FIELDS.get(key)
            if f is None or f.name in ("listener_overrides", "dynamic"):
                continue
            try:
                changes[f.name] = _parse_value(key, raw, f)
            except ConfigError as e:
                log.warning("dynamic broker config not applied: %s", e)
    if listener_overrides is not None:
        changes["listener_overrides"] = dict(listener_overrides)
    return dataclasses.replace(layers.static, dynamic=layers, **changes)


# -- a broker's layers (read by live.py, listeners.py, the handlers) ----------------------

def static_of(broker: DynamicConfigHost) -> BrokerConfig:
    """The static config (what server.properties made; the Broker keeps it from the start)."""
    return broker.static_config


def default_entry(broker: DynamicConfigHost) -> dict[str, str]:
    """A copy of the cluster default entry as this broker last read it."""
    return dict(broker.dynamic_default_configs)
