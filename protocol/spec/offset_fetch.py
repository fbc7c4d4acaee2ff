"""OffsetFetch (API key 9), versions 0-9, flexible from 6.

v0 reads offsets kept in ZooKeeper, v1 those in __consumer_offsets; v2 accepts
a null Topics (every topic of the group) and adds a top-level ErrorCode; v3
adds throttle time to the response; v4 as v3 (responses sent before
throttling); v5 returns CommittedLeaderEpoch; v6 flexible; v7 adds
RequireStable (UNSTABLE_OFFSET_COMMIT while a transaction is pending); v8
batches several groups: the group-level request/response layout moves under
Groups (KIP-709), so v0-7 and v8+ use differently named structs; v9 adds
MemberId/MemberEpoch for the KIP-848 consumer protocol.
"""

from protocol.schema import field, message

REQUEST = message("OffsetFetchRequest", api_key=9, valid="0-9", flexible="6+", fields=[
    # v0-7: one group.
    field("GroupId", "string", "0-7"),
    field("Topics", "[]OffsetFetchRequestTopic", "0-7", nullable="2-7", fields=[
        field("Name", "string", "0-7"),
        field("PartitionIndexes", "[]int32", "0-7"),
    ]),
    # v8+: many groups; a null Topics means every topic of that group.
    field("Groups", "[]OffsetFetchRequestGroup", "8+", fields=[
        field("GroupId", "string", "8+"),
        field("MemberId", "string", "9+", nullable="9+", default=None, ignorable=True),
        field("MemberEpoch", "int32", "9+", default=-1, ignorable=True),
        field("Topics", "[]OffsetFetchRequestTopics", "8+", nullable="8+", fields=[
            field("Name", "string", "8+"),
            field("PartitionIndexes", "[]int32", "8+"),
        ]),
    ]),
    field("RequireStable", "bool", "7+", default=False),
])

RESPONSE = message("OffsetFetchResponse", api_key=9, valid="0-9", flexible="6+", fields=[
    field("ThrottleTimeMs", "int32", "3+", ignorable=True),
    # v0-7: one group.
    field("Topics", "[]OffsetFetchResponseTopic", "0-7", fields=[
        field("Name", "string", "0-7"),
        field("Partitions", "[]OffsetFetchResponsePartition", "0-7", fields=[
            field("PartitionIndex", "int32", "0-7"),
            field("CommittedOffset", "int64", "0-7"),
            field("CommittedLeaderEpoch", "int32", "5-7", default=-1, ignorable=True),
            field("Metadata", "string", "0-7", nullable="0-7"),
            field("ErrorCode", "int16", "0-7"),
        ]),
    ]),
    field("ErrorCode", "int16", "2-7", default=0, ignorable=True),
    # v8+: one entry per requested group, each with its own error code.
    field("Groups", "[]OffsetFetchResponseGroup", "8+", fields=[
        field("GroupId", "string", "8+"),
        field("Topics", "[]OffsetFetchResponseTopics", "8+", fields=[
            field("Name", "string", "8+"),
            field("Partitions", "[]OffsetFetchResponsePartitions", "8+", fields=[
                field("PartitionIndex", "int32", "8+"),
                field("CommittedOffset", "int64", "8+"),
                field("CommittedLeaderEpoch", "int32", "8+", default=-1, ignorable=True),
                field("Metadata", "string", "8+", nullable="8+"),
                field("ErrorCode", "int16", "8+"),
            ]),
        ]),
        field("ErrorCode", "int16", "8+", default=0),
    ]),
])
