"""StopReplica (API key 5), versions 0-4, flexible from 2; controller -> broker (ZK mode).

Request: v0 has DeletePartitions plus UngroupedPartitions (topic, partition);
v1 adds BrokerEpoch and groups partitions as Topics (name, partition indexes);
v2 goes flexible; v3 replaces both DeletePartitions and Topics by TopicStates with
a per-partition LeaderEpoch and DeletePartition flag (KIP-570; may return
FENCED_LEADER_EPOCH); v4 adds isKRaftController (KIP-866). The response layout is
the same for all versions.
"""

from protocol.schema import field, message

REQUEST = message("StopReplicaRequest", api_key=5, valid="0-4", flexible="2+", fields=[
    field("ControllerId", "int32", "0+"),
    field("isKRaftController", "bool", "4+", default=False),
    field("ControllerEpoch", "int32", "0+"),
    field("BrokerEpoch", "int64", "1+", default=-1, ignorable=True),
    field("DeletePartitions", "bool", "0-2"),
    field("UngroupedPartitions", "[]StopReplicaPartitionV0", "0", fields=[
        field("TopicName", "string", "0"),
        field("PartitionIndex", "int32", "0"),
    ]),
    field("Topics", "[]StopReplicaTopicV1", "1-2", fields=[
        field("Name", "string", "1-2"),
        field("PartitionIndexes", "[]int32", "1-2"),
    ]),
    field("TopicStates", "[]StopReplicaTopicState", "3+", fields=[
        field("TopicName", "string", "3+"),
        field("PartitionStates", "[]StopReplicaPartitionState", "3+", fields=[
            field("PartitionIndex", "int32", "3+"),
            field("LeaderEpoch", "int32", "3+", default=-1),
            field("DeletePartition", "bool", "3+"),
        ]),
    ]),
])

RESPONSE = message("StopReplicaResponse", api_key=5, valid="0-4", flexible="2+", fields=[
    field("ErrorCode", "int16", "0+"),
    field("PartitionErrors", "[]StopReplicaPartitionError", "0+", fields=[
        field("TopicName", "string", "0+"),
        field("PartitionIndex", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
    ]),
])
