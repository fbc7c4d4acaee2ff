"""DescribeUserScramCredentials (API key 50), version 0, flexible from 0 (KIP-554).

Users null or empty asks for every user that has a SCRAM credential. The
response names each user's mechanisms (1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512)
with their iteration counts, never the salt or keys; a top-level error covers
authorization and ZooKeeper failures, a per-user one an unknown, empty or
repeated name.
"""

from protocol.schema import field, message

REQUEST = message("DescribeUserScramCredentialsRequest",
                  api_key=50, valid="0", flexible="0+", fields=[
    field("Users", "[]UserName", "0+", nullable="0+", fields=[
        field("Name", "string", "0+"),
    ]),
])

RESPONSE = message("DescribeUserScramCredentialsResponse",
                   api_key=50, valid="0", flexible="0+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "0+"),
    field("ErrorMessage", "string", "0+", nullable="0+"),
    field("Results", "[]DescribeUserScramCredentialsResult", "0+", fields=[
        field("User", "string", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("CredentialInfos", "[]CredentialInfo", "0+", fields=[
            field("Mechanism", "int8", "0+"),
            field("Iterations", "int32", "0+"),
        ]),
    ]),
])
