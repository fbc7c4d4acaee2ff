"""ListGroups (API key 16), versions 0-5, flexible from 3.

v1 adds throttle time to the response; v2 as v1 (responses sent before
throttling); v3 flexible; v4 adds StatesFilter and reports each GroupState
(KIP-518); v5 adds TypesFilter and reports each GroupType (KIP-848).
"""

from protocol.schema import field, message

REQUEST = message("ListGroupsRequest", api_key=16, valid="0-5", flexible="3+", fields=[
    field("StatesFilter", "[]string", "4+"),   # empty: every state
    field("TypesFilter", "[]string", "5+"),    # empty: every type
])

RESPONSE = message("ListGroupsResponse", api_key=16, valid="0-5", flexible="3+", fields=[
    field("ThrottleTimeMs", "int32", "1+", ignorable=True),
    field("ErrorCode", "int16", "0+"),
    field("Groups", "[]ListedGroup", "0+", fields=[
        field("GroupId", "string", "0+"),
        field("ProtocolType", "string", "0+"),
        field("GroupState", "string", "4+", ignorable=True),
        field("GroupType", "string", "5+", ignorable=True),
    ]),
])
