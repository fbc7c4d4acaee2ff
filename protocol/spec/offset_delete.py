"""OffsetDelete (API key 47), version 0 only, never flexible (KIP-496).

Deletes committed offsets of a group for the given partitions; the group must
not be subscribed to those topics (GROUP_SUBSCRIBED_TO_TOPIC otherwise).
"""

from protocol.schema import field, message

REQUEST = message("OffsetDeleteRequest", api_key=47, valid="0", flexible="none", fields=[
    field("GroupId", "string", "0+"),
    field("Topics", "[]OffsetDeleteRequestTopic", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]OffsetDeleteRequestPartition", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
        ]),
    ]),
])

# Note the order: the top-level ErrorCode comes before ThrottleTimeMs here.
RESPONSE = message("OffsetDeleteResponse", api_key=47, valid="0", flexible="none", fields=[
    field("ErrorCode", "int16", "0+"),
    field("ThrottleTimeMs", "int32", "0+", ignorable=True),
    field("Topics", "[]OffsetDeleteResponseTopic", "0+", fields=[
        field("Name", "string", "0+"),
        field("Partitions", "[]OffsetDeleteResponsePartition", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
        ]),
    ]),
])
