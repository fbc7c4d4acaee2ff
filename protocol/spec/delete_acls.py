"""DeleteAcls (API key 31), versions 0-3, flexible from 2 (v0 deprecated in Kafka).

v1 adds PatternTypeFilter / PatternType (default 3 = LITERAL) and answers before
throttling; v2 goes flexible; v3 allows the USER resource type (same layout).
"""

from protocol.schema import field, message

REQUEST = message("DeleteAclsRequest", api_key=31, valid="0-3", flexible="2+", fields=[
    field("Filters", "[]DeleteAclsFilter", "0+", fields=[
        field("ResourceTypeFilter", "int8", "0+"),
        field("ResourceNameFilter", "string", "0+", nullable="0+"),
        field("PatternTypeFilter", "int8", "1+", default=3),
        field("PrincipalFilter", "string", "0+", nullable="0+"),
        field("HostFilter", "string", "0+", nullable="0+"),
        field("Operation", "int8", "0+"),
        field("PermissionType", "int8", "0+"),
    ]),
])

RESPONSE = message("DeleteAclsResponse", api_key=31, valid="0-3", flexible="2+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("FilterResults", "[]DeleteAclsFilterResult", "0+", fields=[
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("MatchingAcls", "[]DeleteAclsMatchingAcl", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("PatternType", "int8", "1+", default=3),
            field("Principal", "string", "0+"),
            field("Host", "string", "0+"),
            field("Operation", "int8", "0+"),
            field("PermissionType", "int8", "0+"),
        ]),
    ]),
])
