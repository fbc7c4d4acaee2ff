"""SaslAuthenticate (API key 36), versions 0-2, flexible from 2.

Carries one SASL token each way (KIP-152). v1 adds SessionLifetimeMs to the
response (KIP-368); v2 flexible.
"""

from protocol.schema import field, message

REQUEST = message("SaslAuthenticateRequest", api_key=36, valid="0-2", flexible="2+", fields=[
    field("AuthBytes", "bytes", "0+"),
])

RESPONSE = message("SaslAuthenticateResponse", api_key=36, valid="0-2", flexible="2+", fields=[
    field("ErrorCode", "int16", "0+"),
    field("ErrorMessage", "string", "0+", nullable="0+"),
    field("AuthBytes", "bytes", "0+"),
    field("SessionLifetimeMs", "int64", "1+", default=0, ignorable=True),
])
