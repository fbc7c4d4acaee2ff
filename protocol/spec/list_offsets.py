"""ListOffsets (API key 2), versions 0-9, flexible from 6.

v0 returns a list of old-style offsets (MaxNumOffsets); v1 returns a single
offset with its timestamp; v2 adds IsolationLevel and ThrottleTimeMs; v3 as v2;
v4 adds leader epochs for fencing; v5 as v4 (OFFSET_NOT_AVAILABLE); v6
flexible; v7 allows timestamp -3 (max timestamp, KIP-734); v8 allows -4 (local
log start, KIP-405); v9 allows -5 (last tiered offset, KIP-1005).
"""

from protocol.schema import field, message

REQUEST = message("ListOffsetsRequest", api_key=2, valid="0-9", flexible="6+", fields=[
    field("ReplicaId", "int32", "0+"),
    field("IsolationLevel", "int8", "2+"),
    field("Topics", "[]ListOffsetsTopic", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]ListOffsetsPartition", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("CurrentLeaderEpoch", "int32", "4+", default=-1, ignorable=True),
            field("Timestamp", "int64", "0+"),
            field("MaxNumOffsets", "int32", "0", default=1),
        ]),
    ]),
])

RESPONSE = message("ListOffsetsResponse", api_key=2, valid="0-9", flexible="6+", fields=[
    field("ThrottleTimeMs", "int32", "2+", ignorable=True),
    field("Topics", "[]ListOffsetsTopicResponse", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]ListOffsetsPartitionResponse", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("OldStyleOffsets", "[]int64", "0"),
            field("Timestamp", "int64", "1+", default=-1),
            field("Offset", "int64", "1+", default=-1),
            field("LeaderEpoch", "int32", "4+", default=-1),
        ]),
    ]),
])
