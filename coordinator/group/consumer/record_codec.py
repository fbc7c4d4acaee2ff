"""Typed consumer-group records (records.py) <-> __consumer_offsets key/value bytes.

Layouts are protocol/internal_topics.py's ``CONSUMER_GROUP_*`` schemas, Kafka's
group-coordinator messages: a key is an int16 *key version* naming the record
type, then GroupId (and MemberId / RegularExpression); a value is int16 0 then
the flexible v0 struct; a null value is a tombstone.

    key version  key fields                 record (records.py)
    3            GroupId                    GroupEpoch
    4            GroupId                    SubscriptionMetadata
    5            GroupId, MemberId          MemberSubscription
    6            GroupId                    TargetAssignmentEpoch
    7            GroupId, MemberId          TargetAssignmentMember
    8            GroupId, MemberId          CurrentAssignment
    16           GroupId, RegularExpression RegexResolution

Assignments are written sorted (topic id, then partition) so equal states give equal
bytes; Kafka writes its map order, which readers do not depend on. Partition racks
are written only for partitions that have racks (Kafka lists every partition when
racks are known; an absent partition reads back as "no racks" either way).
``decode`` answers None for key versions that are not a consumer group's (offset
commits 0/1, classic group metadata 2, share groups...), so the loader can route.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable

from coordinator.group.consumer.model import Assignment, ClassicMemberMetadata, MemberState, \
    ResolvedRegex, TopicMeta
from coordinator.group.consumer.records import CurrentAssignment, GroupEpoch, MemberSubscription, \
    Record, RegexResolution, SubscriptionMetadata, TargetAssignmentEpoch, \
    TargetAssignmentMember
from protocol import internal_topics as it
from protocol.codec import decode_prefixed, encode as encode_struct, encode_prefixed, \
    record_version
from protocol.schema import MessageSpec, Struct, StructSpec

KeyValue = tuple[bytes, bytes | None]

GROUP_EPOCH_KEY = 3
SUBSCRIPTION_METADATA_KEY = 4
MEMBER_SUBSCRIPTION_KEY = 5
TARGET_ASSIGNMENT_EPOCH_KEY = 6
TARGET_ASSIGNMENT_MEMBER_KEY = 7
CURRENT_ASSIGNMENT_KEY = 8
REGEX_KEY = 16
KEY_VERSIONS = frozenset({GROUP_EPOCH_KEY, SUBSCRIPTION_METADATA_KEY, MEMBER_SUBSCRIPTION_KEY,
                          TARGET_ASSIGNMENT_EPOCH_KEY, TARGET_ASSIGNMENT_MEMBER_KEY,
                          CURRENT_ASSIGNMENT_KEY, REGEX_KEY})
VALUE_VERSION = 0
_VALUE_PREFIX = VALUE_VERSION.to_bytes(2, "big")

_KEYS: dict[int, MessageSpec] = {v: key for v, (key, _) in it.CONSUMER_GROUP_RECORDS.items()}
assert set(_KEYS) == KEY_VERSIONS

_PARTITION_TOPIC = it.CONSUMER_GROUP_PARTITION_METADATA_VALUE.structs["TopicMetadata"]
_PARTITION_RACKS = it.CONSUMER_GROUP_PARTITION_METADATA_VALUE.structs["PartitionMetadata"]
_CLASSIC = it.CONSUMER_GROUP_MEMBER_METADATA_VALUE.structs["ClassicMemberMetadata"]
_CLASSIC_PROTOCOL = it.CONSUMER_GROUP_MEMBER_METADATA_VALUE.structs["ClassicProtocol"]
_TARGET_TP = it.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE.structs["TopicPartition"]
_CURRENT_TP = it.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE.structs["TopicPartitions"]


def is_consumer_group_key(key: bytes | memoryview) -> bool:
    """Whether ``key`` (a __consumer_offsets record key) is a consumer group record's."""
    return len(key) >= 2 and record_version(key) in KEY_VERSIONS


# -- encode ------------------------------------------------------------------------------

def encode(record: Record) -> KeyValue:
    """``record`` -> (key bytes, value bytes, or None for a tombstone)."""
    g = record.group_id
    if isinstance(record, GroupEpoch):
        key = _key(GROUP_EPOCH_KEY, group_id=g)
        return key, None if record.tombstone else _value(
            it.CONSUMER_GROUP_METADATA_VALUE, epoch=record.epoch)
    if isinstance(record, SubscriptionMetadata):
        key = _key(SUBSCRIPTION_METADATA_KEY, group_id=g)
        if record.tombstone:
            return key, None
        topics = [_PARTITION_TOPIC.new(
            topic_id=t.topic_id, topic_name=t.name, num_partitions=t.partitions,
            partition_metadata=[_PARTITION_RACKS.new(partition=p, racks=sorted(racks))
                                for p, racks in sorted(t.racks.items()) if racks])
            for t in sorted(record.topics, key=lambda t: t.name)]
        return key, _value(it.CONSUMER_GROUP_PARTITION_METADATA_VALUE, topics=topics)
    if isinstance(record, MemberSubscription):
        key = _key(MEMBER_SUBSCRIPTION_KEY, group_id=g, member_id=record.member_id)
        if record.tombstone:
            return key, None
        classic = None
        if record.classic is not None:
            classic = _CLASSIC.new(
                session_timeout_ms=record.classic.session_timeout_ms,
                supported_protocols=[_CLASSIC_PROTOCOL.new(name=n, metadata=bytes(m))
                                     for n, m in record.classic.protocols])
        return key, _value(
            it.CONSUMER_GROUP_MEMBER_METADATA_VALUE, instance_id=record.instance_id,
            rack_id=record.rack_id, client_id=record.client_id,
            client_host=record.client_host,
            subscribed_topic_names=list(record.subscribed_topic_names),
            subscribed_topic_regex=record.subscribed_topic_regex,
            rebalance_timeout_ms=record.rebalance_timeout_ms,
            server_assignor=record.server_assignor, classic_member_metadata=classic)
    if isinstance(record, TargetAssignmentEpoch):
        key = _key(TARGET_ASSIGNMENT_EPOCH_KEY, group_id=g)
        return key, None if record.tombstone else _value(
            it.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
            assignment_epoch=record.assignment_epoch)
    if isinstance(record, TargetAssignmentMember):
        key = _key(TARGET_ASSIGNMENT_MEMBER_KEY, group_id=g, member_id=record.member_id)
        return key, None if record.tombstone else _value(
            it.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
            topic_partitions=_write_assignment(_TARGET_TP, record.partitions))
    if isinstance(record, CurrentAssignment):
        key = _key(CURRENT_ASSIGNMENT_KEY, group_id=g, member_id=record.member_id)
        return key, None if record.tombstone else _value(
            it.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
            member_epoch=record.member_epoch,
            previous_member_epoch=record.previous_member_epoch, state=int(record.state),
            assigned_partitions=_write_assignment(_CURRENT_TP, record.assigned),
            partitions_pending_revocation=_write_assignment(_CURRENT_TP,
                                                            record.pending_revocation))
    if isinstance(record, RegexResolution):
        key = _key(REGEX_KEY, group_id=g, regular_expression=record.regex)
        if record.tombstone or record.resolved is None:
            return key, None
        return key, _value(it.CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
                           topics=sorted(record.resolved.topics),
                           version=record.resolved.version,
                           timestamp=record.resolved.timestamp_ms)
    raise TypeError(f"not a consumer group record: {record!r}")


def encode_all(records: Iterable[Record]) -> list[KeyValue]:
    return [encode(r) for r in records]


def _key(version: int, **values: object) -> bytes:
    return encode_prefixed(_KEYS[version], version, **values)


def _value(spec: MessageSpec, **values: object) -> bytes:
    # built here, not with encode_prefixed(**values): a field may be named "version"
    return _VALUE_PREFIX + encode_struct(spec.new(**values), VALUE_VERSION)


def _write_assignment(tp_struct: StructSpec, assignment: Assignment | None) -> list[Struct]:
    if not assignment:
        return []
    return [tp_struct.new(topic_id=topic_id, partitions=sorted(parts))
            for topic_id, parts in sorted(assignment.items(), key=lambda kv: str(kv[0]))
            if parts]


# -- decode ------------------------------------------------------------------------------

def decode(key: bytes | memoryview, value: bytes | memoryview | None) -> Record | None:
    """(key, value) -> the typed record; None when the key is not a consumer group's.
    Raises protocol.codec.DecodeError (or struct.error) on malformed bytes."""
    version = record_version(key)
    spec = _KEYS.get(version)
    if spec is None:
        return None
    _, k = decode_prefixed(spec, key)
    g = k.group_id
    tomb = value is None
    if version == GROUP_EPOCH_KEY:
        if tomb:
            return GroupEpoch(g, tombstone=True)
        return GroupEpoch(g, _read(it.CONSUMER_GROUP_METADATA_VALUE, value).epoch)
    if version == SUBSCRIPTION_METADATA_KEY:
        if tomb:
            return SubscriptionMetadata(g, tombstone=True)
        v = _read(it.CONSUMER_GROUP_PARTITION_METADATA_VALUE, value)
        return SubscriptionMetadata(g, tuple(
            TopicMeta(t.topic_id, t.topic_name, t.num_partitions,
                      {p.partition: frozenset(p.racks) for p in t.partition_metadata})
            for t in v.topics))
    if version == MEMBER_SUBSCRIPTION_KEY:
        if tomb:
            return MemberSubscription(g, k.member_id, tombstone=True)
        v = _read(it.CONSUMER_GROUP_MEMBER_METADATA_VALUE, value)
        classic = None
        if v.classic_member_metadata is not None:
            c = v.classic_member_metadata
            classic = ClassicMemberMetadata(c.session_timeout_ms, [
                (p.name, bytes(p.metadata)) for p in c.supported_protocols])
        return MemberSubscription(
            g, k.member_id, instance_id=v.instance_id, rack_id=v.rack_id,
            client_id=v.client_id, client_host=v.client_host,
            subscribed_topic_names=tuple(v.subscribed_topic_names),
            subscribed_topic_regex=v.subscribed_topic_regex,
            server_assignor=v.server_assignor, rebalance_timeout_ms=v.rebalance_timeout_ms,
            classic=classic)
    if version == TARGET_ASSIGNMENT_EPOCH_KEY:
        if tomb:
            return TargetAssignmentEpoch(g, tombstone=True)
        v = _read(it.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, value)
        return TargetAssignmentEpoch(g, v.assignment_epoch)
    if version == TARGET_ASSIGNMENT_MEMBER_KEY:
        if tomb:
            return TargetAssignmentMember(g, k.member_id, tombstone=True)
        v = _read(it.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE, value)
        return TargetAssignmentMember(g, k.member_id, _read_assignment(v.topic_partitions))
    if version == CURRENT_ASSIGNMENT_KEY:
        if tomb:
            return CurrentAssignment(g, k.member_id, tombstone=True)
        v = _read(it.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE, value)
        return CurrentAssignment(
            g, k.member_id, member_epoch=v.member_epoch,
            previous_member_epoch=v.previous_member_epoch, state=_state(v.state),
            assigned=_read_assignment(v.assigned_partitions),
            pending_revocation=_read_assignment(v.partitions_pending_revocation))
    # REGEX_KEY
    if tomb:
        return RegexResolution(g, k.regular_expression, tombstone=True)
    v = _read(it.CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE, value)
    return RegexResolution(g, k.regular_expression,
                           ResolvedRegex(frozenset(v.topics), v.version, v.timestamp))


def _read(spec: MessageSpec, value: bytes | memoryview | None) -> Struct:
    assert value is not None
    return decode_prefixed(spec, value)[1]


def _read_assignment(tps: list[Struct]) -> Assignment:
    out: dict[uuid.UUID, frozenset[int]] = {}
    for tp in tps:
        if tp.partitions:
            out[tp.topic_id] = out.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return out


def _state(value: int) -> MemberState:
    try:
        return MemberState(value)
    except ValueError:
        return MemberState.UNKNOWN


DECODE_ERRORS: tuple[type[Exception], ...] = (ValueError, struct.error)
