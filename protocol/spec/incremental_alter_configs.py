"""IncrementalAlterConfigs (API key 44), versions 0-1, flexible from 1 (KIP-339).

v1 only goes flexible. ConfigOperation: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT.
"""

from protocol.schema import field, message

REQUEST = message("IncrementalAlterConfigsRequest", api_key=44, valid="0-1", flexible="1+", fields=[
    field("Resources", "[]AlterConfigsResource", "0+", fields=[
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("Configs", "[]AlterableConfig", "0+", fields=[
            field("Name", "string", "0+"),
            field("ConfigOperation", "int8", "0+"),
            field("Value", "string", "0+", nullable="0+"),
        ]),
    ]),
    field("ValidateOnly", "bool", "0+"),
])

RESPONSE = message("IncrementalAlterConfigsResponse", api_key=44, valid="0-1", flexible="1+",
                   fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Responses", "[]AlterConfigsResourceResponse", "0+", fields=[
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
    ]),
])
