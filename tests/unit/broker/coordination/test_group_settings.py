"""broker.coordination.group_settings and the group.consumer.* keys of broker/config.py."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.coordination.group_settings import group_config_from, protocol_enabled


def config(**props: str) -> BrokerConfig:
    return BrokerConfig.from_properties(props)


def test_defaults_are_kafka_4_0s() -> None:
    gc = group_config_from(config())
    assert (gc.session_timeout_ms, gc.heartbeat_interval_ms) == (45000, 5000)
    assert gc.assignors == ("uniform", "range") and gc.migration_policy == "bidirectional"
    assert protocol_enabled(config())


def test_values_and_class_names() -> None:
    gc = group_config_from(config(**{
        "group.consumer.session.timeout.ms": "10000",
        "group.consumer.min.session.timeout.ms": "6000",
        "group.consumer.heartbeat.interval.ms": "500",
        "group.consumer.min.heartbeat.interval.ms": "100",
        "group.consumer.assignors":
            "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform",
        "group.consumer.migration.policy": "Upgrade"}))
    assert (gc.session_timeout_ms, gc.heartbeat_interval_ms) == (10000, 500)
    assert gc.assignors == ("range", "uniform") and gc.migration_policy == "upgrade"
    assert not protocol_enabled(config(**{"group.coordinator.rebalance.protocols": "classic"}))


@pytest.mark.parametrize("props, named", [
    ({"group.consumer.session.timeout.ms": "30000"}, "group.consumer.session.timeout.ms"),
    ({"group.consumer.heartbeat.interval.ms": "50000",
      "group.consumer.max.heartbeat.interval.ms": "60000"},
     "group.consumer.heartbeat.interval.ms"),
    ({"group.consumer.min.session.timeout.ms": "70000"},
     "group.consumer.min.session.timeout.ms"),
    ({"group.consumer.assignors": "sticky"}, "group.consumer.assignors"),
    ({"group.consumer.migration.policy": "sideways"}, "group.consumer.migration.policy"),
    ({"group.coordinator.rebalance.protocols": "consumer"},
     "group.coordinator.rebalance.protocols"),
])
def test_bad_values_name_the_key(props: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        group_config_from(config(**props))


def test_api_versions_advertises_the_kip848_apis_only_when_consumer_is_enabled() -> None:
    import asyncio
    from types import SimpleNamespace

    from broker.dispatch import load_handlers
    from broker.handlers.api_versions import handle_api_versions

    load_handlers()

    def advertised(props: dict[str, str]) -> set[int]:
        ctx = SimpleNamespace(header=SimpleNamespace(api_version=2),
                              broker=SimpleNamespace(config=config(**props)))
        body = asyncio.run(handle_api_versions(ctx, None))
        return {k.api_key for k in body.api_keys}

    assert {68, 69} <= advertised({})
    off = advertised({"group.coordinator.rebalance.protocols": "classic"})
    assert not {68, 69} & off and {11, 12, 14} <= off
