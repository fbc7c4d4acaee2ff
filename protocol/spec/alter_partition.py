"""AlterPartition (API key 56), versions 0-3, flexible in all; partition leader -> controller.

v1 adds LeaderRecoveryState (KIP-704); v2 identifies topics by TopicId instead of
TopicName and may return INELIGIBLE_REPLICA, NEW_LEADER_ELECTED or
UNKNOWN_TOPIC_ID (KIP-841); v3 replaces NewIsr by NewIsrWithEpochs, each ISR
member with its broker epoch (KIP-903; the response is unchanged).
"""

from protocol.schema import field, message

REQUEST = message("AlterPartitionRequest", api_key=56, valid="0-3", flexible="0+", fields=[
    field("BrokerId", "int32", "0+"),
    field("BrokerEpoch", "int64", "0+", default=-1),
    field("Topics", "[]TopicData", "0+", fields=[
        field("TopicName", "string", "0-1", ignorable=True),
        field("TopicId", "uuid", "2+", ignorable=True),
        field("Partitions", "[]PartitionData", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("LeaderEpoch", "int32", "0+"),
            field("NewIsr", "[]int32", "0-2"),
            field("NewIsrWithEpochs", "[]BrokerState", "3+", fields=[
                field("BrokerId", "int32", "3+"),
                field("BrokerEpoch", "int64", "3+", default=-1),
            ]),
            field("LeaderRecoveryState", "int8", "1+", default=0),
            field("PartitionEpoch", "int32", "0+"),
        ]),
    ]),
])

RESPONSE = message("AlterPartitionResponse", api_key=56, valid="0-3", flexible="0+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "0+"),
    field("Topics", "[]TopicData", "0+", fields=[
        field("TopicName", "string", "0-1", ignorable=True),
        field("TopicId", "uuid", "2+", ignorable=True),
        field("Partitions", "[]PartitionData", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("LeaderId", "int32", "0+"),
            field("LeaderEpoch", "int32", "0+"),
            field("Isr", "[]int32", "0+"),
            field("LeaderRecoveryState", "int8", "1+", default=0, ignorable=True),
            field("PartitionEpoch", "int32", "0+"),
        ]),
    ]),
])
