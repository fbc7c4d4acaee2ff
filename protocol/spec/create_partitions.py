"""CreatePartitions (API key 37), versions 0-3, flexible from 2.

v1 same as v0 (answers before throttling on quota violation); v2 goes flexible;
v3 may return THROTTLING_QUOTA_EXCEEDED (KIP-599). A topic's Assignments is a
nullable array: null lets the broker place the new partitions.
"""

from protocol.schema import field, message

REQUEST = message("CreatePartitionsRequest", api_key=37, valid="0-3", flexible="2+", fields=[
    field("Topics", "[]CreatePartitionsTopic", "0+", fields=[
        field("Name", "string", "0+"),
        field("Count", "int32", "0+"),
        field("Assignments", "[]CreatePartitionsAssignment", "0+", nullable="0+", fields=[
            field("BrokerIds", "[]int32", "0+"),
        ]),
    ]),
    field("TimeoutMs", "int32", "0+"),
    field("ValidateOnly", "bool", "0+"),
])

RESPONSE = message("CreatePartitionsResponse", api_key=37, valid="0-3", flexible="2+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Results", "[]CreatePartitionsTopicResult", "0+", fields=[
        field("Name", "string", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+", default=None),
    ]),
])
