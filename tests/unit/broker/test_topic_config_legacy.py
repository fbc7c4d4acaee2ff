"""Legacy and deprecated topic configs accepted as Kafka 3.9 accepts them (issue 17)."""

from __future__ import annotations

import logging

import pytest

from broker import topic_config as tc
from broker.config import BrokerConfig

LONG_MAX = (1 << 63) - 1


@pytest.mark.parametrize("value", ["0.10.0.0", "0.10.0", "0.10.0-IV1", "0.8.2.2", "0.11.0",
                                   "1.0.0", "2.8", "2.8.1", "2.8-IV1", "3.0-IV1", "3.9"])
def test_message_format_versions_kafka_accepts(value: str) -> None:
    tc.validate({"message.format.version": value})


@pytest.mark.parametrize("value", ["latest", "0.10", "0.10.9", "4.0", "3.10", "2.8-beta", ""])
def test_message_format_versions_kafka_refuses(value: str) -> None:
    with pytest.raises(tc.InvalidConfig, match="is not a valid version") as e:
        tc.validate({"message.format.version": value})
    assert "message.format.version" in str(e.value)


def test_message_format_version_is_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="broker.topic_config"):
        tc.validate({"message.format.version": "0.10.0.0"})
    assert "message.format.version with value `0.10.0.0` is ignored" in caplog.text
    config = tc.log_config(BrokerConfig(), {"message.format.version": "0.10.0.0"})
    assert config == tc.log_config(BrokerConfig(), {})  # nothing of it reaches the log


def test_timestamp_keys_reach_the_log_config() -> None:
    config = tc.log_config(BrokerConfig(), {"message.timestamp.before.max.ms": "1000",
                                            "message.timestamp.after.max.ms": "2000",
                                            "message.timestamp.difference.max.ms": "3000"})
    assert (config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms,
            config.message_timestamp_difference_max_ms) == (1000, 2000, 3000)
    default = tc.log_config(BrokerConfig(), {})
    assert default.message_timestamp_before_max_ms == LONG_MAX
    assert default.message_timestamp_difference_max_ms == LONG_MAX


def test_other_deprecated_keys_still_accepted() -> None:
    tc.validate({"message.timestamp.difference.max.ms": "60000",
                 "message.downconversion.enable": "false"})
