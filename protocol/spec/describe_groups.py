"""DescribeGroups (API key 15), versions 0-5, flexible from 5.

v1 adds throttle time to the response; v2 as v1 (responses sent before
throttling); v3 lets the client ask for the group's AuthorizedOperations
(KIP-430); v4 reports each member's GroupInstanceId (KIP-345); v5 flexible.
"""

from protocol.schema import field, message

REQUEST = message("DescribeGroupsRequest", api_key=15, valid="0-5", flexible="5+", fields=[
    field("Groups", "[]string", "0+"),
    field("IncludeAuthorizedOperations", "bool", "3+"),
])

RESPONSE = message("DescribeGroupsResponse", api_key=15, valid="0-5", flexible="5+", fields=[
    field("ThrottleTimeMs", "int32", "1+", ignorable=True),
    field("Groups", "[]DescribedGroup", "0+", fields=[
        field("ErrorCode", "int16", "0+"),
        field("GroupId", "string", "0+"),
        field("GroupState", "string", "0+"),
        field("ProtocolType", "string", "0+"),
        # Filled in only while the group is Stable; Dead groups list no members.
        field("ProtocolData", "string", "0+"),
        field("Members", "[]DescribedGroupMember", "0+", fields=[
            field("MemberId", "string", "0+"),
            field("GroupInstanceId", "string", "4+", nullable="4+", default=None,
                  ignorable=True),
            field("ClientId", "string", "0+"),
            field("ClientHost", "string", "0+"),
            field("MemberMetadata", "bytes", "0+"),
            field("MemberAssignment", "bytes", "0+"),
        ]),
        # INT32_MIN means "not requested".
        field("AuthorizedOperations", "int32", "3+", default=-2147483648),
    ]),
])
