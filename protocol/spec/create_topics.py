"""CreateTopics (API key 19), versions 0-7, flexible from 5 (v0-1 deprecated in Kafka).

v1 adds validateOnly to the request and a per-topic ErrorMessage to the response;
v2 adds ThrottleTimeMs; v3 answers before throttling on quota violation; v4 lets
NumPartitions/ReplicationFactor be -1 (broker defaults) without assignments
(KIP-464); v5 goes flexible and echoes the created topic's partitions, replication
factor and configs (KIP-525, TopicConfigErrorCode as tagged field 0); v6 may return
THROTTLING_QUOTA_EXCEEDED (KIP-599); v7 returns the new topic's TopicId.
Note Kafka's lower-camel names timeoutMs/validateOnly in the request.
"""

from protocol.schema import field, message

REQUEST = message("CreateTopicsRequest", api_key=19, valid="0-7", flexible="5+", fields=[
    field("Topics", "[]CreatableTopic", "0+", fields=[
        field("Name", "string", "0+"),
        field("NumPartitions", "int32", "0+"),
        field("ReplicationFactor", "int16", "0+"),
        field("Assignments", "[]CreatableReplicaAssignment", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("BrokerIds", "[]int32", "0+"),
        ]),
        field("Configs", "[]CreatableTopicConfig", "0+", fields=[
            field("Name", "string", "0+"),
            field("Value", "string", "0+", nullable="0+"),
        ]),
    ]),
    field("timeoutMs", "int32", "0+", default=60000),
    field("validateOnly", "bool", "1+", default=False),
])

RESPONSE = message("CreateTopicsResponse", api_key=19, valid="0-7", flexible="5+", fields=[
    field("ThrottleTimeMs", "int32", "2+", ignorable=True),
    field("Topics", "[]CreatableTopicResult", "0+", fields=[
        field("Name", "string", "0+"),
        field("TopicId", "uuid", "7+", ignorable=True),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "1+", nullable="0+", ignorable=True),
        field("TopicConfigErrorCode", "int16", "5+", tagged="5+", tag=0, ignorable=True),
        field("NumPartitions", "int32", "5+", default=-1, ignorable=True),
        field("ReplicationFactor", "int16", "5+", default=-1, ignorable=True),
        field("Configs", "[]CreatableTopicConfigs", "5+", nullable="5+", ignorable=True, fields=[
            field("Name", "string", "5+"),
            field("Value", "string", "5+", nullable="5+"),
            field("ReadOnly", "bool", "5+"),
            field("ConfigSource", "int8", "5+", default=-1, ignorable=True),
            field("IsSensitive", "bool", "5+"),
        ]),
    ]),
])
