"""FindCoordinator (API key 10), versions 0-6, flexible from 3.

v0 looks up a group coordinator by a single Key; v1 adds KeyType (0 group,
1 transaction) and, in the response, throttle time and an error message; v2 as
v1 (responses sent before throttling); v3 flexible; v4 batches lookups:
CoordinatorKeys replaces Key and the response carries one Coordinators entry
per key (KIP-699); v5 may return TRANSACTION_ABORTABLE (KIP-890); v6 allows
share-group keys (KIP-932).
"""

from protocol.schema import field, message

REQUEST = message("FindCoordinatorRequest", api_key=10, valid="0-6", flexible="3+", fields=[
    field("Key", "string", "0-3"),
    field("KeyType", "int8", "1+", default=0),
    field("CoordinatorKeys", "[]string", "4+"),
])

RESPONSE = message("FindCoordinatorResponse", api_key=10, valid="0-6", flexible="3+", fields=[
    field("ThrottleTimeMs", "int32", "1+", ignorable=True),
    # v0-v3: one coordinator, described at top level.
    field("ErrorCode", "int16", "0-3"),
    field("ErrorMessage", "string", "1-3", nullable="1-3", ignorable=True),
    field("NodeId", "int32", "0-3"),
    field("Host", "string", "0-3"),
    field("Port", "int32", "0-3"),
    # v4+: one entry per requested key.
    field("Coordinators", "[]Coordinator", "4+", fields=[
        field("Key", "string", "4+"),
        field("NodeId", "int32", "4+"),
        field("Host", "string", "4+"),
        field("Port", "int32", "4+"),
        field("ErrorCode", "int16", "4+"),
        field("ErrorMessage", "string", "4+", nullable="4+", ignorable=True),
    ]),
])
