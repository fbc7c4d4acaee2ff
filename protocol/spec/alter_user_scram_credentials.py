"""AlterUserScramCredentials (API key 51), version 0, flexible from 0 (KIP-554).

The client salts the password itself: an upsertion carries the salt and the
salted password (Hi(password, salt, iterations) of RFC 5802), never the
password; the broker derives StoredKey and ServerKey from them. Mechanism: 1 =
SCRAM-SHA-256, 2 = SCRAM-SHA-512. One result per user named in the request.
"""

from protocol.schema import field, message

REQUEST = message("AlterUserScramCredentialsRequest",
                  api_key=51, valid="0", flexible="0+", fields=[
    field("Deletions", "[]ScramCredentialDeletion", "0+", fields=[
        field("Name", "string", "0+"),
        field("Mechanism", "int8", "0+"),
    ]),
    field("Upsertions", "[]ScramCredentialUpsertion", "0+", fields=[
        field("Name", "string", "0+"),
        field("Mechanism", "int8", "0+"),
        field("Iterations", "int32", "0+"),
        field("Salt", "bytes", "0+"),
        field("SaltedPassword", "bytes", "0+"),
    ]),
])

RESPONSE = message("AlterUserScramCredentialsResponse",
                   api_key=51, valid="0", flexible="0+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Results", "[]AlterUserScramCredentialsResult", "0+", fields=[
        field("User", "string", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
    ]),
])
