"""ConsumerGroupDescribe (API key 69), versions 0-1, flexible from 0 (KIP-848).

The consumer group protocol's DescribeGroups: per group its state string
(Empty/Assigning/Reconciling/Stable/Dead), group and assignment epochs, the
assignor, and per member its epoch, subscription and both its current and its
target assignment (topic ids with names). A group id that names no consumer
group answers GROUP_ID_NOT_FOUND for that group.

v1 (Kafka 4.0, KIP-1099) adds each member's MemberType (-1 unknown, 0 classic
member of a consumer group, 1 consumer member). Kafka 3.9 has v0 only.
"""

from protocol.schema import field, message

REQUEST = message("ConsumerGroupDescribeRequest", api_key=69, valid="0-1", flexible="0+",
                  fields=[
    field("GroupIds", "[]string", "0+"),
    field("IncludeAuthorizedOperations", "bool", "0+"),
])


def _assignment() -> list:
    return [field("TopicPartitions", "[]TopicPartitions", "0+", fields=[
        field("TopicId", "uuid", "0+"),
        field("TopicName", "string", "0+"),
        field("Partitions", "[]int32", "0+"),
    ])]


RESPONSE = message("ConsumerGroupDescribeResponse", api_key=69, valid="0-1", flexible="0+",
                   fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Groups", "[]DescribedGroup", "0+", fields=[
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+", default=None),
        field("GroupId", "string", "0+"),
        field("GroupState", "string", "0+"),
        field("GroupEpoch", "int32", "0+"),
        field("AssignmentEpoch", "int32", "0+"),
        field("AssignorName", "string", "0+"),
        field("Members", "[]Member", "0+", fields=[
            field("MemberId", "string", "0+"),
            field("InstanceId", "string", "0+", nullable="0+", default=None),
            field("RackId", "string", "0+", nullable="0+", default=None),
            field("MemberEpoch", "int32", "0+"),
            field("ClientId", "string", "0+"),
            field("ClientHost", "string", "0+"),
            field("SubscribedTopicNames", "[]string", "0+"),
            field("SubscribedTopicRegex", "string", "0+", nullable="0+", default=None),
            field("Assignment", "Assignment", "0+", fields=_assignment()),
            field("TargetAssignment", "Assignment", "0+", fields=_assignment()),
            field("MemberType", "int8", "1+", default=-1, ignorable=True),
        ]),
        # INT32_MIN means "not requested".
        field("AuthorizedOperations", "int32", "0+", default=-2147483648),
    ]),
])
