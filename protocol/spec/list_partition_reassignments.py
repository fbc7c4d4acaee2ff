"""ListPartitionReassignments (API key 46), version 0, flexible.

Lists ongoing reassignments; a null topic list means all of them (KIP-455).
"""

from protocol.schema import field, message

REQUEST = message("ListPartitionReassignmentsRequest",
                  api_key=46, valid="0", flexible="0+", fields=[
    field("TimeoutMs", "int32", "0+", default=60000),
    field("Topics", "[]ListPartitionReassignmentsTopics", "0+",
          nullable="0+", default=None, fields=[
        field("Name", "string", "0+"),
        field("PartitionIndexes", "[]int32", "0+"),
    ]),
])

RESPONSE = message("ListPartitionReassignmentsResponse",
                   api_key=46, valid="0", flexible="0+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "0+"),
    field("ErrorMessage", "string", "0+", nullable="0+"),
    field("Topics", "[]OngoingTopicReassignment", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]OngoingPartitionReassignment", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("Replicas", "[]int32", "0+"),
            field("AddingReplicas", "[]int32", "0+"),
            field("RemovingReplicas", "[]int32", "0+"),
        ]),
    ]),
])
