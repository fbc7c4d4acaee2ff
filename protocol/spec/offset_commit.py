"""OffsetCommit (API key 8), versions 0-9, flexible from 8.

v1 adds the generation and member id, and a per-partition CommitTimestamp; v2
replaces the commit timestamp with a request-wide RetentionTimeMs; v3 adds
throttle time to the response; v4 as v3 (responses sent before throttling); v5
drops RetentionTimeMs (retention is broker configuration only); v6 adds
CommittedLeaderEpoch; v7 adds GroupInstanceId (KIP-345); v8 flexible; v9 as v8
but usable with the KIP-848 consumer protocol, where the generation field
carries the member epoch (may answer STALE_MEMBER_EPOCH, GROUP_ID_NOT_FOUND).
"""

from protocol.schema import field, message

REQUEST = message("OffsetCommitRequest", api_key=8, valid="0-9", flexible="8+", fields=[
    field("GroupId", "string", "0+"),
    field("GenerationIdOrMemberEpoch", "int32", "1+", default=-1, ignorable=True),
    field("MemberId", "string", "1+", ignorable=True),
    field("GroupInstanceId", "string", "7+", nullable="7+", default=None),
    field("RetentionTimeMs", "int64", "2-4", default=-1, ignorable=True),
    field("Topics", "[]OffsetCommitRequestTopic", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]OffsetCommitRequestPartition", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("CommittedOffset", "int64", "0+"),
            field("CommittedLeaderEpoch", "int32", "6+", default=-1, ignorable=True),
            field("CommitTimestamp", "int64", "1", default=-1),   # v1 only
            field("CommittedMetadata", "string", "0+", nullable="0+"),
        ]),
    ]),
])

RESPONSE = message("OffsetCommitResponse", api_key=8, valid="0-9", flexible="8+", fields=[
    field("ThrottleTimeMs", "int32", "3+", ignorable=True),
    field("Topics", "[]OffsetCommitResponseTopic", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]OffsetCommitResponsePartition", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
        ]),
    ]),
])
