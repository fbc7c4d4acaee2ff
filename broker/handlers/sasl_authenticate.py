"""SaslAuthenticate (API key 36), versions 0-2: one SASL token each way (KIP-152).

The token goes to the connection's ``SaslAuthenticator``. A refusal is answered
SASL_AUTHENTICATION_FAILED with Kafka's message after
``connection.failed.authentication.delay.ms`` (KIP-306: a client that retries
at once is slowed down) and the connection closes; one log line names the
client and the reason. On success v1+ carries the session lifetime
(``connections.max.reauth.ms``, KIP-368; 0 = no re-authentication needed). On a
listener without SASL, or before SaslHandshake: ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

import asyncio

from broker.context import RequestContext
from broker.dispatch import handler
from broker.security.sasl_server import AuthenticationFailed, State
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.SASL_AUTHENTICATE).response


@handler(ApiKey.SASL_AUTHENTICATE)
async def handle_sasl_authenticate(ctx: RequestContext, req: Struct) -> Struct:
    conn = ctx.connection
    sasl = conn.sasl
    if sasl is None or sasl.state is not State.AUTHENTICATE:
        conn.close_after_response = sasl is not None
        return SPEC.new(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                        error_message="Unexpected SaslAuthenticate request"
                        + ("" if sasl is not None else ": the listener has no SASL"),
                        auth_bytes=b"", session_lifetime_ms=0)
    try:
        reply = await sasl.authenticate(bytes(req.auth_bytes))
    except AuthenticationFailed as e:
        conn.authentication_failed(e.detail)
        await asyncio.sleep(sasl.settings.failed_delay_ms / 1000)
        conn.close_after_response = True
        return SPEC.new(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                        error_message=str(e), auth_bytes=b"", session_lifetime_ms=0)
    conn.authenticated()
    lifetime = sasl.settings.reauth_ms if sasl.complete else 0
    return SPEC.new(error_code=ErrorCode.NONE, error_message=None, auth_bytes=reply,
                    session_lifetime_ms=lifetime)
