"""AlterConfigs (API key 33), versions 0-2, flexible from 2.

v1 same as v0 (answers before throttling on quota violation); v2 goes flexible.
The request replaces the whole config set of each resource (see
IncrementalAlterConfigs for per-key changes).
"""

from protocol.schema import field, message

REQUEST = message("AlterConfigsRequest", api_key=33, valid="0-2", flexible="2+", fields=[
    field("Resources", "[]AlterConfigsResource", "0+", fields=[
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("Configs", "[]AlterableConfig", "0+", fields=[
            field("Name", "string", "0+"),
            field("Value", "string", "0+", nullable="0+"),
        ]),
    ]),
    field("ValidateOnly", "bool", "0+"),
])

RESPONSE = message("AlterConfigsResponse", api_key=33, valid="0-2", flexible="2+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Responses", "[]AlterConfigsResourceResponse", "0+", fields=[
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
    ]),
])
