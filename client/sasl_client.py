"""SASL authentication of a newly opened connection (KIP-43, KIP-152, KIP-368).

``KafkaConnection.open`` runs ``authenticate`` right after the ApiVersions handshake
when the security protocol is SASL_PLAINTEXT or SASL_SSL; nothing else is sent on
the connection until it returns. The steps:

1. SaslHandshake, at the highest version both sides speak (v1: the tokens then
   travel inside SaslAuthenticate requests), naming our mechanism. The broker
   answers with its enabled mechanisms; an error (UNSUPPORTED_SASL_MECHANISM) or
   our mechanism missing from them is ``AuthenticationFailed`` naming them. A
   broker with only SaslHandshake v0 (raw tokens outside Kafka frames, Kafka
   before 1.0) or without SaslAuthenticate is refused.
2. SaslAuthenticate rounds, one token of the mechanism's exchange each way
   (``exchange``, a generator: it yields our token and is sent the broker's)::

       PLAIN          [authzid] NUL username NUL password  ->  (empty)
       SCRAM-SHA-*    client-first  ->  server-first
                      client-final  ->  server-final (its signature checked: a
                                        broker that does not know the credential
                                        is refused too)

   A non-zero error_code ends the exchange: ``AuthenticationFailed`` carrying the
   broker's error_message (Kafka's, e.g. "Authentication failed: Invalid username
   or password").
3. The last response's session_lifetime_ms (v1+, KIP-368; 0: no limit) is
   returned; the connection keeps it. A broker with
   ``connections.max.reauth.ms`` closes a connection that outlives it; we do
   not re-authenticate yet, so such a connection fails and ``BrokerPool``
   opens a new one.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Protocol

from client.errors import AuthenticationFailed, NoCommonVersion
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.sasl_plain import plain_token
from protocol.scram import ScramClient, ScramError
from protocol.spec import api

if TYPE_CHECKING:
    from protocol.schema import Struct


class SaslConnection(Protocol):
    """What the SASL rounds use of the connection being opened (client.connection's
    KafkaConnection, which imports this module)."""

    host: str
    port: int

    def version_for(self, api_key: int, max_version: int | None = None) -> int: ...

    async def request(self, api_key: int, body: Struct, version: int | None = None, *,
                      expect_response: bool = True, timeout: float | None = None
                      ) -> Struct | None: ...

__all__ = ["authenticate", "exchange"]

Exchange = Generator[bytes, bytes, None]   # yields our tokens, is sent the broker's


def exchange(mechanism: str, username: str, password: str) -> Exchange:
    """The client's side of one SASL exchange, as tokens (see the module docstring).
    ScramError when the broker's messages do not check out."""
    if mechanism == "PLAIN":
        yield plain_token(username, password)
        return
    scram = ScramClient(mechanism, username, password)
    server_first = yield scram.first_message()
    server_final = yield scram.final_message(server_first)
    scram.check_server_final(server_final)


async def authenticate(conn: SaslConnection, mechanism: str, username: str,
                       password: str) -> int:
    """Authenticate ``conn`` (handshaken, nothing else in flight); -> the session
    lifetime in ms (0: none). AuthenticationFailed when the broker refuses."""
    where = f"{conn.host}:{conn.port}"
    enabled = await _handshake(conn, mechanism)
    version = _version(conn, ApiKey.SASL_AUTHENTICATE, 0)
    request = api(ApiKey.SASL_AUTHENTICATE).request
    steps = exchange(mechanism, username, password)
    try:
        token = next(steps)
    except ValueError as e:   # a username or password PLAIN cannot carry
        raise AuthenticationFailed(f"SASL/{mechanism} to {where}: {e}", conn.host,
                                   conn.port) from None
    while True:
        resp = await conn.request(ApiKey.SASL_AUTHENTICATE, request.new(auth_bytes=token),
                                  version=version)
        assert resp is not None
        if resp.error_code != ErrorCode.NONE:
            err = ErrorCode.from_code(resp.error_code)
            raise AuthenticationFailed(
                f"SASL/{mechanism} authentication to {where} failed ({err.name}): "
                f"{resp.error_message or err.message}", conn.host, conn.port,
                error_code=resp.error_code, mechanisms=enabled)
        try:
            token = steps.send(bytes(resp.auth_bytes))
        except StopIteration:
            return int(getattr(resp, "session_lifetime_ms", 0) or 0)
        except ScramError as e:
            raise AuthenticationFailed(f"SASL/{mechanism} authentication to {where} failed: "
                                       f"{e}", conn.host, conn.port,
                                       mechanisms=enabled) from None


async def _handshake(conn: SaslConnection, mechanism: str) -> tuple[str, ...]:
    """SaslHandshake; -> the broker's enabled mechanisms (ours among them)."""
    where = f"{conn.host}:{conn.port}"
    version = _version(conn, ApiKey.SASL_HANDSHAKE, 1)
    resp = await conn.request(ApiKey.SASL_HANDSHAKE,
                              api(ApiKey.SASL_HANDSHAKE).request.new(mechanism=mechanism),
                              version=version)
    assert resp is not None
    enabled = tuple(resp.mechanisms or ())
    listed = ", ".join(enabled) or "none"
    if resp.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM or (
            resp.error_code == ErrorCode.NONE and mechanism not in enabled):
        raise AuthenticationFailed(f"{where} does not enable SASL mechanism {mechanism}; its "
                                   f"enabled mechanisms: {listed}", conn.host, conn.port,
                                   error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                   mechanisms=enabled)
    if resp.error_code != ErrorCode.NONE:
        err = ErrorCode.from_code(resp.error_code)
        hint = " (is this a SASL listener?)" if err is ErrorCode.ILLEGAL_SASL_STATE else ""
        raise AuthenticationFailed(f"SaslHandshake with {where} failed ({err.name}): "
                                   f"{err.message}{hint}", conn.host, conn.port,
                                   error_code=resp.error_code, mechanisms=enabled)
    return enabled


def _version(conn: SaslConnection, api_key: int, minimum: int) -> int:
    """The highest common version of ``api_key``, at least ``minimum``."""
    name = api(api_key).name
    try:
        version = conn.version_for(api_key)
    except NoCommonVersion:
        raise AuthenticationFailed(f"{conn.host}:{conn.port} does not offer {name} (is it a "
                                   "SASL listener?)", conn.host, conn.port) from None
    if version < minimum:
        raise AuthenticationFailed(f"{conn.host}:{conn.port} speaks {name} up to v{version}; "
                                   f"we need v{minimum}+ (KIP-152)", conn.host, conn.port)
    return version
