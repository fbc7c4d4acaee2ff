"""protocol.api_keys against Kafka 3.9, kafka-python's key table and our own API specs."""

from __future__ import annotations

import pytest

from protocol.api_keys import ApiKey, api_name


def test_keys_are_unique_and_contiguous_up_to_kafka_39_max() -> None:
    assert len(ApiKey.__members__) == len(ApiKey)
    assert sorted(int(k) for k in ApiKey) == list(range(0, 88))


@pytest.mark.parametrize(
    ("key", "name", "wire_name"),
    [
        (0, "PRODUCE", "Produce"),
        (1, "FETCH", "Fetch"),
        (3, "METADATA", "Metadata"),
        (4, "LEADER_AND_ISR", "LeaderAndIsr"),
        (7, "CONTROLLED_SHUTDOWN", "ControlledShutdown"),
        (18, "API_VERSIONS", "ApiVersions"),
        (22, "INIT_PRODUCER_ID", "InitProducerId"),
        (23, "OFFSET_FOR_LEADER_EPOCH", "OffsetForLeaderEpoch"),
        (56, "ALTER_PARTITION", "AlterPartition"),
        (60, "DESCRIBE_CLUSTER", "DescribeCluster"),
        (87, "READ_SHARE_GROUP_STATE_SUMMARY", "ReadShareGroupStateSummary"),
    ],
)
def test_known_keys(key: int, name: str, wire_name: str) -> None:
    assert ApiKey(key).name == name
    assert ApiKey(key).wire_name == wire_name
    assert ApiKey.from_wire_name(wire_name) is ApiKey(key)
    assert api_name(key) == wire_name


def test_unknown_key_names() -> None:
    assert api_name(88) == "Unknown(88)"
    assert api_name(-1) == "Unknown(-1)"
    with pytest.raises(KeyError):
        ApiKey.from_wire_name("Produces")


def test_wire_names_agree_with_kafka_python() -> None:
    theirs = pytest.importorskip("kafka.protocol.api_key").ApiKey
    checked = 0
    for key in theirs:
        if int(key) > 87:  # added after Kafka 3.9
            continue
        if int(key) == 74:  # ListClientMetricsResources, renamed ListConfigResources in Kafka 4.1
            continue
        assert ApiKey(int(key)).wire_name == key.name
        checked += 1
    assert checked >= 80


def test_every_spec_module_names_its_key() -> None:
    spec = pytest.importorskip("protocol.spec")
    apis = spec.all_apis()
    assert apis
    for key, api in apis.items():
        assert ApiKey(key).wire_name == api.name
