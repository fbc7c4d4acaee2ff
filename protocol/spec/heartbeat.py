"""Heartbeat (API key 12), versions 0-4, flexible from 4.

v1 adds throttle time to the response; v2 as v1 (responses sent before
throttling); v3 adds GroupInstanceId for static membership (KIP-345); v4
flexible.
"""

from protocol.schema import field, message

REQUEST = message("HeartbeatRequest", api_key=12, valid="0-4", flexible="4+", fields=[
    field("GroupId", "string", "0+"),
    field("GenerationId", "int32", "0+"),
    field("MemberId", "string", "0+"),
    field("GroupInstanceId", "string", "3+", nullable="3+", default=None),
])

RESPONSE = message("HeartbeatResponse", api_key=12, valid="0-4", flexible="4+", fields=[
    field("ThrottleTimeMs", "int32", "1+", ignorable=True),
    field("ErrorCode", "int16", "0+"),
])
