"""The server side of SASL on one connection: SaslHandshake, then SaslAuthenticate.

State machine (Kafka's SaslServerAuthenticator, for the mechanisms we serve):

    HANDSHAKE --SaslHandshake(m), m enabled--> AUTHENTICATE --tokens--> COMPLETE
        ^                                                                  |
        +---------- SaslHandshake again (KIP-368 re-authentication) -------+

* Before COMPLETE only ApiVersions, SaslHandshake and SaslAuthenticate are
  served; anything else closes the connection (``allows``).
* SaslHandshake v0 means the client sends the SASL tokens raw (size-prefixed,
  no request header) instead of inside SaslAuthenticate; v1 uses SaslAuthenticate.
* PLAIN: one token ``authzid NUL user NUL password`` checked against the
  listener's JAAS ``user_<name>="<password>"`` options (PlainLoginModule).
  SCRAM-SHA-256/512: two rounds (client-first -> server-first, client-final ->
  server-final) against the salted credential stored in ZooKeeper under
  ``/config/users/<user>`` (read through ``lookup`` on each authentication).
* A failure raises ``AuthenticationFailed`` with Kafka's message; the connection
  answers SASL_AUTHENTICATION_FAILED and closes after
  ``connection.failed.authentication.delay.ms``.
* Re-authentication must keep the principal (Kafka: "Cannot change principals
  during re-authentication").
"""

from __future__ import annotations

import enum
import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from broker.config import ConfigError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.jaas import JaasEntry, parse_jaas, plain_users
from protocol.sasl_plain import parse_plain
from protocol.scram import MECHANISMS as SCRAM_MECHANISMS
from protocol.scram import ScramCredential, ScramError, ScramServer, generic_failure_message

SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
PRE_AUTH_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE,
                           ApiKey.SASL_AUTHENTICATE})
INVALID_CREDENTIALS = "Authentication failed: Invalid username or password"

# (user, mechanism) -> the stored SCRAM credential, or None for an unknown user
CredentialLookup = Callable[[str, str], Awaitable["ScramCredential | None"]]


class AuthenticationFailed(Exception):
    """The client's credentials were refused; ``str(e)`` is the message it gets,
    ``detail`` what the broker logs (Kafka tells the client less than it logs:
    nothing about whether the user exists)."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message


class State(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"


@dataclass(frozen=True)
class SaslSettings:
    """One SASL listener's settings (``listener.name.<l>.*`` before the plain keys)."""

    listener: str
    mechanisms: tuple[str, ...]
    plain_users: dict[str, str] = field(default_factory=dict, repr=False)
    jaas: dict[str, JaasEntry] = field(default_factory=dict, repr=False)  # by mechanism
    max_receive_size: int = 524_288
    reauth_ms: int = 0
    failed_delay_ms: int = 100


def sasl_settings(config: Any, listener: str) -> SaslSettings:
    """Read and check a SASL listener's settings; ConfigError names the key."""
    key = f"listener.name.{listener.lower()}.sasl.enabled.mechanisms (or sasl.enabled.mechanisms)"
    raw = config.for_listener(listener, "sasl.enabled.mechanisms") or ""
    mechanisms = tuple(m.strip().upper() for m in raw.split(",") if m.strip())
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported or not mechanisms:
        raise ConfigError(f"Invalid value {raw!r} for configuration {key}: supported "
                          f"mechanisms are {', '.join(SUPPORTED_MECHANISMS)} (not "
                          f"{', '.join(unsupported) or 'none'})")
    jaas: dict[str, JaasEntry] = {}
    for m in mechanisms:
        jkey = f"listener.name.{listener.lower()}.{m.lower()}.sasl.jaas.config"
        text = config.listener_overrides.get(jkey)
        if text is None:
            if m == "PLAIN":
                raise ConfigError(f"{jkey} must be set: PLAIN on listener {listener} needs "
                                  "its users (user_<name>=\"<password>\")")
            continue
        try:
            jaas[m] = parse_jaas(text)
        except ValueError as e:
            raise ConfigError(f"Invalid value for configuration {jkey}: {e}") from None
    return SaslSettings(
        listener, mechanisms, plain_users(jaas["PLAIN"]) if "PLAIN" in jaas else {}, jaas,
        int(config.for_listener(listener, "sasl.server.max.receive.size")),
        int(config.for_listener(listener, "connections.max.reauth.ms")),
        int(config.for_listener(listener, "connection.failed.authentication.delay.ms")))


class SaslAuthenticator:
    """One connection's SASL state; see the module docstring. Sans-I/O apart from
    the credential lookup; the connection moves the bytes."""

    def __init__(self, settings: SaslSettings, lookup: CredentialLookup) -> None:
        self.settings = settings
        self.lookup = lookup
        self.state = State.HANDSHAKE
        self.mechanism: str | None = None
        self.raw_tokens = False          # SaslHandshake v0: tokens without a request header
        self.principal: str | None = None
        self.reauthenticating = False
        self._scram: ScramServer | None = None
        self._scram_user: str | None = None     # from the client-first message

    @property
    def complete(self) -> bool:
        return self.state is State.COMPLETE

    def allows(self, api_key: int) -> bool:
        """Whether a request of ``api_key`` may be served now."""
        return self.state is State.COMPLETE or api_key in PRE_AUTH_APIS

    def handshake(self, mechanism: str, version: int) -> ErrorCode:
        """SaslHandshake: NONE, UNSUPPORTED_SASL_MECHANISM or ILLEGAL_SASL_STATE
        (the connection closes after answering an error)."""
        if self.state is State.AUTHENTICATE:
            return ErrorCode.ILLEGAL_SASL_STATE
        if self.state is State.COMPLETE:
            if version < 1 or self.raw_tokens:     # only SaslAuthenticate clients re-authenticate
                return ErrorCode.ILLEGAL_SASL_STATE
            self.reauthenticating = True
        if mechanism not in self.settings.mechanisms:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        self.mechanism = mechanism
        self.raw_tokens = version == 0
        self.state = State.AUTHENTICATE
        self._scram = ScramServer(mechanism) if mechanism in SCRAM_MECHANISMS else None
        self._scram_user = None
        return ErrorCode.NONE

    async def authenticate(self, token: bytes) -> bytes:
        """One client token in, the server's token out; COMPLETE (with ``principal``
        set) once the mechanism is done. AuthenticationFailed on refusal."""
        if self.state is not State.AUTHENTICATE:
            raise AuthenticationFailed("Unexpected SaslAuthenticate request: no "
                                       "SaslHandshake before it")
        if len(token) > self.settings.max_receive_size:
            raise AuthenticationFailed(f"SASL token of {len(token)} bytes exceeds "
                                       "sasl.server.max.receive.size")
        if self._scram is None:
            return self._plain(token)
        return await self._scram_step(token)

    def _plain(self, token: bytes) -> bytes:
        try:
            _authzid, user, password = parse_plain(token)
        except ValueError as e:
            raise AuthenticationFailed(str(e)) from None
        expected = self.settings.plain_users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise AuthenticationFailed(INVALID_CREDENTIALS)
        self._done(user)
        return b""

    async def _scram_step(self, token: bytes) -> bytes:
        assert self._scram is not None and self.mechanism is not None
        try:
            if self._scram_user is None:
                self._scram_user = self._scram.receive_client_first(token)
                return self._scram.server_first(
                    await self.lookup(self._scram_user, self.mechanism))
            reply = self._scram.server_final(token)
        except ScramError as e:
            told = str(e) if e.client_visible else generic_failure_message(
                self.mechanism, reauthentication=self.reauthenticating)
            raise AuthenticationFailed(told, str(e)) from None
        self._done(self._scram_user)
        return reply

    def _done(self, user: str) -> None:
        principal = f"User:{user}"
        if self.reauthenticating and principal != self.principal:
            raise AuthenticationFailed(f"Cannot change principals during re-authentication "
                                       f"from {self.principal}: {principal}")
        self.principal = principal
        self.state = State.COMPLETE
        self.reauthenticating = False
        self._scram = None
