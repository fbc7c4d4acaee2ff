"""SaslHandshake (API key 17), versions 0-1, never flexible.

Picks the SASL mechanism. In v0 the SASL tokens then travel as raw frames; from
v1 they travel inside SaslAuthenticate. The version cannot be raised because
clients up to 2.4 negotiate it wrongly (KAFKA-9577).
"""

from protocol.schema import field, message

REQUEST = message("SaslHandshakeRequest", api_key=17, valid="0-1", flexible="none", fields=[
    field("Mechanism", "string", "0+"),
])

RESPONSE = message("SaslHandshakeResponse", api_key=17, valid="0-1", flexible="none", fields=[
    field("ErrorCode", "int16", "0+"),
    field("Mechanisms", "[]string", "0+"),
])
