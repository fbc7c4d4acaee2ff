"""LeaveGroup (API key 13), versions 0-5, flexible from 4.

v1 adds throttle time to the response; v2 as v1 (responses sent before
throttling); v3 batches: the single MemberId becomes a Members list identified
by member id and/or group instance id, each answered with its own error
(KIP-345); v4 flexible; v5 adds a per-member Reason (KIP-800).
"""

from protocol.schema import field, message

REQUEST = message("LeaveGroupRequest", api_key=13, valid="0-5", flexible="4+", fields=[
    field("GroupId", "string", "0+"),
    field("MemberId", "string", "0-2"),
    field("Members", "[]MemberIdentity", "3+", fields=[
        field("MemberId", "string", "3+"),
        field("GroupInstanceId", "string", "3+", nullable="3+", default=None),
        field("Reason", "string", "5+", nullable="5+", default=None, ignorable=True),
    ]),
])

RESPONSE = message("LeaveGroupResponse", api_key=13, valid="0-5", flexible="4+", fields=[
    field("ThrottleTimeMs", "int32", "1+", ignorable=True),
    field("ErrorCode", "int16", "0+"),
    field("Members", "[]MemberResponse", "3+", fields=[
        field("MemberId", "string", "3+"),
        field("GroupInstanceId", "string", "3+", nullable="3+"),
        field("ErrorCode", "int16", "3+"),
    ]),
])
