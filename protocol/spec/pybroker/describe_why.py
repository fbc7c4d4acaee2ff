"""DescribeWhy (API key 10000, pybroker's own), version 0, flexible from 0.

Asks a broker for the facts it keeps about why things are as they are
(broker/why/): per resource one result with an error code and message and, on
success, exactly one of the three nullable structs filled in (the others null):

* ResourceType BROKER (1), ResourceName "" or the broker's id: ``BrokerStatus``
  (ZooKeeper session state, controller, uptime). Any broker answers for itself.
* PARTITION (2), ResourceName the topic, Partition the index: ``PartitionWhy``
  from the leader (the ISR changes it made with their reasons, the replicas
  holding the high watermark back, its view of each replica). A non-leader
  answers NOT_LEADER_OR_FOLLOWER; an unknown partition UNKNOWN_TOPIC_OR_PARTITION.
* GROUP (3), ResourceName the group id: ``GroupWhy`` from the coordinator (the
  group's rebalances, each with what started it). A non-coordinator answers
  NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while loading).

Times are epoch milliseconds, -1 unknown; lists of events are oldest first.
The dataclasses the client decodes into are protocol/why_model.py; field for
field the same names (snake_case of the CamelCase here).
"""

from protocol.schema import field, message

API_KEY = 10000

REQUEST = message("DescribeWhyRequest", api_key=API_KEY, valid="0", flexible="0+", fields=[
    field("Resources", "[]WhyResource", "0+", fields=[
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("Partition", "int32", "0+", default=-1),
    ]),
])

RESPONSE = message("DescribeWhyResponse", api_key=API_KEY, valid="0", flexible="0+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Results", "[]WhyResult", "0+", fields=[
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+", default=None),
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("Partition", "int32", "0+", default=-1),
        field("BrokerStatus", "WhyBrokerStatus", "0+", nullable="0+", default=None, fields=[
            field("BrokerId", "int32", "0+"),
            field("ZkSessionState", "string", "0+"),
            field("IsController", "bool", "0+"),
            field("ControllerId", "int32", "0+", default=-1),
            field("UptimeMs", "int64", "0+"),
        ]),
        field("PartitionWhy", "WhyPartition", "0+", nullable="0+", default=None, fields=[
            field("Leader", "int32", "0+"),
            field("LeaderEpoch", "int32", "0+"),
            field("Isr", "[]int32", "0+"),
            field("HighWatermark", "int64", "0+"),
            field("LogEndOffset", "int64", "0+"),
            field("HwHeldBy", "[]int32", "0+"),
            field("Replicas", "[]WhyReplica", "0+", fields=[
                field("BrokerId", "int32", "0+"),
                field("LogEndOffset", "int64", "0+", default=-1),
                field("LastCaughtUpMs", "int64", "0+", default=-1),
                field("LastFetchMs", "int64", "0+", default=-1),
                field("InIsr", "bool", "0+"),
            ]),
            field("IsrChanges", "[]WhyIsrChange", "0+", fields=[
                field("TimeMs", "int64", "0+"),
                field("Kind", "string", "0+"),
                field("Replica", "int32", "0+"),
                field("Reason", "string", "0+"),
                field("LagMs", "int64", "0+"),
                field("LagMessages", "int64", "0+", default=-1),
                field("IsrAfter", "[]int32", "0+"),
            ]),
        ]),
        field("GroupWhy", "WhyGroup", "0+", nullable="0+", default=None, fields=[
            field("State", "string", "0+"),
            field("Generation", "int32", "0+", default=-1),
            field("Rebalances", "[]WhyRebalance", "0+", fields=[
                field("TimeMs", "int64", "0+"),
                field("Generation", "int32", "0+", default=-1),
                field("Kind", "string", "0+"),
                field("MemberId", "string", "0+"),
                field("ClientId", "string", "0+"),
                field("Host", "string", "0+"),
                field("Reason", "string", "0+"),
            ]),
        ]),
    ]),
])
