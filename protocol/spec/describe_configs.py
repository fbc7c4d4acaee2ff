"""DescribeConfigs (API key 32), versions 0-4, flexible from 4 (v0 deprecated in Kafka).

v1 adds IncludeSynonyms and, in the response, ConfigSource (replacing v0's
IsDefault) and Synonyms; v2 same as v1 (answers before throttling); v3 adds
IncludeDocumentation and, in the response, ConfigType and Documentation; v4 goes
flexible. A null ConfigurationKeys means "every key of the resource".
"""

from protocol.schema import field, message

REQUEST = message("DescribeConfigsRequest", api_key=32, valid="0-4", flexible="4+", fields=[
    field("Resources", "[]DescribeConfigsResource", "0+", fields=[
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("ConfigurationKeys", "[]string", "0+", nullable="0+"),
    ]),
    field("IncludeSynonyms", "bool", "1+", default=False),
    field("IncludeDocumentation", "bool", "3+", default=False),
])

RESPONSE = message("DescribeConfigsResponse", api_key=32, valid="0-4", flexible="4+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Results", "[]DescribeConfigsResult", "0+", fields=[
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("Configs", "[]DescribeConfigsResourceResult", "0+", fields=[
            field("Name", "string", "0+"),
            field("Value", "string", "0+", nullable="0+"),
            field("ReadOnly", "bool", "0+"),
            field("IsDefault", "bool", "0"),
            field("ConfigSource", "int8", "1+", default=-1, ignorable=True),
            field("IsSensitive", "bool", "0+"),
            field("Synonyms", "[]DescribeConfigsSynonym", "1+", ignorable=True, fields=[
                field("Name", "string", "1+"),
                field("Value", "string", "1+", nullable="0+"),
                field("Source", "int8", "1+"),
            ]),
            field("ConfigType", "int8", "3+", default=0, ignorable=True),
            field("Documentation", "string", "3+", nullable="0+", ignorable=True),
        ]),
    ]),
])
