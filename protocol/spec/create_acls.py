"""CreateAcls (API key 30), versions 0-3, flexible from 2 (v0 deprecated in Kafka).

v1 adds ResourcePatternType (default 3 = LITERAL) and answers before throttling;
v2 goes flexible; v3 allows the USER resource type (same layout).
"""

from protocol.schema import field, message

REQUEST = message("CreateAclsRequest", api_key=30, valid="0-3", flexible="2+", fields=[
    field("Creations", "[]AclCreation", "0+", fields=[
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("ResourcePatternType", "int8", "1+", default=3),
        field("Principal", "string", "0+"),
        field("Host", "string", "0+"),
        field("Operation", "int8", "0+"),
        field("PermissionType", "int8", "0+"),
    ]),
])

RESPONSE = message("CreateAclsResponse", api_key=30, valid="0-3", flexible="2+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Results", "[]AclCreationResult", "0+", fields=[
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
    ]),
])
