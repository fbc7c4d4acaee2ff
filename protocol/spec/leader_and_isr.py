"""LeaderAndIsr (API key 4), versions 0-7, flexible from 4; controller -> broker (ZK mode).

Request: v0-1 list UngroupedPartitionStates, each carrying its TopicName (v1 adds
IsNew); v2 adds BrokerEpoch and groups partitions under TopicStates (the partition
state then has no TopicName); v3 adds AddingReplicas/RemovingReplicas; v4 goes
flexible; v5 adds Type and a TopicId per topic (KIP-516); v6 adds
LeaderRecoveryState (KIP-704); v7 adds isKRaftController (KIP-866 migration).
Response: v0-4 a flat PartitionErrors list with TopicName; v5+ Topics keyed by
TopicId, each with its PartitionErrors (no TopicName). v1 may return
KAFKA_STORAGE_ERROR.
"""

from protocol.schema import field, message

# Kafka's common struct LeaderAndIsrPartitionState, used by
# UngroupedPartitionStates (v0-1) and TopicStates.PartitionStates (v2+).
_LEADER_AND_ISR_PARTITION_STATE = [
    field("TopicName", "string", "0-1", ignorable=True),
    field("PartitionIndex", "int32", "0+"),
    field("ControllerEpoch", "int32", "0+"),
    field("Leader", "int32", "0+"),
    field("LeaderEpoch", "int32", "0+"),
    field("Isr", "[]int32", "0+"),
    field("PartitionEpoch", "int32", "0+"),
    field("Replicas", "[]int32", "0+"),
    field("AddingReplicas", "[]int32", "3+", ignorable=True),
    field("RemovingReplicas", "[]int32", "3+", ignorable=True),
    field("IsNew", "bool", "1+", default=False, ignorable=True),
    field("LeaderRecoveryState", "int8", "6+", default=0),
]

REQUEST = message("LeaderAndIsrRequest", api_key=4, valid="0-7", flexible="4+", fields=[
    field("ControllerId", "int32", "0+"),
    field("isKRaftController", "bool", "7+", default=False),
    field("ControllerEpoch", "int32", "0+"),
    field("BrokerEpoch", "int64", "2+", default=-1, ignorable=True),
    field("Type", "int8", "5+"),
    field("UngroupedPartitionStates", "[]LeaderAndIsrPartitionState", "0-1",
          fields=_LEADER_AND_ISR_PARTITION_STATE),
    field("TopicStates", "[]LeaderAndIsrTopicState", "2+", fields=[
        field("TopicName", "string", "2+"),
        field("TopicId", "uuid", "5+", ignorable=True),
        field("PartitionStates", "[]LeaderAndIsrPartitionState", "2+",
              fields=_LEADER_AND_ISR_PARTITION_STATE),
    ]),
    field("LiveLeaders", "[]LeaderAndIsrLiveLeader", "0+", fields=[
        field("BrokerId", "int32", "0+"),
        field("HostName", "string", "0+"),
        field("Port", "int32", "0+"),
    ]),
])

# Kafka's common struct LeaderAndIsrPartitionError, used by
# PartitionErrors (v0-4) and Topics.PartitionErrors (v5+).
_LEADER_AND_ISR_PARTITION_ERROR = [
    field("TopicName", "string", "0-4", ignorable=True),
    field("PartitionIndex", "int32", "0+"),
    field("ErrorCode", "int16", "0+"),
]

RESPONSE = message("LeaderAndIsrResponse", api_key=4, valid="0-7", flexible="4+", fields=[
    field("ErrorCode", "int16", "0+"),
    field("PartitionErrors", "[]LeaderAndIsrPartitionError", "0-4",
          fields=_LEADER_AND_ISR_PARTITION_ERROR),
    field("Topics", "[]LeaderAndIsrTopicError", "5+", fields=[
        field("TopicId", "uuid", "5+"),
        field("PartitionErrors", "[]LeaderAndIsrPartitionError", "5+",
              fields=_LEADER_AND_ISR_PARTITION_ERROR),
    ]),
])
