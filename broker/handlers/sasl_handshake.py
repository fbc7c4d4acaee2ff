"""SaslHandshake (API key 17), versions 0-1: choose the SASL mechanism.

On a SASL listener the connection's ``SaslAuthenticator`` decides (see
``broker.security.sasl_server``); an unsupported mechanism or a handshake in
the wrong state is answered with the listener's enabled mechanisms and then
the connection closes, as Kafka's SaslServerAuthenticator does. On a listener
without SASL, Kafka answers ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from broker.context import RequestContext
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.SASL_HANDSHAKE).response


@handler(ApiKey.SASL_HANDSHAKE)
async def handle_sasl_handshake(ctx: RequestContext, req: Struct) -> Struct:
    sasl = ctx.connection.sasl
    if sasl is None:
        return SPEC.new(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    error = sasl.handshake(req.mechanism, ctx.version)
    if error != ErrorCode.NONE:
        ctx.connection.authentication_failed(
            f"SaslHandshake {error.name} for mechanism {req.mechanism!r}")
        ctx.connection.close_after_response = True
    return SPEC.new(error_code=error, mechanisms=list(sasl.settings.mechanisms))
