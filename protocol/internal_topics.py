"""The on-disk record schemas of Kafka's internal topics, declared once: the broker
writes and reads them (broker/coordinator/offsets_topic.py, broker/transaction/
txn_log.py), ``pybroker dump-log`` decodes them (tools/dump_log_decoders.py).

Every record's key and value is an int16 schema version followed by the struct of
that version (Kafka's ``group-coordinator`` and ``transaction-coordinator``
``message/*.json``); the encoding and the version prefix are protocol.codec's.

    __consumer_offsets    OffsetCommitKey v0-1 / OffsetCommitValue v0-4 (key
                          versions 0 and 1), GroupMetadataKey v2 /
                          GroupMetadataValue v0-4 (v4 values flexible)
    __transaction_state   TransactionLogKey v0 / TransactionLogValue v0-1 (v1
                          flexible, with tagged fields)
    group members' bytes  ConsumerProtocolSubscription v0-3 and
                          ConsumerProtocolAssignment v0-3: the "consumer"
                          protocol type's metadata inside GroupMetadataValue
                          (client/consumer_protocol.py reads and writes them by
                          hand on the client's hot path; these are for decoding)

Field layouts are in each module that uses them; these are the layouts themselves.
"""

from __future__ import annotations

from protocol.schema import field, message

# -- __consumer_offsets ----------------------------------------------------------------

OFFSET_COMMIT_KEY = message("OffsetCommitKey", api_key=-1, valid="0-1", flexible="none",
                            kind="data", fields=[
    field("Group", "string", "0-1"),
    field("Topic", "string", "0-1"),
    field("Partition", "int32", "0-1"),
])

OFFSET_COMMIT_VALUE = message("OffsetCommitValue", api_key=-1, valid="0-4", flexible="4+",
                              kind="data", fields=[
    field("Offset", "int64", "0+"),
    field("LeaderEpoch", "int32", "3+", default=-1, ignorable=True),
    field("Metadata", "string", "0+"),
    field("CommitTimestamp", "int64", "0+"),
    field("ExpireTimestamp", "int64", "1", default=-1, ignorable=True),
])

GROUP_METADATA_KEY = message("GroupMetadataKey", api_key=-1, valid="2", flexible="none",
                             kind="data", fields=[
    field("Group", "string", "2"),
])

GROUP_METADATA_VALUE = message("GroupMetadataValue", api_key=-1, valid="0-4", flexible="4+",
                               kind="data", fields=[
    field("ProtocolType", "string", "0+"),
    field("Generation", "int32", "0+"),
    field("Protocol", "string", "0+", nullable="0+"),
    field("Leader", "string", "0+", nullable="0+"),
    field("CurrentStateTimestamp", "int64", "2+", default=-1, ignorable=True),
    field("Members", "[]MemberMetadata", "0+", fields=[
        field("MemberId", "string", "0+"),
        field("GroupInstanceId", "string", "3+", nullable="3+", default=None, ignorable=True),
        field("ClientId", "string", "0+"),
        field("ClientHost", "string", "0+"),
        field("RebalanceTimeout", "int32", "1+", default=-1, ignorable=True),
        field("SessionTimeout", "int32", "0+"),
        field("Subscription", "bytes", "0+"),
        field("Assignment", "bytes", "0+"),
    ]),
])

# -- the consumer protocol's member metadata --------------------------------------------

CONSUMER_SUBSCRIPTION = message("ConsumerProtocolSubscription", api_key=-1, valid="0-3",
                                flexible="none", kind="data", fields=[
    field("Topics", "[]string", "0+"),
    field("UserData", "bytes", "0+", nullable="0+", default=None),
    field("OwnedPartitions", "[]TopicPartition", "1+", ignorable=True, fields=[
        field("Topic", "string", "1+"),
        field("Partitions", "[]int32", "1+"),
    ]),
    field("GenerationId", "int32", "2+", default=-1, ignorable=True),
    field("RackId", "string", "3+", nullable="3+", default=None, ignorable=True),
])

CONSUMER_ASSIGNMENT = message("ConsumerProtocolAssignment", api_key=-1, valid="0-3",
                              flexible="none", kind="data", fields=[
    field("AssignedPartitions", "[]TopicPartition", "0+", fields=[
        field("Topic", "string", "0+"),
        field("Partitions", "[]int32", "0+"),
    ]),
    field("UserData", "bytes", "0+", nullable="0+", default=None),
])

# -- __transaction_state ---------------------------------------------------------------

TRANSACTION_LOG_KEY = message("TransactionLogKey", api_key=-1, valid="0", flexible="none",
                              kind="data", fields=[
    field("TransactionalId", "string", "0"),
])

TRANSACTION_LOG_VALUE = message("TransactionLogValue", api_key=-1, valid="0-1", flexible="1+",
                                kind="data", fields=[
    field("ProducerId", "int64", "0+"),
    field("PreviousProducerId", "int64", "1+", tagged="1+", tag=0, default=-1),
    field("NextProducerId", "int64", "1+", tagged="1+", tag=1, default=-1),
    field("ProducerEpoch", "int16", "0+"),
    field("TransactionTimeoutMs", "int32", "0+"),
    field("TransactionStatus", "int8", "0+"),
    field("TransactionPartitions", "[]PartitionsSchema", "0+", nullable="0+", fields=[
        field("Topic", "string", "0+"),
        field("PartitionIds", "[]int32", "0+"),
    ]),
    field("TransactionLastUpdateTimestampMs", "int64", "0+"),
    field("TransactionStartTimestampMs", "int64", "0+"),
    field("ClientTransactionVersion", "int16", "1+", tagged="1+", tag=2, default=0),
])
