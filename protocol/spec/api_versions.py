"""ApiVersions (API key 18), versions 0-4, flexible from 3.

The client's opening request: which versions of which APIs the broker speaks.
v1 adds ThrottleTimeMs to the response; v2 is identical to v1; v3 is the first
flexible version: the request carries the client software name and version and
the response gains the tagged feature fields (SupportedFeatures,
FinalizedFeaturesEpoch, FinalizedFeatures, ZkMigrationReady); v4 has the same
layout, but SupportedFeatures may now list features whose MinVersion is 0
(KAFKA-17011; v0-v3 leave those out). The response header quirk (always
header v0) lives in protocol/headers.py, not here.
"""

from protocol.schema import field, message

REQUEST = message("ApiVersionsRequest", api_key=18, valid="0-4", flexible="3+", fields=[
    field("ClientSoftwareName", "string", "3+", ignorable=True),
    field("ClientSoftwareVersion", "string", "3+", ignorable=True),
])

RESPONSE = message("ApiVersionsResponse", api_key=18, valid="0-4", flexible="3+", fields=[
    field("ErrorCode", "int16", "0+"),
    field("ApiKeys", "[]ApiVersion", "0+", fields=[
        field("ApiKey", "int16", "0+"),
        field("MinVersion", "int16", "0+"),
        field("MaxVersion", "int16", "0+"),
    ]),
    field("ThrottleTimeMs", "int32", "1+", ignorable=True),
    field("SupportedFeatures", "[]SupportedFeatureKey", "3+",
          tagged="3+", tag=0, ignorable=True, fields=[
        field("Name", "string", "3+"),
        field("MinVersion", "int16", "3+"),
        field("MaxVersion", "int16", "3+"),
    ]),
    field("FinalizedFeaturesEpoch", "int64", "3+", tagged="3+", tag=1, default=-1, ignorable=True),
    field("FinalizedFeatures", "[]FinalizedFeatureKey", "3+",
          tagged="3+", tag=2, ignorable=True, fields=[
        field("Name", "string", "3+"),
        field("MaxVersionLevel", "int16", "3+"),
        field("MinVersionLevel", "int16", "3+"),
    ]),
    field("ZkMigrationReady", "bool", "3+", tagged="3+", tag=3, default=False, ignorable=True),
])
