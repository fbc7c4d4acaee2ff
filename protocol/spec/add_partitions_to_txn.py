"""AddPartitionsToTxn (API key 24), versions 0-5, flexible from 3.

v1 as v0 (responses sent before throttling); v2 may return PRODUCER_FENCED; v3
flexible; v4 is the broker-to-coordinator form (KIP-890): it batches several
Transactions, each with a VerifyOnly flag, and the response gains a top-level
ErrorCode and per-transaction results. The single-transaction v0-3 fields keep
Kafka's "V3AndBelow" names. v5 may return TRANSACTION_ABORTABLE. Clients send
v0-3; brokers send v4+.

The topic/partition structs are shared by both layouts, so they are declared
once below (Kafka's commonStructs).
"""

from protocol.schema import FieldSpec, field, message


def _topic(name: str, versions: str) -> FieldSpec:
    """A []AddPartitionsToTxnTopic field: partitions to add, by topic."""
    return field(name, "[]AddPartitionsToTxnTopic", versions, fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]int32", "0+"),
    ])


def _topic_results(name: str, versions: str) -> FieldSpec:
    """A []AddPartitionsToTxnTopicResult field: per-partition error codes, by topic."""
    return field(name, "[]AddPartitionsToTxnTopicResult", versions, fields=[
        field("Name", "string", "0+"),
        field("ResultsByPartition", "[]AddPartitionsToTxnPartitionResult", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("PartitionErrorCode", "int16", "0+"),
        ]),
    ])


REQUEST = message("AddPartitionsToTxnRequest", api_key=24, valid="0-5", flexible="3+", fields=[
    # v4+: many transactions (sent by brokers).
    field("Transactions", "[]AddPartitionsToTxnTransaction", "4+", fields=[
        field("TransactionalId", "string", "4+"),
        field("ProducerId", "int64", "4+"),
        field("ProducerEpoch", "int16", "4+"),
        field("VerifyOnly", "bool", "4+", default=False),
        _topic("Topics", "4+"),
    ]),
    # v0-3: one transaction (sent by clients).
    field("V3AndBelowTransactionalId", "string", "0-3"),
    field("V3AndBelowProducerId", "int64", "0-3"),
    field("V3AndBelowProducerEpoch", "int16", "0-3"),
    _topic("V3AndBelowTopics", "0-3"),
])

RESPONSE = message("AddPartitionsToTxnResponse", api_key=24, valid="0-5", flexible="3+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "4+", ignorable=True),
    field("ResultsByTransaction", "[]AddPartitionsToTxnResult", "4+", fields=[
        field("TransactionalId", "string", "4+"),
        _topic_results("TopicResults", "4+"),
    ]),
    _topic_results("ResultsByTopicV3AndBelow", "0-3"),
])
