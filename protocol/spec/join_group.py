"""JoinGroup (API key 11), versions 0-9, flexible from 6.

v1 adds RebalanceTimeoutMs; v2 adds throttle time to the response; v3 as v2
(responses sent before throttling); v4 makes a new member join twice, the first
time to learn its assigned member id (MEMBER_ID_REQUIRED); v5 adds
GroupInstanceId for static membership (KIP-345); v6 flexible; v7 returns the
ProtocolType and allows a null ProtocolName (KIP-559); v8 adds the Reason
(KIP-800); v9 adds SkipAssignment to the response.
"""

from protocol.schema import field, message

REQUEST = message("JoinGroupRequest", api_key=11, valid="0-9", flexible="6+", fields=[
    field("GroupId", "string", "0+"),
    field("SessionTimeoutMs", "int32", "0+"),
    # -1 is only a placeholder: when absent (v0) the session timeout applies.
    field("RebalanceTimeoutMs", "int32", "1+", default=-1, ignorable=True),
    field("MemberId", "string", "0+"),
    field("GroupInstanceId", "string", "5+", nullable="5+", default=None),
    field("ProtocolType", "string", "0+"),
    field("Protocols", "[]JoinGroupRequestProtocol", "0+", fields=[
        field("Name", "string", "0+"),
        field("Metadata", "bytes", "0+"),
    ]),
    field("Reason", "string", "8+", nullable="8+", default=None, ignorable=True),
])

RESPONSE = message("JoinGroupResponse", api_key=11, valid="0-9", flexible="6+", fields=[
    field("ThrottleTimeMs", "int32", "2+", ignorable=True),
    field("ErrorCode", "int16", "0+"),
    field("GenerationId", "int32", "0+", default=-1),
    field("ProtocolType", "string", "7+", nullable="7+", default=None, ignorable=True),
    field("ProtocolName", "string", "0+", nullable="7+"),
    field("Leader", "string", "0+"),
    field("SkipAssignment", "bool", "9+", default=False),
    field("MemberId", "string", "0+"),
    field("Members", "[]JoinGroupResponseMember", "0+", fields=[
        field("MemberId", "string", "0+"),
        field("GroupInstanceId", "string", "5+", nullable="5+", default=None, ignorable=True),
        field("Metadata", "bytes", "0+"),
    ]),
])
