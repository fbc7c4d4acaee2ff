"""DescribeClientQuotas (API key 48), versions 0-1, flexible from 1 (KIP-546).

A filter is a list of components, one per entity type ("user", "client-id",
"ip"): MatchType 0 = the entity named by Match exactly, 1 = the type's default
entity (Match null), 2 = any specified entity of the type, default included
(Match null). Strict leaves out entities that have a type the filter does not
name. The response lists each matching entity (its (type, name) pairs, name null
for the default) with its quota values as doubles; a top-level error (and null
Entries) answers a filter the broker cannot serve.
"""

from protocol.schema import field, message

REQUEST = message("DescribeClientQuotasRequest",
                  api_key=48, valid="0-1", flexible="1+", fields=[
    field("Components", "[]ComponentData", "0+", fields=[
        field("EntityType", "string", "0+"),
        field("MatchType", "int8", "0+"),
        field("Match", "string", "0+", nullable="0+"),
    ]),
    field("Strict", "bool", "0+"),
])

RESPONSE = message("DescribeClientQuotasResponse",
                   api_key=48, valid="0-1", flexible="1+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "0+"),
    field("ErrorMessage", "string", "0+", nullable="0+"),
    field("Entries", "[]EntryData", "0+", nullable="0+", fields=[
        field("Entity", "[]EntityData", "0+", fields=[
            field("EntityType", "string", "0+"),
            field("EntityName", "string", "0+", nullable="0+"),
        ]),
        field("Values", "[]ValueData", "0+", fields=[
            field("Key", "string", "0+"),
            field("Value", "float64", "0+"),
        ]),
    ]),
])
