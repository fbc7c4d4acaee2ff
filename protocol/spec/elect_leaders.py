"""ElectLeaders (API key 43), versions 0-2, flexible from 2.

A null partition list means every eligible partition. v1 adds ElectionType
(0 = preferred, 1 = unclean; KIP-460) and a top-level ErrorCode; v2 flexible.
"""

from protocol.schema import field, message

REQUEST = message("ElectLeadersRequest", api_key=43, valid="0-2", flexible="2+", fields=[
    field("ElectionType", "int8", "1+"),
    field("TopicPartitions", "[]TopicPartitions", "0+", nullable="0+", fields=[
        field("Topic", "string", "0+"),
        field("Partitions", "[]int32", "0+"),
    ]),
    field("TimeoutMs", "int32", "0+", default=60000),
])

RESPONSE = message("ElectLeadersResponse", api_key=43, valid="0-2", flexible="2+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "1+"),
    field("ReplicaElectionResults", "[]ReplicaElectionResult", "0+", fields=[
        field("Topic", "string", "0+"),
        field("PartitionResult", "[]PartitionResult", "0+", fields=[
            field("PartitionId", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
        ]),
    ]),
])
