"""The records of ``__consumer_offsets``: Kafka's key and value formats, exactly.

Every record's key and value start with an int16 *schema version*, then the
struct of that version (Kafka's ``group-coordinator/.../message/*.json``)::

    offset commit   key   = int16 1 | OffsetCommitKey v1
                              group: string, topic: string, partition: int32
                    value = int16 3 | OffsetCommitValue v3
                              offset: int64, leaderEpoch: int32 (-1 = none),
                              metadata: string, commitTimestamp: int64
                    (v1 value, written when an old client asks for a retention
                     time: offset, metadata, commitTimestamp, expireTimestamp)
    group metadata  key   = int16 2 | GroupMetadataKey v2
                              group: string
                    value = int16 3 | GroupMetadataValue v3
                              protocolType: string, generation: int32,
                              protocol: string?, leader: string?,
                              currentStateTimestamp: int64,
                              members: [memberId, groupInstanceId?, clientId,
                                        clientHost, rebalanceTimeout: int32,
                                        sessionTimeout: int32,
                                        subscription: bytes, assignment: bytes]

(strings are int16-length prefixed, ``?`` = nullable with length -1; arrays
int32-counted; v4 values are flexible: compact forms plus tagged fields.)
A null value is a tombstone: the offset, or the whole group, is deleted.
Key versions 0 and 1 are offset commits, 2 group metadata; anything else is
ignored when loading, as Kafka does.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.codec import decode_prefixed, encode_prefixed, record_version
from protocol.internal_topics import (GROUP_METADATA_KEY, GROUP_METADATA_VALUE,
                                      OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE)

MEMBER_METADATA = GROUP_METADATA_VALUE.structs["MemberMetadata"]

OFFSET_KEY_VERSION = 1
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_KEY_VERSION = 2
GROUP_VALUE_VERSION = 3



# -- keys ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class UnknownKey:
    version: int


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return encode_prefixed(OFFSET_COMMIT_KEY, OFFSET_KEY_VERSION, group=group, topic=topic,
                           partition=partition)


def group_metadata_key(group: str) -> bytes:
    return encode_prefixed(GROUP_METADATA_KEY, GROUP_KEY_VERSION, group=group)


def read_key(data: bytes | memoryview) -> OffsetKey | GroupKey | UnknownKey:
    """Kafka's ``GroupMetadataManager.readMessageKey``."""
    version = record_version(data)
    if version in OFFSET_COMMIT_KEY.valid:
        _, k = decode_prefixed(OFFSET_COMMIT_KEY, data)
        return OffsetKey(k.group, k.topic, k.partition)
    if version in GROUP_METADATA_KEY.valid:
        _, k = decode_prefixed(GROUP_METADATA_KEY, data)
        return GroupKey(k.group)
    return UnknownKey(version)


# -- offset commit values --------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """One committed offset. ``leader_epoch`` -1 and ``expire_timestamp`` -1 mean none."""

    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int = -1
    expire_timestamp: int = -1


def offset_commit_value(o: OffsetAndMetadata) -> bytes:
    """v3, or v1 when the commit carries an explicit expire timestamp (Kafka's rule)."""
    if o.expire_timestamp >= 0:
        return encode_prefixed(OFFSET_COMMIT_VALUE, OFFSET_VALUE_VERSION_WITH_EXPIRY,
                               offset=o.offset, metadata=o.metadata,
                               commit_timestamp=o.commit_timestamp,
                               expire_timestamp=o.expire_timestamp)
    return encode_prefixed(OFFSET_COMMIT_VALUE, OFFSET_VALUE_VERSION, offset=o.offset,
                           leader_epoch=o.leader_epoch, metadata=o.metadata,
                           commit_timestamp=o.commit_timestamp)


def read_offset_value(data: bytes | memoryview) -> OffsetAndMetadata:
    version, v = decode_prefixed(OFFSET_COMMIT_VALUE, data)
    return OffsetAndMetadata(
        offset=v.offset, metadata=v.metadata, commit_timestamp=v.commit_timestamp,
        leader_epoch=v.leader_epoch if version >= 3 else -1,
        expire_timestamp=v.expire_timestamp if version == 1 else -1)


# -- group metadata values -------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class StoredMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class StoredGroup:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[StoredMember, ...]


def group_metadata_value(g: StoredGroup) -> bytes:
    members = [MEMBER_METADATA.new(
        member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
        client_host=m.client_host, rebalance_timeout=m.rebalance_timeout,
        session_timeout=m.session_timeout, subscription=m.subscription,
        assignment=m.assignment) for m in g.members]
    return encode_prefixed(GROUP_METADATA_VALUE, GROUP_VALUE_VERSION, protocol_type=g.protocol_type,
                           generation=g.generation, protocol=g.protocol, leader=g.leader,
                           current_state_timestamp=g.current_state_timestamp, members=members)


def read_group_value(data: bytes | memoryview) -> StoredGroup:
    version, v = decode_prefixed(GROUP_METADATA_VALUE, data)
    members = tuple(StoredMember(
        member_id=m.member_id, group_instance_id=m.group_instance_id if version >= 3 else None,
        client_id=m.client_id, client_host=m.client_host,
        # v0 has no rebalance timeout: Kafka uses the session timeout
        rebalance_timeout=m.rebalance_timeout if version >= 1 else m.session_timeout,
        session_timeout=m.session_timeout, subscription=bytes(m.subscription),
        assignment=bytes(m.assignment)) for m in v.members)
    return StoredGroup(protocol_type=v.protocol_type, generation=v.generation,
                       protocol=v.protocol, leader=v.leader,
                       current_state_timestamp=v.current_state_timestamp if version >= 2 else -1,
                       members=members)
