"""The on-disk record schemas of Kafka's internal topics, declared once: the broker
writes and reads them (coordinator/group/classic/offsets_topic.py, coordinator/transaction/
txn_log.py), ``pybroker dump-log`` decodes them (tools/dump_log_decoders.py).

Every record's key and value is an int16 schema version followed by the struct of
that version (Kafka's ``group-coordinator`` and ``transaction-coordinator``
``message/*.json``); the encoding and the version prefix are protocol.codec's.

    __consumer_offsets    OffsetCommitKey v0-1 / OffsetCommitValue v0-4 (key
                          versions 0 and 1), GroupMetadataKey v2 /
                          GroupMetadataValue v0-4 (v4 values flexible);
                          the consumer groups of KIP-848 (key versions 3-8
                          and 16, values v0, flexible): ConsumerGroupMetadata,
                          ...PartitionMetadata, ...MemberMetadata,
                          ...TargetAssignmentMetadata, ...TargetAssignmentMember,
                          ...CurrentMemberAssignment, ...RegularExpression
                          (coordinator/group/consumer/record_codec.py)
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

from protocol.schema import FieldSpec, MessageSpec, field, message

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

# -- __consumer_offsets: consumer groups (KIP-848) --------------------------------------
# Each key version names one record type (the key's int16 prefix); every value is v0,
# flexible. A null value is the tombstone of what the key names.


def _cg_key(name: str, version: int, member_field: str | None = None) -> MessageSpec:
    fields = [field("GroupId", "string", str(version))]
    if member_field is not None:
        fields.append(field(member_field, "string", str(version)))
    return message(name, api_key=-1, valid=str(version), flexible="none", kind="data",
                   fields=fields)


def _topic_partitions() -> list[FieldSpec]:
    return [field("TopicId", "uuid", "0+"), field("Partitions", "[]int32", "0+")]


CONSUMER_GROUP_METADATA_KEY = _cg_key("ConsumerGroupMetadataKey", 3)
CONSUMER_GROUP_METADATA_VALUE = message("ConsumerGroupMetadataValue", api_key=-1, valid="0",
                                        flexible="0+", kind="data", fields=[
    field("Epoch", "int32", "0+"),
])

CONSUMER_GROUP_PARTITION_METADATA_KEY = _cg_key("ConsumerGroupPartitionMetadataKey", 4)
CONSUMER_GROUP_PARTITION_METADATA_VALUE = message(
        "ConsumerGroupPartitionMetadataValue", api_key=-1, valid="0", flexible="0+",
        kind="data", fields=[
    field("Topics", "[]TopicMetadata", "0+", fields=[
        field("TopicId", "uuid", "0+"),
        field("TopicName", "string", "0+"),
        field("NumPartitions", "int32", "0+"),
        field("PartitionMetadata", "[]PartitionMetadata", "0+", fields=[
            field("Partition", "int32", "0+"),
            field("Racks", "[]string", "0+"),
        ]),
    ]),
])

CONSUMER_GROUP_MEMBER_METADATA_KEY = _cg_key("ConsumerGroupMemberMetadataKey", 5, "MemberId")
CONSUMER_GROUP_MEMBER_METADATA_VALUE = message(
        "ConsumerGroupMemberMetadataValue", api_key=-1, valid="0", flexible="0+",
        kind="data", fields=[
    field("InstanceId", "string", "0+", nullable="0+", default=None),
    field("RackId", "string", "0+", nullable="0+", default=None),
    field("ClientId", "string", "0+"),
    field("ClientHost", "string", "0+"),
    field("SubscribedTopicNames", "[]string", "0+"),
    field("SubscribedTopicRegex", "string", "0+", nullable="0+", default=None),
    field("RebalanceTimeoutMs", "int32", "0+", default=-1),
    field("ServerAssignor", "string", "0+", nullable="0+", default=None),
    # a classic-protocol member inside a consumer group (migration), tagged
    field("ClassicMemberMetadata", "ClassicMemberMetadata", "0+", nullable="0+",
          default=None, tagged="0+", tag=0, fields=[
        field("SessionTimeoutMs", "int32", "0+"),
        field("SupportedProtocols", "[]ClassicProtocol", "0+", fields=[
            field("Name", "string", "0+"),
            field("Metadata", "bytes", "0+"),
        ]),
    ]),
])

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _cg_key(
    "ConsumerGroupTargetAssignmentMetadataKey", 6)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = message(
        "ConsumerGroupTargetAssignmentMetadataValue", api_key=-1, valid="0", flexible="0+",
        kind="data", fields=[
    field("AssignmentEpoch", "int32", "0+"),
])

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _cg_key(
    "ConsumerGroupTargetAssignmentMemberKey", 7, "MemberId")
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = message(
        "ConsumerGroupTargetAssignmentMemberValue", api_key=-1, valid="0", flexible="0+",
        kind="data", fields=[
    field("TopicPartitions", "[]TopicPartition", "0+", fields=_topic_partitions()),
])

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _cg_key(
    "ConsumerGroupCurrentMemberAssignmentKey", 8, "MemberId")
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
        "ConsumerGroupCurrentMemberAssignmentValue", api_key=-1, valid="0", flexible="0+",
        kind="data", fields=[
    field("MemberEpoch", "int32", "0+"),
    field("PreviousMemberEpoch", "int32", "0+"),
    field("State", "int8", "0+"),
    field("AssignedPartitions", "[]TopicPartitions", "0+", fields=_topic_partitions()),
    field("PartitionsPendingRevocation", "[]TopicPartitions", "0+",
          fields=_topic_partitions()),
])

CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = _cg_key(
    "ConsumerGroupRegularExpressionKey", 16, "RegularExpression")
CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = message(
        "ConsumerGroupRegularExpressionValue", api_key=-1, valid="0", flexible="0+",
        kind="data", fields=[
    field("Topics", "[]string", "0+"),
    field("Version", "int64", "0+"),
    field("Timestamp", "int64", "0+"),
])

# key version -> (key, value) layouts of the consumer group records (coordinator/group/consumer/
# record_codec.py writes and reads them; dump-log decodes them)
CONSUMER_GROUP_RECORDS: dict[int, tuple[MessageSpec, MessageSpec]] = {
    3: (CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: (CONSUMER_GROUP_PARTITION_METADATA_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: (CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: (CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: (CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: (CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    16: (CONSUMER_GROUP_REGULAR_EXPRESSION_KEY, CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
}

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
