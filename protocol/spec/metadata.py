"""Metadata (API key 3), versions 0-12, flexible from 9.

v1 makes the topic list nullable (null = all topics; in v0 an empty list meant
all) and adds racks, ControllerId and IsInternal; v2 adds ClusterId; v3 adds
ThrottleTimeMs; v4 adds AllowAutoTopicCreation; v5 adds OfflineReplicas; v6 as
v5; v7 adds the partition LeaderEpoch; v8 adds authorized-operations fields
(the cluster ones live only in v8-v10, replaced by DescribeCluster); v9
flexible; v10 adds topic IDs and lets a requested topic name be null (not
served by Kafka until v12); v11 drops the cluster operations; v12 lets a
response topic name be null when the topic was asked for by ID.
"""

from protocol.schema import field, message

REQUEST = message("MetadataRequest", api_key=3, valid="0-12", flexible="9+", fields=[
    field("Topics", "[]MetadataRequestTopic", "0+", nullable="1+", fields=[
        field("TopicId", "uuid", "10+", ignorable=True),
        field("Name", "string", "0+", nullable="10+"),
    ]),
    field("AllowAutoTopicCreation", "bool", "4+", default=True),
    field("IncludeClusterAuthorizedOperations", "bool", "8-10"),
    field("IncludeTopicAuthorizedOperations", "bool", "8+"),
])

RESPONSE = message("MetadataResponse", api_key=3, valid="0-12", flexible="9+", fields=[
    field("ThrottleTimeMs", "int32", "3+", ignorable=True),
    field("Brokers", "[]MetadataResponseBroker", "0+", fields=[
        field("NodeId", "int32", "0+"),
        field("Host", "string", "0+"),
        field("Port", "int32", "0+"),
        field("Rack", "string", "1+", nullable="1+", default=None, ignorable=True),
    ]),
    field("ClusterId", "string", "2+", nullable="2+", default=None, ignorable=True),
    field("ControllerId", "int32", "1+", default=-1, ignorable=True),
    field("Topics", "[]MetadataResponseTopic", "0+", fields=[
        field("ErrorCode", "int16", "0+"),
        field("Name", "string", "0+", nullable="12+"),
        field("TopicId", "uuid", "10+", ignorable=True),
        field("IsInternal", "bool", "1+", default=False, ignorable=True),
        field("Partitions", "[]MetadataResponsePartition", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("PartitionIndex", "int32", "0+"),
            field("LeaderId", "int32", "0+"),
            field("LeaderEpoch", "int32", "7+", default=-1, ignorable=True),
            field("ReplicaNodes", "[]int32", "0+"),
            field("IsrNodes", "[]int32", "0+"),
            field("OfflineReplicas", "[]int32", "5+", ignorable=True),
        ]),
        field("TopicAuthorizedOperations", "int32", "8+", default=-2147483648),
    ]),
    field("ClusterAuthorizedOperations", "int32", "8-10", default=-2147483648),
])
