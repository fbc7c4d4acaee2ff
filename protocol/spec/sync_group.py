"""SyncGroup (API key 14), versions 0-5, flexible from 4.

v1 adds throttle time to the response; v2 as v1 (responses sent before
throttling); v3 adds GroupInstanceId for static membership (KIP-345); v4
flexible; v5 carries ProtocolType and ProtocolName both ways, and the
coordinator rejects a request whose type/name disagree with the group's
(KIP-559).
"""

from protocol.schema import field, message

REQUEST = message("SyncGroupRequest", api_key=14, valid="0-5", flexible="4+", fields=[
    field("GroupId", "string", "0+"),
    field("GenerationId", "int32", "0+"),
    field("MemberId", "string", "0+"),
    field("GroupInstanceId", "string", "3+", nullable="3+", default=None),
    field("ProtocolType", "string", "5+", nullable="5+", default=None, ignorable=True),
    field("ProtocolName", "string", "5+", nullable="5+", default=None, ignorable=True),
    # Only the leader sends assignments; followers send an empty list.
    field("Assignments", "[]SyncGroupRequestAssignment", "0+", fields=[
        field("MemberId", "string", "0+"),
        field("Assignment", "bytes", "0+"),
    ]),
])

RESPONSE = message("SyncGroupResponse", api_key=14, valid="0-5", flexible="4+", fields=[
    field("ThrottleTimeMs", "int32", "1+", ignorable=True),
    field("ErrorCode", "int16", "0+"),
    field("ProtocolType", "string", "5+", nullable="5+", default=None, ignorable=True),
    field("ProtocolName", "string", "5+", nullable="5+", default=None, ignorable=True),
    field("Assignment", "bytes", "0+"),
])
