"""Produce (API key 0), versions 0-11, flexible from 9.

v1-v2 as v0 (v2: LogAppendTimeMs in the response); v3 adds TransactionalId and
record batches (magic 2); v4-v7 as v3 (v7: zstd); v8 adds RecordErrors and
ErrorMessage (KIP-467); v9 flexible; v10 adds CurrentLeader/NodeEndpoints
tagged fields (KIP-951); v11 may return TRANSACTION_ABORTABLE (KIP-890).
"""

from protocol.schema import field, message

REQUEST = message("ProduceRequest", api_key=0, valid="0-11", flexible="9+", fields=[
    field("TransactionalId", "string", "3+", nullable="3+", default=None),
    field("Acks", "int16", "0+"),
    field("TimeoutMs", "int32", "0+"),
    field("TopicData", "[]TopicProduceData", "0+", fields=[
        field("Name", "string", "0+"),
        field("PartitionData", "[]PartitionProduceData", "0+", fields=[
            field("Index", "int32", "0+"),
            field("Records", "records", "0+", nullable="0+"),
        ]),
    ]),
])

RESPONSE = message("ProduceResponse", api_key=0, valid="0-11", flexible="9+", fields=[
    field("Responses", "[]TopicProduceResponse", "0+", fields=[
        field("Name", "string", "0+"),
        field("PartitionResponses", "[]PartitionProduceResponse", "0+", fields=[
            field("Index", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("BaseOffset", "int64", "0+"),
            field("LogAppendTimeMs", "int64", "2+", default=-1, ignorable=True),
            field("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
            field("RecordErrors", "[]BatchIndexAndErrorMessage", "8+", ignorable=True, fields=[
                field("BatchIndex", "int32", "8+"),
                field("BatchIndexErrorMessage", "string", "8+", nullable="8+", default=None),
            ]),
            field("ErrorMessage", "string", "8+", nullable="8+", default=None, ignorable=True),
            field("CurrentLeader", "LeaderIdAndEpoch", "10+", tagged="10+", tag=0, fields=[
                field("LeaderId", "int32", "10+", default=-1),
                field("LeaderEpoch", "int32", "10+", default=-1),
            ]),
        ]),
    ]),
    field("ThrottleTimeMs", "int32", "1+", default=0, ignorable=True),
    field("NodeEndpoints", "[]NodeEndpoint", "10+", tagged="10+", tag=0, fields=[
        field("NodeId", "int32", "10+"),
        field("Host", "string", "10+"),
        field("Port", "int32", "10+"),
        field("Rack", "string", "10+", nullable="10+", default=None),
    ]),
])
