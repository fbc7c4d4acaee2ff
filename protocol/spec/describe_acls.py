"""DescribeAcls (API key 29), versions 0-3, flexible from 2 (v0 deprecated in Kafka).

v1 adds PatternTypeFilter / PatternType (default 3 = LITERAL) and answers before
throttling; v2 goes flexible; v3 allows the USER resource type (same layout).
"""

from protocol.schema import field, message

REQUEST = message("DescribeAclsRequest", api_key=29, valid="0-3", flexible="2+", fields=[
    field("ResourceTypeFilter", "int8", "0+"),
    field("ResourceNameFilter", "string", "0+", nullable="0+"),
    field("PatternTypeFilter", "int8", "1+", default=3),
    field("PrincipalFilter", "string", "0+", nullable="0+"),
    field("HostFilter", "string", "0+", nullable="0+"),
    field("Operation", "int8", "0+"),
    field("PermissionType", "int8", "0+"),
])

RESPONSE = message("DescribeAclsResponse", api_key=29, valid="0-3", flexible="2+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "0+"),
    field("ErrorMessage", "string", "0+", nullable="0+"),
    field("Resources", "[]DescribeAclsResource", "0+", fields=[
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("PatternType", "int8", "1+", default=3),
        field("Acls", "[]AclDescription", "0+", fields=[
            field("Principal", "string", "0+"),
            field("Host", "string", "0+"),
            field("Operation", "int8", "0+"),
            field("PermissionType", "int8", "0+"),
        ]),
    ]),
])
