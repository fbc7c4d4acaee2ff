"""The server side of SASL (broker.security.sasl_server) against our client-side
mechanism code: states, PLAIN users from JAAS, SCRAM against stored credentials."""

from __future__ import annotations

import asyncio

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.security.sasl_server import (AuthenticationFailed, SaslAuthenticator, State,
                                         sasl_settings)
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.sasl_plain import plain_token
from protocol.scram import ScramClient, ScramCredential, make_credential

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="alice-secret";')
CONFIG = BrokerConfig.from_properties({
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "connections.max.reauth.ms": "60000"})
CREDS = {("alice", "SCRAM-SHA-512"): make_credential("SCRAM-SHA-512", "alice-secret")}


async def lookup(user: str, mechanism: str) -> ScramCredential | None:
    return CREDS.get((user, mechanism))


def authenticator() -> SaslAuthenticator:
    return SaslAuthenticator(sasl_settings(CONFIG, "SASL_PLAINTEXT"), lookup)


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_settings_read_listener_keys_and_jaas_users() -> None:
    s = sasl_settings(CONFIG, "SASL_PLAINTEXT")
    assert s.mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert s.plain_users == {"admin": "admin-secret", "alice": "alice-secret"}
    assert s.reauth_ms == 60000


def test_unsupported_mechanism_or_missing_plain_users_stop_start_up() -> None:
    with pytest.raises(ConfigError, match="sasl.enabled.mechanisms.*GSSAPI"):
        sasl_settings(BrokerConfig(), "SASL_PLAINTEXT")
    with pytest.raises(ConfigError, match="plain.sasl.jaas.config must be set"):
        sasl_settings(BrokerConfig.from_properties({"sasl.enabled.mechanisms": "PLAIN"}),
                      "SASL_SSL")


def test_only_handshake_apis_before_authentication() -> None:
    a = authenticator()
    assert a.allows(ApiKey.API_VERSIONS) and a.allows(ApiKey.SASL_HANDSHAKE)
    assert not a.allows(ApiKey.METADATA)
    assert a.handshake("GSSAPI", 1) == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert a.handshake("PLAIN", 1) == ErrorCode.NONE
    assert a.handshake("PLAIN", 1) == ErrorCode.ILLEGAL_SASL_STATE   # mid-authentication


def test_plain_accepts_a_jaas_user_and_refuses_a_wrong_password() -> None:
    a = authenticator()
    a.handshake("PLAIN", 1)
    assert run(a.authenticate(plain_token("alice", "alice-secret"))) == b""
    assert a.complete and a.principal == "User:alice" and a.allows(ApiKey.METADATA)
    b = authenticator()
    b.handshake("PLAIN", 1)
    with pytest.raises(AuthenticationFailed, match="Invalid username or password"):
        run(b.authenticate(plain_token("alice", "wrong")))
    assert b.state is State.AUTHENTICATE and b.principal is None


def scram_login(a: SaslAuthenticator, user: str, password: str) -> None:
    client = ScramClient("SCRAM-SHA-512", user, password)
    server_first = run(a.authenticate(client.first_message()))
    server_final = run(a.authenticate(client.final_message(server_first)))
    client.check_server_final(server_final)


def test_scram_against_the_stored_credential() -> None:
    a = authenticator()
    assert a.handshake("SCRAM-SHA-512", 1) == ErrorCode.NONE
    scram_login(a, "alice", "alice-secret")
    assert a.principal == "User:alice"


@pytest.mark.parametrize("user,password", [("alice", "nope"), ("nobody", "x")])
def test_scram_failures_tell_the_client_nothing_specific(user: str, password: str) -> None:
    a = authenticator()
    a.handshake("SCRAM-SHA-512", 1)
    with pytest.raises(AuthenticationFailed) as e:
        scram_login(a, user, password)
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in str(e.value)
    assert e.value.detail != str(e.value)       # the broker logs the real reason


def test_reauthentication_keeps_the_principal() -> None:
    a = authenticator()
    a.handshake("PLAIN", 1)
    run(a.authenticate(plain_token("alice", "alice-secret")))
    assert a.handshake("PLAIN", 1) == ErrorCode.NONE and a.reauthenticating
    with pytest.raises(AuthenticationFailed, match="Cannot change principals"):
        run(a.authenticate(plain_token("admin", "admin-secret")))
    assert a.principal == "User:alice"


def test_v0_handshake_means_raw_tokens_and_no_reauthentication() -> None:
    a = authenticator()
    a.handshake("PLAIN", 0)
    assert a.raw_tokens
    run(a.authenticate(plain_token("alice", "alice-secret")))
    assert a.handshake("PLAIN", 1) == ErrorCode.ILLEGAL_SASL_STATE
