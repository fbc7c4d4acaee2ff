"""broker/dynamic_config: key levels and value checks, the layers' precedence, the
sources and synonyms DescribeConfigs shows, live application onto a broker stand-in,
the alter flow over a fake ZooKeeper, and BROKER_LOGGER levels."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from broker import dynamic_broker_configs, topic_config
from broker.config import BrokerConfig
from broker.dynamic_config import alter, describe, keys, live, loggers
from broker.dynamic_config.layers import DynamicLayers, effective_config
from broker.security.reconfigure import ReconfigureError
from broker.topic_config import ConfigSource as S
from tests.unit.broker.dynamic_config.fakes import FakeBroker


# ---- keys ---------------------------------------------------------------------------------

def test_dynamic_keys_and_levels() -> None:
    keys.check({"log.retention.ms": "1000", "num.io.threads": "4",
                "max.connections.per.ip.overrides": "127.0.0.1:5"}, per_broker=False)
    with pytest.raises(ReconfigureError, match="Cannot update these configs dynamically: "
                                               "broker.id, log.retention.hours") as e:
        keys.check({"broker.id": "3", "log.retention.hours": "1"}, per_broker=True)
    assert not e.value.invalid_config
    with pytest.raises(ReconfigureError, match="broker id must be specified: "
                                               "listener.name.x.ssl.keystore.location"):
        keys.check({"listener.name.x.ssl.keystore.location": "/k"}, per_broker=False)
    keys.check({"log.retention.ms": None}, per_broker=True)     # a delete checks the key only


@pytest.mark.parametrize("key,value", [("message.max.bytes", "lots"),
                                       ("log.retention.ms", "-5"),
                                       ("log.segment.bytes", "10"),
                                       ("log.cleanup.policy", "shred"),
                                       ("compression.type", "brotli"),
                                       ("log.cleaner.min.cleanable.ratio", "2"),
                                       ("num.io.threads", "0"),
                                       ("num.io.threads", "x"),
                                       ("leader.replication.throttled.rate", "-1")])
def test_bad_values_name_key_and_value(key: str, value: str) -> None:
    with pytest.raises(ReconfigureError) as e:
        keys.check({key: value}, per_broker=True)
    assert e.value.invalid_config and key in str(e.value) and value in str(e.value)


# ---- layers and sources -------------------------------------------------------------------

def test_precedence_per_broker_over_default_over_static() -> None:
    static = BrokerConfig(message_max_bytes=5000, log_retention_hours=24)
    layers = DynamicLayers(static, {"message.max.bytes": "7000"},
                           {"message.max.bytes": "6000", "log.retention.ms": "1000",
                            "log.preallocate": "true"})
    config = effective_config(layers)
    assert config.message_max_bytes == 7000 and config.retention_ms == 1000
    assert effective_config(DynamicLayers(static, {}, {})).message_max_bytes == 5000
    log_config = topic_config.log_config(config, {"retention.ms": "5"})
    assert (log_config.max_message_bytes, log_config.retention_ms, log_config.preallocate) == \
        (7000, 5, True)
    rows = {r.name: r for r in topic_config.describe(config, {})}
    mmb = rows["max.message.bytes"]
    assert (mmb.value, mmb.source) == ("7000", S.DYNAMIC_BROKER_CONFIG)
    assert [(s.source, s.value) for s in mmb.synonyms] == [
        (S.DYNAMIC_BROKER_CONFIG, "7000"), (S.DYNAMIC_DEFAULT_BROKER_CONFIG, "6000"),
        (S.STATIC_BROKER_CONFIG, "5000"), (S.DEFAULT_CONFIG, "1048588")]
    assert (rows["retention.ms"].value, rows["retention.ms"].source) == \
        ("1000", S.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert rows["preallocate"].source == S.DYNAMIC_DEFAULT_BROKER_CONFIG


def test_broker_rows_sources_synonyms_and_read_only() -> None:
    static = BrokerConfig(log_retention_hours=24)
    layers = DynamicLayers(static, {"log.retention.ms": "2000"}, {"log.retention.ms": "1000",
                                                                   "num.io.threads": "4"})
    rows = {r.name: r for r in describe.broker_rows(effective_config(layers), layers)}
    ms = rows["log.retention.ms"]
    assert (ms.value, ms.source, ms.read_only) == ("2000", S.DYNAMIC_BROKER_CONFIG, False)
    assert [(s.name, s.source) for s in ms.synonyms] == [
        ("log.retention.ms", S.DYNAMIC_BROKER_CONFIG),
        ("log.retention.ms", S.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.hours", S.STATIC_BROKER_CONFIG),
        ("log.retention.hours", S.DEFAULT_CONFIG)]
    hours = rows["log.retention.hours"]
    assert hours.read_only and [s.source for s in hours.synonyms] == \
        [S.STATIC_BROKER_CONFIG, S.DEFAULT_CONFIG]
    assert (rows["num.io.threads"].value, rows["num.io.threads"].source) == \
        ("4", S.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert (rows["background.threads"].value, rows["background.threads"].source) == \
        ("10", S.DEFAULT_CONFIG)
    assert rows["broker.id"].read_only and not rows["listeners"].read_only
    assert not rows["log.cleaner.min.cleanable.ratio"].read_only
    default = describe.default_rows(layers)
    assert [(r.name, r.value, r.source) for r in default] == [
        ("log.retention.ms", "1000", S.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("num.io.threads", "4", S.DYNAMIC_DEFAULT_BROKER_CONFIG)]


# ---- live application and the alter flow over a fake ZooKeeper ---------------------------

def test_alter_default_stores_notifies_and_applies_live() -> None:
    b = FakeBroker()
    asyncio.run(alter.alter(b, True, {"log.retention.ms": "1000", "max.connections": "9",
                                      "unclean.leader.election.enable": "true"}, False))
    stored = json.loads(b.cluster.nodes["/config/brokers/<default>"][0])
    assert stored == {"version": 1, "config": {"log.retention.ms": "1000",
                                               "max.connections": "9",
                                               "unclean.leader.election.enable": "true"}}
    assert json.loads(b.cluster.changes[-1]) == {"version": 2,
                                                 "entity_path": "brokers/<default>"}
    assert b.logs.logs[("plain", 0)].config.retention_ms == 1000     # live, no override
    assert b.logs.logs[("own", 0)].config.retention_ms == 42         # its override wins
    assert b.network_limits.quotas.max_connections == 9 and b.controller.unclean
    # per broker over the default; ValidateOnly changes nothing
    asyncio.run(alter.alter(b, False, {"log.retention.ms": "500"}, True))
    assert b.logs.logs[("plain", 0)].config.retention_ms == 1000
    asyncio.run(alter.alter(b, False, {"log.retention.ms": "500"}, False))
    assert b.logs.logs[("plain", 0)].config.retention_ms == 500
    assert json.loads(b.cluster.nodes["/config/brokers/0"][0])["config"] == \
        {"log.retention.ms": "500"}
    # a bad value: nothing stored, nothing changed
    with pytest.raises(ReconfigureError):
        asyncio.run(alter.alter(b, True, {"log.retention.ms": "soon"}, False))
    assert b.config.retention_ms == 500
    # the delete falls back to the default entry, then to static
    asyncio.run(alter.alter(b, False, {"log.retention.ms": None}, False))
    assert b.logs.logs[("plain", 0)].config.retention_ms == 1000
    assert b.static_config.retention_ms == 7 * 24 * 3_600_000


def test_start_up_load_applies_the_default_and_drops_bad_stored_values() -> None:
    b = FakeBroker()
    b.logs = None
    b.cluster.nodes["/config/brokers/<default>"] = (json.dumps({"version": 1, "config": {
        "message.max.bytes": "3000", "log.retention.hours": "1"}}).encode(), 0)
    b.cluster.nodes["/config/brokers/0"] = (json.dumps({"version": 1, "config": {
        "min.insync.replicas": "2", "num.io.threads": "zero"}}).encode(), 0)
    own = asyncio.run(dynamic_broker_configs.load(b))
    assert own == {"min.insync.replicas": "2"}
    assert b.config.message_max_bytes == 3000 and b.dynamic_default_configs == \
        {"message.max.bytes": "3000"}
    dynamic_broker_configs.apply(b, own, validate_only=False)
    assert b.config.min_insync_replicas == 2


def test_notification_reloads_the_entry() -> None:
    b = FakeBroker()
    live.static_of(b)
    b.cluster.nodes["/config/brokers/<default>"] = (json.dumps({"version": 1, "config": {
        "log.segment.bytes": "4096"}}).encode(), 0)
    asyncio.run(live._reload(b, "<default>"))
    assert b.logs.logs[("plain", 0)].config.segment_bytes == 4096


def test_catch_up_shows_an_alter_made_through_another_broker_before_its_notification() -> None:
    # Broker 1 stored both entries (its alter answered); this broker has had no
    # notification yet. catch_up (run by DescribeConfigs first) reads them from ZooKeeper.
    b = FakeBroker()
    live.static_of(b)
    assert b.logs.logs[("plain", 0)].config.segment_bytes != 4096
    b.cluster.nodes["/config/brokers/<default>"] = (json.dumps({"version": 1, "config": {
        "log.segment.bytes": "4096"}}).encode(), 0)
    b.cluster.nodes["/config/brokers/0"] = (json.dumps({"version": 1, "config": {
        "log.retention.ms": "500"}}).encode(), 0)
    asyncio.run(live.catch_up(b))
    assert b.logs.logs[("plain", 0)].config.segment_bytes == 4096
    assert b.dynamic_configs == {"log.retention.ms": "500"}
    rows = {r.name: r for r in describe.broker_rows(b.config, live.layers_of(b))}
    assert (rows["log.segment.bytes"].value, rows["log.segment.bytes"].source) == \
        ("4096", S.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert rows["log.retention.ms"].source == S.DYNAMIC_BROKER_CONFIG


# ---- BROKER_LOGGER ------------------------------------------------------------------------

def test_logger_levels_set_described_and_unset() -> None:
    name = "broker.dynamic_config.test_probe"
    probe = logging.getLogger(name)
    try:
        levels = loggers.check({name: "debug"})
        loggers.apply(levels)
        assert probe.level == logging.DEBUG
        rows = {r.name: r for r in loggers.describe()}
        assert rows[name].value == "DEBUG" and rows[name].source == S.DYNAMIC_BROKER_LOGGER_CONFIG
        assert "root" in rows
        loggers.apply(loggers.check({name: "TRACE"}))
        assert {r.name: r.value for r in loggers.describe()}[name] == "TRACE"
        loggers.apply(loggers.check({name: None}))
        assert probe.level == logging.NOTSET
    finally:
        probe.setLevel(logging.NOTSET)
    with pytest.raises(loggers.LoggerConfigError, match="LOUD as it is not a supported"):
        loggers.check({name: "LOUD"})
    with pytest.raises(loggers.LoggerConfigError, match="Logger no.such.logger does not exist"):
        loggers.check({"no.such.logger": "INFO"})
    with pytest.raises(loggers.LoggerConfigError, match="root logger is not allowed"):
        loggers.check({"root": None})


def test_keys_kafka_takes_pybroker_cannot_act_on_are_accepted_per_broker() -> None:
    # sasl.enabled.mechanisms: Kafka's PerBrokerConfigs (issue 30: accepted without effect)
    keys.check({"sasl.enabled.mechanisms": "PLAIN"}, per_broker=True)
    with pytest.raises(ReconfigureError, match="broker id must be specified: "
                                               "sasl.enabled.mechanisms") as e:
        keys.check({"sasl.enabled.mechanisms": "PLAIN"}, per_broker=False)
    assert not e.value.invalid_config
    keys.check({"listeners": "PLAINTEXT://:9093"}, per_broker=True)   # issue 18: dynamic
    with pytest.raises(ReconfigureError, match="only per-listener using the listener prefix: "
                                               "ssl.keystore.location"):
        keys.check({"ssl.keystore.location": "/k"}, per_broker=True)
