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

Keys accepted without effect (effects.WITHOUT_EFFECT, e.g. sasl.enabled.mechanisms)
are not folded: a BrokerConfig field among them keeps its static value. The listener
overrides (``BrokerConfig.listener_overrides``) get the one listener key applied through
them, ``listener.name.<l>.max.connections`` (per broker > default > static), which
KafkaServer.start reads and limits.py pushes to running listeners; the TLS ones are
reconfigure's (passed in as applied).

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
from broker.dynamic_config.effects import WITHOUT_EFFECT
from broker.security import reconfigure

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
            if f is None or f.name in ("listener_overrides", "dynamic") or key in WITHOUT_EFFECT:
                continue
            try:
                changes[f.name] = _parse_value(key, raw, f)
            except ConfigError as e:
                log.warning("dynamic broker config not applied: %s", e)
    base = layers.static.listener_overrides if listener_overrides is None else listener_overrides
    changes["listener_overrides"] = _with_listener_limits(layers, base)
    return dataclasses.replace(layers.static, dynamic=layers, **changes)


LISTENER_LIMIT = "max.connections"      # the listener key folded into the overrides


def _with_listener_limits(layers: DynamicLayers, overrides: Mapping[str, str]) -> dict[str, str]:
    """``overrides`` with every listener.name.<l>.max.connections taken from the layers
    (static, then default, then per broker over it); a value that is not a count is
    skipped with a warning."""
    out = {k: v for k, v in overrides.items() if not _is_limit(k)}
    for entry in (layers.static.listener_overrides, layers.cluster_default, layers.per_broker):
        for key, raw in entry.items():
            parts = reconfigure.split(key)
            if parts is None or parts[1] != LISTENER_LIMIT:
                continue
            if not raw.strip().isdigit():
                log.warning("dynamic broker config not applied: %s=%r is not a count", key, raw)
                continue
            out[f"{reconfigure.PREFIX}{parts[0].lower()}.{LISTENER_LIMIT}"] = raw.strip()
    return out


def _is_limit(key: str) -> bool:
    parts = reconfigure.split(key)
    return parts is not None and parts[1] == LISTENER_LIMIT


# -- a broker's layers (read by live.py, listeners.py, the handlers) ----------------------

def static_of(broker: DynamicConfigHost) -> BrokerConfig:
    """The static config (what server.properties made; the Broker keeps it from the start)."""
    return broker.static_config


def default_entry(broker: DynamicConfigHost) -> dict[str, str]:
    """A copy of the cluster default entry as this broker last read it."""
    return dict(broker.dynamic_default_configs)
