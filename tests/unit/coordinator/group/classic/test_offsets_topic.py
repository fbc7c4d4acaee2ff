"""__consumer_offsets formats against bytes built by hand from Kafka's JSON facts."""

from __future__ import annotations

import struct

from coordinator.group.classic import offsets_topic as ot
from coordinator.group.classic.loader import LoadedPartition


def s16(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def test_offset_commit_key_v1_bytes() -> None:
    # int16 version 1 | group | topic | int32 partition
    expected = struct.pack(">h", 1) + s16("my-group") + s16("orders") + struct.pack(">i", 7)
    assert ot.offset_commit_key("my-group", "orders", 7) == expected
    assert ot.read_key(expected) == ot.OffsetKey("my-group", "orders", 7)
    # key version 0 has the same layout and is read as an offset key too
    assert ot.read_key(struct.pack(">h", 0) + expected[2:]) == ot.OffsetKey("my-group", "orders", 7)


def test_offset_commit_value_v3_bytes() -> None:
    # int16 3 | int64 offset | int32 leaderEpoch | metadata | int64 commitTimestamp
    expected = (struct.pack(">hqi", 3, 42, 5) + s16("meta") + struct.pack(">q", 1_700_000_000_123))
    value = ot.OffsetAndMetadata(offset=42, metadata="meta", commit_timestamp=1_700_000_000_123,
                                 leader_epoch=5)
    assert ot.offset_commit_value(value) == expected
    assert ot.read_offset_value(expected) == value


def test_offset_commit_value_v1_carries_expire_timestamp() -> None:
    # int16 1 | int64 offset | metadata | int64 commitTimestamp | int64 expireTimestamp
    expected = struct.pack(">hq", 1, 9) + s16("") + struct.pack(">qq", 100, 200)
    value = ot.OffsetAndMetadata(offset=9, commit_timestamp=100, expire_timestamp=200)
    assert ot.offset_commit_value(value) == expected
    assert ot.read_offset_value(expected) == value


def test_offset_commit_value_v0_and_v4_read() -> None:
    v0 = struct.pack(">hq", 0, 11) + s16("m") + struct.pack(">q", 5)
    assert ot.read_offset_value(v0) == ot.OffsetAndMetadata(11, "m", 5)
    # v4 flexible: compact string (len+1 uvarint) and an empty tagged-field trailer
    v4 = struct.pack(">hqi", 4, 12, 3) + b"\x02m" + struct.pack(">q", 6) + b"\x00"
    assert ot.read_offset_value(v4) == ot.OffsetAndMetadata(12, "m", 6, leader_epoch=3)


def test_group_metadata_key_and_value_v3_bytes() -> None:
    assert ot.group_metadata_key("g") == struct.pack(">h", 2) + s16("g")
    assert ot.read_key(ot.group_metadata_key("g")) == ot.GroupKey("g")
    member = ot.StoredMember("m-1", "inst", "client", "/127.0.0.1", 300000, 45000, b"\x01\x02", b"\x03")
    group = ot.StoredGroup("consumer", 4, "range", "m-1", 1234, (member,))
    expected = (struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 4) + s16("range")
                + s16("m-1") + struct.pack(">q", 1234) + struct.pack(">i", 1)
                + s16("m-1") + s16("inst") + s16("client") + s16("/127.0.0.1")
                + struct.pack(">ii", 300000, 45000)
                + struct.pack(">i", 2) + b"\x01\x02" + struct.pack(">i", 1) + b"\x03")
    assert ot.group_metadata_value(group) == expected
    assert ot.read_group_value(expected) == group


def test_empty_group_value_has_null_protocol_and_leader() -> None:
    group = ot.StoredGroup("consumer", 5, None, None, 99, ())
    data = ot.group_metadata_value(group)
    assert data == (struct.pack(">h", 3) + s16("consumer") + struct.pack(">ihhqi", 5, -1, -1, 99, 0))
    assert ot.read_group_value(data) == group


def test_unknown_key_version_is_reported_not_raised() -> None:
    assert ot.read_key(struct.pack(">h", 7) + b"junk") == ot.UnknownKey(7)


def test_replay_applies_tombstones_in_order() -> None:
    loaded = LoadedPartition()
    k1 = ot.offset_commit_key("g", "t", 0)
    k2 = ot.offset_commit_key("g", "t", 1)
    gk = ot.group_metadata_key("g")
    loaded.apply_all([
        (k1, ot.offset_commit_value(ot.OffsetAndMetadata(1))),
        (k2, ot.offset_commit_value(ot.OffsetAndMetadata(2))),
        (gk, ot.group_metadata_value(ot.StoredGroup("consumer", 1, "range", None, 1, ()))),
        (k1, ot.offset_commit_value(ot.OffsetAndMetadata(10))),
        (k2, None),
        (gk, None),
    ])
    assert loaded.offsets == {"g": {("t", 0): ot.OffsetAndMetadata(10)}}
    assert loaded.groups == {} and loaded.removed_groups == {"g"}
