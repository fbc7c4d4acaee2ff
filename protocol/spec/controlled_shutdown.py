"""ControlledShutdown (API key 7), versions 0-3, flexible from 3; broker -> controller.

v0 is sent with request header v0 (api key, version, correlation id; no client id)
-- protocol/headers.py handles that quirk. v1 uses the standard header with the
same body; v2 adds BrokerEpoch; v3 goes flexible. The response lists the
partitions that still have this broker as leader (same layout in every version).
"""

from protocol.schema import field, message

REQUEST = message("ControlledShutdownRequest", api_key=7, valid="0-3", flexible="3+", fields=[
    field("BrokerId", "int32", "0+"),
    field("BrokerEpoch", "int64", "2+", default=-1, ignorable=True),
])

RESPONSE = message("ControlledShutdownResponse", api_key=7, valid="0-3", flexible="3+", fields=[
    field("ErrorCode", "int16", "0+"),
    field("RemainingPartitions", "[]RemainingPartition", "0+", fields=[
        field("TopicName", "string", "0+"),
        field("PartitionIndex", "int32", "0+"),
    ]),
])
