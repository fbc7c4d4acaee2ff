"""OffsetForLeaderEpoch (API key 23), versions 0-4, flexible from 4.

Followers ask for the end offset of a leader epoch to truncate correctly
(KIP-101/279). v1 returns the LeaderEpoch as well; v2 adds CurrentLeaderEpoch
(fencing) and ThrottleTimeMs; v3 adds ReplicaId (default -2, a debug consumer
allowed past the high watermark); v4 flexible.
"""

from protocol.schema import field, message

REQUEST = message("OffsetForLeaderEpochRequest", api_key=23, valid="0-4", flexible="4+", fields=[
    field("ReplicaId", "int32", "3+", default=-2, ignorable=True),
    field("Topics", "[]OffsetForLeaderTopic", "0+", fields=[
        field("Topic", "string", "0+"),
        field("Partitions", "[]OffsetForLeaderPartition", "0+", fields=[
            field("Partition", "int32", "0+"),
            field("CurrentLeaderEpoch", "int32", "2+", default=-1, ignorable=True),
            field("LeaderEpoch", "int32", "0+"),
        ]),
    ]),
])

RESPONSE = message("OffsetForLeaderEpochResponse", api_key=23, valid="0-4", flexible="4+", fields=[
    field("ThrottleTimeMs", "int32", "2+", ignorable=True),
    field("Topics", "[]OffsetForLeaderTopicResult", "0+", fields=[
        field("Topic", "string", "0+"),
        field("Partitions", "[]EpochEndOffset", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("Partition", "int32", "0+"),
            field("LeaderEpoch", "int32", "1+", default=-1, ignorable=True),
            field("EndOffset", "int64", "0+", default=-1),
        ]),
    ]),
])
