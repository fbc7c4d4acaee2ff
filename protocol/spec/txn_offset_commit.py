"""TxnOffsetCommit (API key 28), versions 0-4, flexible from 3.

v1 as v0 (responses sent before throttling); v2 adds CommittedLeaderEpoch; v3
flexible and adds GenerationId, MemberId and GroupInstanceId so the group
coordinator can fence zombie members (KIP-447), with the matching errors; v4
may return TRANSACTION_ABORTABLE (KIP-890).
"""

from protocol.schema import field, message

REQUEST = message("TxnOffsetCommitRequest", api_key=28, valid="0-4", flexible="3+", fields=[
    field("TransactionalId", "string", "0+"),
    field("GroupId", "string", "0+"),
    field("ProducerId", "int64", "0+"),
    field("ProducerEpoch", "int16", "0+"),
    field("GenerationId", "int32", "3+", default=-1),
    field("MemberId", "string", "3+", default=""),
    field("GroupInstanceId", "string", "3+", nullable="3+", default=None),
    field("Topics", "[]TxnOffsetCommitRequestTopic", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]TxnOffsetCommitRequestPartition", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("CommittedOffset", "int64", "0+"),
            field("CommittedLeaderEpoch", "int32", "2+", default=-1, ignorable=True),
            field("CommittedMetadata", "string", "0+", nullable="0+"),
        ]),
    ]),
])

RESPONSE = message("TxnOffsetCommitResponse", api_key=28, valid="0-4", flexible="3+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Topics", "[]TxnOffsetCommitResponseTopic", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]TxnOffsetCommitResponsePartition", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
        ]),
    ]),
])
