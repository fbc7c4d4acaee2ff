"""UpdateMetadata (API key 6), versions 0-8, flexible from 6; controller -> broker (ZK mode).

Request: v0 gives each live broker one V0Host/V0Port; v1 replaces them by a list
of Endpoints (port, host, security protocol); v2 adds the broker Rack; v3 adds the
endpoint Listener name; v4 adds OfflineReplicas; v5 adds BrokerEpoch and groups
partitions under TopicStates (v0-4 use UngroupedPartitionStates with a TopicName
in each); v6 goes flexible; v7 adds a TopicId per topic; v8 adds
isKRaftController and Type (tagged field 0: 0 unknown, 1 incremental, 2 full;
KIP-866). The response is just ErrorCode in every version.
"""

from protocol.schema import field, message

# Kafka's common struct UpdateMetadataPartitionState, used by
# UngroupedPartitionStates (v0-4) and TopicStates.PartitionStates (v5+).
_UPDATE_METADATA_PARTITION_STATE = [
    field("TopicName", "string", "0-4", ignorable=True),
    field("PartitionIndex", "int32", "0+"),
    field("ControllerEpoch", "int32", "0+"),
    field("Leader", "int32", "0+"),
    field("LeaderEpoch", "int32", "0+"),
    field("Isr", "[]int32", "0+"),
    field("ZkVersion", "int32", "0+"),
    field("Replicas", "[]int32", "0+"),
    field("OfflineReplicas", "[]int32", "4+", ignorable=True),
]

REQUEST = message("UpdateMetadataRequest", api_key=6, valid="0-8", flexible="6+", fields=[
    field("ControllerId", "int32", "0+"),
    field("isKRaftController", "bool", "8+", default=False),
    field("Type", "int8", "8+", tagged="8+", tag=0, default=0),
    field("ControllerEpoch", "int32", "0+"),
    field("BrokerEpoch", "int64", "5+", default=-1, ignorable=True),
    field("UngroupedPartitionStates", "[]UpdateMetadataPartitionState", "0-4",
          fields=_UPDATE_METADATA_PARTITION_STATE),
    field("TopicStates", "[]UpdateMetadataTopicState", "5+", fields=[
        field("TopicName", "string", "5+"),
        field("TopicId", "uuid", "7+", ignorable=True),
        field("PartitionStates", "[]UpdateMetadataPartitionState", "5+",
              fields=_UPDATE_METADATA_PARTITION_STATE),
    ]),
    field("LiveBrokers", "[]UpdateMetadataBroker", "0+", fields=[
        field("Id", "int32", "0+"),
        field("V0Host", "string", "0", ignorable=True),
        field("V0Port", "int32", "0", ignorable=True),
        field("Endpoints", "[]UpdateMetadataEndpoint", "1+", ignorable=True, fields=[
            field("Port", "int32", "1+"),
            field("Host", "string", "1+"),
            field("Listener", "string", "3+", ignorable=True),
            field("SecurityProtocol", "int16", "1+"),
        ]),
        field("Rack", "string", "2+", nullable="0+", ignorable=True),
    ]),
])

RESPONSE = message("UpdateMetadataResponse", api_key=6, valid="0-8", flexible="6+", fields=[
    field("ErrorCode", "int16", "0+"),
])
