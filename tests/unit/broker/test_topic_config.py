"""Topic names (Kafka's Topic rules) and per-topic configs: validation with
Kafka's wording, effective values from broker synonyms, and the storage mapping."""

from __future__ import annotations

import dataclasses

import pytest

from broker import topic_config as tc
from broker.broker import Broker
from protocol import topic_names
from broker.config import BrokerConfig
from storage.config import LogConfig


# ---- names -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["a", "A-b_c.9", "x" * 249, "__consumer_offsets", "..."])
def test_legal_names(name: str) -> None:
    topic_names.validate(name)
    assert topic_names.is_valid(name)


@pytest.mark.parametrize("name, words", [
    ("", "empty"), (None, "empty"), (".", '"." or ".."'), ("..", '"." or ".."'),
    ("x" * 250, "249"), ("a b", "ASCII alphanumerics"), ("a/b", "ASCII alphanumerics"),
    ("tópico", "ASCII alphanumerics"),
])
def test_illegal_names(name: str | None, words: str) -> None:
    with pytest.raises(topic_names.InvalidTopicName, match=words.replace(".", r"\.")):
        topic_names.validate(name)
    assert not topic_names.is_valid(name)


def test_collisions_and_internal() -> None:
    assert topic_names.colliding("a.b", {"a_b", "a.b", "ab", "x"}) == ["a_b"]
    assert topic_names.colliding("ab", {"ab", "a_b"}) == []
    assert not topic_names.has_collision("a.b", "a.b")
    assert topic_names.is_internal("__transaction_state")
    assert not topic_names.is_internal("__cluster_metadata")


# ---- validation ------------------------------------------------------------------------------

def test_valid_configs_pass() -> None:
    tc.validate({"retention.ms": "-1", "cleanup.policy": "compact, delete",
                 "preallocate": "TRUE", "min.cleanable.dirty.ratio": "0.25",
                 "compression.type": "zstd", "compression.gzip.level": "-1",
                 "message.format.version": "2.8-IV1", "segment.bytes": " 2048 ",
                 "leader.replication.throttled.replicas": "0:1,1:2",
                 "follower.replication.throttled.replicas": "*"})
    tc.validate({})


@pytest.mark.parametrize("configs, message", [
    ({"retention.msx": "1"}, "Unknown topic config name: retention.msx"),
    ({"retention.ms": None}, "Null value not supported"),
    ({"retention.ms": "1h"}, "Invalid value 1h for configuration retention.ms: "
                             "Not a number of type LONG"),
    ({"retention.ms": "-2"}, "Value must be at least -1"),
    ({"segment.bytes": str(1 << 31)}, "Not a number of type INT"),
    ({"segment.bytes": "13"}, "Value must be at least 14"),
    ({"preallocate": "yes"}, "Expected value to be either true or false"),
    ({"cleanup.policy": "compact,archive"}, "String must be one of: compact, delete"),
    ({"compression.type": "brotli"}, "String must be one of"),
    ({"compression.gzip.level": "0"}, "-1 or between 1 and 9"),
    ({"compression.lz4.level": "18"}, "no more than 17"),
    ({"min.cleanable.dirty.ratio": "1.5"}, "no more than 1"),
    ({"message.timestamp.type": "createtime"}, "String must be one of"),
    ({"message.format.version": "latest"}, "not a valid version"),
    ({"leader.replication.throttled.replicas": "0-1"}, "[partitionId]:[brokerId]"),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "conflict"),
])
def test_invalid_configs(configs: dict[str, str | None], message: str) -> None:
    with pytest.raises(tc.InvalidConfig) as e:
        tc.validate(configs)
    assert message in str(e.value)


def test_every_default_is_valid() -> None:
    broker = BrokerConfig()
    values = tc.effective(broker, {})
    assert set(values) == set(tc.TOPIC_KEYS)
    tc.validate(values)


# ---- effective values and synonyms -----------------------------------------------------------

def test_defaults_follow_broker_synonyms_in_kafka_order() -> None:
    plain = BrokerConfig()
    assert tc.default_value(plain, "retention.ms") == str(168 * 3_600_000)
    assert tc.default_value(plain, "segment.ms") == str(168 * 3_600_000)
    assert tc.default_value(plain, "max.message.bytes") == "1048588"
    assert tc.default_value(plain, "remote.storage.enable") == "false"
    tuned = BrokerConfig.from_properties({
        "log.retention.hours": "1", "log.retention.minutes": "30", "log.roll.ms": "5000",
        "message.max.bytes": "2000000", "log.cleanup.policy": "compact",
        "unclean.leader.election.enable": "true", "log.retention.bytes": "-1"})
    assert tc.default_value(tuned, "retention.ms") == str(30 * 60_000)   # minutes beat hours
    assert tc.default_value(tuned, "segment.ms") == "5000"
    assert tc.default_value(tuned, "max.message.bytes") == "2000000"
    assert tc.default_value(tuned, "cleanup.policy") == "compact"
    assert tc.default_value(tuned, "unclean.leader.election.enable") == "true"
    assert tc.default_value(BrokerConfig.from_properties({"log.retention.ms": "-1"}),
                            "retention.ms") == "-1"


def test_describe_sources_and_synonyms() -> None:
    broker = BrokerConfig.from_properties({"log.retention.minutes": "30"})
    rows = {e.name: e for e in tc.describe(broker, {"segment.ms": "100"})}
    assert list(rows) == sorted(rows)
    seg = rows["segment.ms"]
    assert (seg.value, seg.source) == ("100", tc.ConfigSource.TOPIC_CONFIG)
    assert [(s.name, s.source) for s in seg.synonyms] == [
        ("segment.ms", tc.ConfigSource.TOPIC_CONFIG),
        ("log.roll.hours", tc.ConfigSource.DEFAULT_CONFIG)]
    ret = rows["retention.ms"]
    assert (ret.value, ret.source) == (str(30 * 60_000), tc.ConfigSource.STATIC_BROKER_CONFIG)
    assert [s.name for s in ret.synonyms] == ["log.retention.minutes", "log.retention.hours"]
    assert rows["remote.storage.enable"].synonyms == ()
    assert rows["remote.storage.enable"].source == tc.ConfigSource.DEFAULT_CONFIG
    assert rows["cleanup.policy"].type == tc.ConfigType.LIST
    assert all(e.doc for e in rows.values())


# ---- storage mapping -------------------------------------------------------------------------

def test_log_config_from_broker_and_overrides() -> None:
    broker = BrokerConfig.from_properties({"log.segment.bytes": "4096", "log.roll.hours": "2",
                                           "log.retention.bytes": "100000"})
    base = tc.log_config(broker)
    assert (base.segment_bytes, base.segment_ms, base.retention_bytes) == (
        4096, 2 * 3_600_000, 100000)
    assert base.max_message_bytes == 1048588 and base.flush_interval_ms == tc.LONG_MAX
    topic = tc.log_config(broker, {"segment.bytes": "1024", "retention.ms": "-1",
                                   "message.timestamp.type": "LogAppendTime",
                                   "preallocate": "true", "max.message.bytes": "77"},
                          base=LogConfig(flush_on_roll=True))
    assert (topic.segment_bytes, topic.retention_ms, topic.max_message_bytes) == (1024, -1, 77)
    assert topic.log_append_time and topic.preallocate and topic.flush_on_roll
    assert topic.segment_ms == 2 * 3_600_000


def test_broker_timestamp_bounds_reach_the_log_config_and_topics_override_them() -> None:
    """log.message.timestamp.before/after.max.ms in server.properties are the topics'
    defaults for message.timestamp.before/after.max.ms (record validation reads them)."""
    broker = BrokerConfig.from_properties({"log.message.timestamp.before.max.ms": "3600000",
                                           "log.message.timestamp.after.max.ms": "60000"})
    lc = tc.log_config(broker)
    assert (lc.message_timestamp_before_max_ms, lc.message_timestamp_after_max_ms) == \
        (3_600_000, 60_000)
    lc = tc.log_config(broker, {"message.timestamp.before.max.ms": "5"})
    assert lc.message_timestamp_before_max_ms == 5


# ---- Broker.log_config_for: built once per (broker config, topic overrides) -----------------

def test_log_config_for_is_reused_until_the_config_or_the_overrides_change() -> None:
    broker = Broker(BrokerConfig())
    first = broker.log_config_for("t")
    assert broker.log_config_for("t") is first           # nothing changed: the same object
    assert first.segment_bytes == 1024 ** 3
    # a /config/changes reload stores a new overrides dict: rebuilt with the override
    broker.topic_overrides["t"] = {"segment.bytes": "1048576"}
    assert broker.log_config_for("t").segment_bytes == 1048576
    # a dynamic broker change makes a new BrokerConfig: rebuilt with the new default
    broker.topic_overrides["t"] = {}
    broker.config = dataclasses.replace(broker.config, log_segment_bytes=2 * 1048576)
    assert broker.log_config_for("t").segment_bytes == 2 * 1048576
    assert broker.log_config_for("other").segment_bytes == 2 * 1048576
