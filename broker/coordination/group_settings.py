"""The broker's group.consumer.* keys -> group_logic.GroupConfig, with the cross-key
rules Kafka 4.0's GroupCoordinatorConfig enforces at start-up (a bad combination
stops the broker with a ConfigError naming the keys and values):

* group.consumer.min.session.timeout.ms <= group.consumer.session.timeout.ms
  <= group.consumer.max.session.timeout.ms, and the same for the heartbeat interval;
* group.consumer.heartbeat.interval.ms < group.consumer.session.timeout.ms;
* group.consumer.assignors: uniform / range (or Kafka's assignor class names),
  no duplicates; the first is the default when a member names none.

``protocol_enabled`` reads group.coordinator.rebalance.protocols: without
"consumer", ConsumerGroupHeartbeat/Describe answer UNSUPPORTED_VERSION (Kafka).
"""

from __future__ import annotations

from broker.config import BrokerConfig, ConfigError, check_consumer_group_bounds
from coordinator.group.consumer.group_logic import GroupConfig

_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def assignor_names(text: str) -> tuple[str, ...]:
    names: list[str] = []
    for raw in (n.strip() for n in text.split(",")):
        if not raw:
            continue
        name = _CLASS_NAMES.get(raw, raw)
        if name not in ("uniform", "range"):
            raise ConfigError(f"Invalid value {text!r} for configuration "
                              f"group.consumer.assignors: unknown assignor {raw!r}")
        if name in names:
            raise ConfigError(f"Invalid value {text!r} for configuration "
                              f"group.consumer.assignors: {name} listed twice")
        names.append(name)
    if not names:
        raise ConfigError(f"Invalid value {text!r} for configuration group.consumer.assignors: "
                          "no assignor")
    return tuple(names)


def protocol_enabled(config: BrokerConfig) -> bool:
    text = config.group_coordinator_rebalance_protocols
    return "consumer" in {n.strip().lower() for n in text.split(",")}


def group_config_from(config: BrokerConfig) -> GroupConfig:
    """A group_logic.GroupConfig from a BrokerConfig (ConfigError on bad values)."""
    from coordinator.group.consumer.migration import MigrationPolicy

    check_consumer_group_bounds(config)
    session, session_lo, session_hi = (config.group_consumer_session_timeout_ms,
                                       config.group_consumer_min_session_timeout_ms,
                                       config.group_consumer_max_session_timeout_ms)
    beat, beat_lo, beat_hi = (config.group_consumer_heartbeat_interval_ms,
                              config.group_consumer_min_heartbeat_interval_ms,
                              config.group_consumer_max_heartbeat_interval_ms)
    try:
        policy = MigrationPolicy.parse(config.group_consumer_migration_policy).value
    except ValueError as e:
        raise ConfigError(str(e)) from None
    try:
        return GroupConfig(
            session_timeout_ms=session, min_session_timeout_ms=session_lo,
            max_session_timeout_ms=session_hi, heartbeat_interval_ms=beat,
            min_heartbeat_interval_ms=beat_lo, max_heartbeat_interval_ms=beat_hi,
            max_size=config.group_consumer_max_size,
            assignors=assignor_names(config.group_consumer_assignors),
            migration_policy=policy)
    except ValueError as e:
        raise ConfigError(str(e)) from None
