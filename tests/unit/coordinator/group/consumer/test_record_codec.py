"""coordinator.group.consumer.record_codec: typed records <-> __consumer_offsets bytes."""

from __future__ import annotations

import uuid

import pytest

from coordinator.group.consumer import record_codec as rc
from coordinator.group.consumer.model import ClassicMemberMetadata, MemberState, ResolvedRegex, \
    TopicMeta
from coordinator.group.consumer.records import CurrentAssignment, GroupEpoch, MemberSubscription, \
    RegexResolution, SubscriptionMetadata, TargetAssignmentEpoch, TargetAssignmentMember
from coordinator.group.classic import offsets_topic as ot
from protocol.codec import DecodeError

T1 = uuid.UUID("00000000-0000-0000-0000-000000000001")
T2 = uuid.UUID("5f0a8f6c-2d2e-4a6f-9c1e-7f1d7e3b2a10")

EXAMPLES = [
    GroupEpoch("g", 7),
    SubscriptionMetadata("g", (TopicMeta(T1, "a", 3, {0: frozenset({"r1", "r2"}),
                                                      2: frozenset({"r3"})}),
                               TopicMeta(T2, "b", 1, {}))),
    MemberSubscription("g", "m1", instance_id="i1", rack_id="r1", client_id="c",
                       client_host="/127.0.0.1", subscribed_topic_names=("a", "b"),
                       subscribed_topic_regex="x.*", server_assignor="range",
                       rebalance_timeout_ms=30000),
    MemberSubscription("g", "m2", classic=ClassicMemberMetadata(
        45000, [("range", b"\x00\x01"), ("cooperative-sticky", b"")])),
    TargetAssignmentEpoch("g", 6),
    TargetAssignmentMember("g", "m1", {T1: frozenset({0, 2}), T2: frozenset({0})}),
    CurrentAssignment("g", "m1", member_epoch=6, previous_member_epoch=5,
                      state=MemberState.UNREVOKED_PARTITIONS, assigned={T1: frozenset({0})},
                      pending_revocation={T2: frozenset({0})}),
    RegexResolution("g", "x.*", ResolvedRegex(frozenset({"xa", "xb"}), 12, 1700000000000)),
]

TOMBSTONES = [
    GroupEpoch("g", tombstone=True),
    SubscriptionMetadata("g", tombstone=True),
    MemberSubscription("g", "m1", tombstone=True),
    TargetAssignmentEpoch("g", tombstone=True),
    TargetAssignmentMember("g", "m1", tombstone=True),
    CurrentAssignment("g", "m1", tombstone=True),
    RegexResolution("g", "x.*", tombstone=True),
]


@pytest.mark.parametrize("record", EXAMPLES, ids=lambda r: type(r).__name__)
def test_round_trip(record: object) -> None:
    key, value = rc.encode(record)  # type: ignore[arg-type]
    assert value is not None
    assert rc.is_consumer_group_key(key)
    assert rc.decode(key, value) == record


@pytest.mark.parametrize("record", TOMBSTONES, ids=lambda r: type(r).__name__)
def test_tombstones(record: object) -> None:
    key, value = rc.encode(record)  # type: ignore[arg-type]
    assert value is None
    assert rc.decode(key, None) == record


def test_key_versions_are_kafkas() -> None:
    versions = [int.from_bytes(rc.encode(r)[0][:2], "big") for r in EXAMPLES]
    assert versions == [3, 4, 5, 5, 6, 7, 8, 16]


def test_bytes_are_kafkas_layout() -> None:
    # ConsumerGroupMetadataKey v3: int16 3, string "g"; value: int16 0, int32 epoch,
    # empty tagged-field section (flexible v0)
    assert rc.encode(GroupEpoch("g", 7)) == (bytes.fromhex("0003" "0001" "67"),
                                            bytes.fromhex("0000" "00000007" "00"))
    # ConsumerGroupCurrentMemberAssignmentKey v8 (group, member); value v0: epoch,
    # previous epoch, state int8, compact arrays of (uuid, compact int32 array, tags)
    key, value = rc.encode(CurrentAssignment("g", "m", member_epoch=2, previous_member_epoch=1,
                                             state=MemberState.STABLE,
                                             assigned={T1: frozenset({4, 1})}))
    assert key == bytes.fromhex("0008" "0001" "67" "0001" "6d")
    assert value == bytes.fromhex("0000" "00000002" "00000001" "00"
                                  "02" + T1.hex + "03" "00000001" "00000004" "00"
                                  "01" "00")
    # the classic member metadata travels as tagged field 0 of the member value
    _, v = rc.encode(MemberSubscription("g", "m", classic=ClassicMemberMetadata(10, [])))
    assert v is not None and v.endswith(bytes.fromhex("01" "00" "07" "01" "0000000a" "01" "00"))


def test_other_keys_are_not_consumer_group_records() -> None:
    offset_key = ot.offset_commit_key("g", "t", 0)
    group_key = ot.group_metadata_key("g")
    assert rc.decode(offset_key, b"") is None and rc.decode(group_key, None) is None
    assert not rc.is_consumer_group_key(offset_key) and not rc.is_consumer_group_key(b"")


def test_unknown_state_and_bad_bytes() -> None:
    key, value = rc.encode(CurrentAssignment("g", "m"))
    assert value is not None
    odd = value[:10] + bytes([42]) + value[11:]
    decoded = rc.decode(key, odd)
    assert isinstance(decoded, CurrentAssignment) and decoded.state == MemberState.UNKNOWN
    with pytest.raises(DecodeError):
        rc.decode(key, value[:-3])
    with pytest.raises(DecodeError):
        rc.decode(key, b"\x00\x01" + value[2:])   # value version 1 does not exist
