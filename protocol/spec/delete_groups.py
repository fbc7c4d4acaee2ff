"""DeleteGroups (API key 42), versions 0-2, flexible from 2.

v1 as v0 (responses sent before throttling); v2 flexible.
"""

from protocol.schema import field, message

REQUEST = message("DeleteGroupsRequest", api_key=42, valid="0-2", flexible="2+", fields=[
    field("GroupsNames", "[]string", "0+"),   # sic: Kafka's name
])

RESPONSE = message("DeleteGroupsResponse", api_key=42, valid="0-2", flexible="2+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Results", "[]DeletableGroupResult", "0+", fields=[
        field("GroupId", "string", "0+"),
        field("ErrorCode", "int16", "0+"),
    ]),
])
