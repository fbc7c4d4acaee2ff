"""DescribeProducers (API key 61), version 0, flexible (KIP-664).

The active producers of partitions, asked of each partition's leader: the state
its producer-state manager keeps (epoch, last sequence and timestamp, the
coordinator epoch of the last marker, the first offset of an open transaction).
"""

from protocol.schema import field, message

REQUEST = message("DescribeProducersRequest", api_key=61, valid="0", flexible="0+", fields=[
    field("Topics", "[]TopicRequest", "0+", fields=[
        field("Name", "string", "0+"),
        field("PartitionIndexes", "[]int32", "0+"),
    ]),
])

RESPONSE = message("DescribeProducersResponse", api_key=61, valid="0", flexible="0+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Topics", "[]TopicResponse", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]PartitionResponse", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+", default=None),
            field("ActiveProducers", "[]ProducerState", "0+", fields=[
                field("ProducerId", "int64", "0+"),
                field("ProducerEpoch", "int32", "0+"),
                field("LastSequence", "int32", "0+", default=-1),
                field("LastTimestamp", "int64", "0+", default=-1),
                field("CoordinatorEpoch", "int32", "0+"),
                field("CurrentTxnStartOffset", "int64", "0+", default=-1),
            ]),
        ]),
    ]),
])
