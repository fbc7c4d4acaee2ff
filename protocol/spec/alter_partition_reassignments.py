"""AlterPartitionReassignments (API key 45), version 0, flexible.

Starts or (with null Replicas) cancels partition reassignments (KIP-455).
"""

from protocol.schema import field, message

REQUEST = message("AlterPartitionReassignmentsRequest",
                  api_key=45, valid="0", flexible="0+", fields=[
    field("TimeoutMs", "int32", "0+", default=60000),
    field("Topics", "[]ReassignableTopic", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]ReassignablePartition", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("Replicas", "[]int32", "0+", nullable="0+", default=None),
        ]),
    ]),
])

RESPONSE = message("AlterPartitionReassignmentsResponse",
                   api_key=45, valid="0", flexible="0+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "0+"),
    field("ErrorMessage", "string", "0+", nullable="0+"),
    field("Responses", "[]ReassignableTopicResponse", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]ReassignablePartitionResponse", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
        ]),
    ]),
])
