"""ConsumerGroupHeartbeat (API key 68), versions 0-1, flexible from 0 (KIP-848).

The one request of the consumer group protocol: a member joins (MemberEpoch 0),
heartbeats (its current epoch), leaves (-1) or, as a static member, leaves to
rejoin (-2). Fields that did not change since the last heartbeat are sent as
null (-1 for RebalanceTimeoutMs); TopicPartitions is what the member owns now.
The response carries the member's epoch and, when it changed, its whole assigned
set (null: unchanged).

v1 (Kafka 4.0) adds SubscribedTopicRegex, evaluated by the broker (and from
v1 the client generates its own member id). Kafka 3.9 has v0 only.
"""

from protocol.schema import field, message

_TOPIC_PARTITIONS = [
    field("TopicId", "uuid", "0+"),
    field("Partitions", "[]int32", "0+"),
]

REQUEST = message("ConsumerGroupHeartbeatRequest", api_key=68, valid="0-1", flexible="0+",
                  fields=[
    field("GroupId", "string", "0+"),
    field("MemberId", "string", "0+"),
    field("MemberEpoch", "int32", "0+"),
    field("InstanceId", "string", "0+", nullable="0+", default=None),
    field("RackId", "string", "0+", nullable="0+", default=None),
    field("RebalanceTimeoutMs", "int32", "0+", default=-1),
    field("SubscribedTopicNames", "[]string", "0+", nullable="0+", default=None),
    field("SubscribedTopicRegex", "string", "1+", nullable="1+", default=None),
    field("ServerAssignor", "string", "0+", nullable="0+", default=None),
    field("TopicPartitions", "[]TopicPartitions", "0+", nullable="0+", default=None,
          fields=_TOPIC_PARTITIONS),
])

RESPONSE = message("ConsumerGroupHeartbeatResponse", api_key=68, valid="0-1", flexible="0+",
                   fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "0+"),
    field("ErrorMessage", "string", "0+", nullable="0+", default=None),
    field("MemberId", "string", "0+", nullable="0+", default=None),
    field("MemberEpoch", "int32", "0+"),
    field("HeartbeatIntervalMs", "int32", "0+"),
    field("Assignment", "Assignment", "0+", nullable="0+", default=None, fields=[
        field("TopicPartitions", "[]TopicPartitions", "0+", fields=_TOPIC_PARTITIONS),
    ]),
])
