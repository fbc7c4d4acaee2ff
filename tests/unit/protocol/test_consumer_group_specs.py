"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69): our declarations at every
version, against hand-derived bytes of Kafka 4.0's layouts (the random round trips and
the Java cross-check cover them too; kafka-clients 3.9.1 knows only v0 of each)."""

from __future__ import annotations

import uuid

import pytest

from protocol.codec import decode, encode
from protocol.spec import api

T = uuid.UUID("00000000-0000-0000-0000-0000000000ab")
HB = api(68)
DESCRIBE = api(69)


def test_versions_are_kafka_4_0s() -> None:
    assert (HB.request.valid.lo, HB.request.valid.hi) == (0, 1)
    assert (DESCRIBE.request.valid.lo, DESCRIBE.request.valid.hi) == (0, 1)
    assert all(HB.request.is_flexible(v) and DESCRIBE.response.is_flexible(v) for v in (0, 1))


def test_heartbeat_request_regex_only_from_v1() -> None:
    req = HB.request.new(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=300,
                         subscribed_topic_names=["t"], subscribed_topic_regex="x.*",
                         topic_partitions=[])
    v0, v1 = encode(req, 0), encode(req, 1)
    # v1 = v0 with the nullable compact string "x.*" after SubscribedTopicNames
    assert v1 == v0.replace(bytes.fromhex("0202" "74" "00"), bytes.fromhex("0202" "74" "04")
                            + b"x.*" + b"\x00", 1)
    assert decode(HB.request, v0, 0).subscribed_topic_regex is None
    assert decode(HB.request, v1, 1).subscribed_topic_regex == "x.*"


def test_heartbeat_request_nulls_mean_unchanged() -> None:
    data = encode(HB.request.new(group_id="g", member_id="m", member_epoch=3), 1)
    # group, member, epoch, then InstanceId/RackId null, RebalanceTimeoutMs -1, and null
    # SubscribedTopicNames / Regex / ServerAssignor / TopicPartitions, no tags
    assert data == bytes.fromhex("0267" "026d" "00000003" "00" "00" "ffffffff" "00" "00" "00"
                                 "00" "00")
    back = decode(HB.request, data, 1)
    assert back.subscribed_topic_names is None and back.topic_partitions is None


@pytest.mark.parametrize("version", [0, 1])
def test_heartbeat_response_assignment_is_a_nullable_struct(version: int) -> None:
    tp = HB.response.structs["TopicPartitions"].new(topic_id=T, partitions=[1])
    with_assignment = HB.response.new(member_id="m", member_epoch=2, heartbeat_interval_ms=500,
                                      assignment=HB.response.structs["Assignment"].new(
                                          topic_partitions=[tp]))
    data = encode(with_assignment, version)
    assert data.endswith(bytes.fromhex("01" "02") + T.bytes + bytes.fromhex("02" "00000001"
                                                                            "00" "00" "00"))
    assert decode(HB.response, data, version) == with_assignment
    without = encode(HB.response.new(member_epoch=2), version)
    assert without.endswith(bytes.fromhex("ff" "00"))        # null marker, no tags
    assert decode(HB.response, without, version).assignment is None


def test_describe_member_type_from_v1() -> None:
    member = DESCRIBE.response.structs["Member"].new(member_id="m", member_epoch=4,
                                                    member_type=1)
    group = DESCRIBE.response.structs["DescribedGroup"].new(group_id="g", members=[member])
    msg = DESCRIBE.response.new(groups=[group])
    v0, v1 = encode(msg, 0), encode(msg, 1)
    assert len(v1) == len(v0) + 1
    assert decode(DESCRIBE.response, v0, 0).groups[0].members[0].member_type == -1
    assert decode(DESCRIBE.response, v1, 1).groups[0].members[0].member_type == 1
