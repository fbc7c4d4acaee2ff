"""DeleteRecords (API key 21), versions 0-2, flexible from 2.

Advances partitions' log start offsets. v1 as v0 (throttling happens after the
response); v2 flexible.
"""

from protocol.schema import field, message

REQUEST = message("DeleteRecordsRequest", api_key=21, valid="0-2", flexible="2+", fields=[
    field("Topics", "[]DeleteRecordsTopic", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]DeleteRecordsPartition", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("Offset", "int64", "0+"),
        ]),
    ]),
    field("TimeoutMs", "int32", "0+"),
])

RESPONSE = message("DeleteRecordsResponse", api_key=21, valid="0-2", flexible="2+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Topics", "[]DeleteRecordsTopicResult", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]DeleteRecordsPartitionResult", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("LowWatermark", "int64", "0+"),
            field("ErrorCode", "int16", "0+"),
        ]),
    ]),
])
