"""AlterClientQuotas (API key 49), versions 0-1, flexible from 1 (KIP-546).

Each entry names one entity (its (type, name) pairs; name null for the type's
default) and the operations on its quota keys: set Key to Value, or remove it
(Remove true; Value ignored). ValidateOnly checks without writing. One result
per entry, naming the entity back.
"""

from protocol.schema import field, message

REQUEST = message("AlterClientQuotasRequest",
                  api_key=49, valid="0-1", flexible="1+", fields=[
    field("Entries", "[]EntryData", "0+", fields=[
        field("Entity", "[]EntityData", "0+", fields=[
            field("EntityType", "string", "0+"),
            field("EntityName", "string", "0+", nullable="0+"),
        ]),
        field("Ops", "[]OpData", "0+", fields=[
            field("Key", "string", "0+"),
            field("Value", "float64", "0+"),
            field("Remove", "bool", "0+"),
        ]),
    ]),
    field("ValidateOnly", "bool", "0+"),
])

RESPONSE = message("AlterClientQuotasResponse",
                   api_key=49, valid="0-1", flexible="1+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Entries", "[]EntryData", "0+", fields=[
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("Entity", "[]EntityData", "0+", fields=[
            field("EntityType", "string", "0+"),
            field("EntityName", "string", "0+", nullable="0+"),
        ]),
    ]),
])
