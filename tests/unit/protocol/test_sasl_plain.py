"""SASL PLAIN tokens (RFC 4616) with Kafka's PlainSaslServer refusals."""

from __future__ import annotations

import pytest

from protocol.sasl_plain import AUTHZID_MISMATCH, parse_plain, plain_token


def test_token_layout() -> None:
    assert plain_token("alice", "alice-secret") == b"\x00alice\x00alice-secret"
    assert plain_token("alice", "pw", authzid="alice") == b"alice\x00alice\x00pw"


@pytest.mark.parametrize("authzid, username, password", [
    ("", "alice", "alice-secret"),
    ("bob", "bob", "s3cr3t"),
    ("", "ünïcödé", "pässwörd with spaces, commas = and ;"),
])
def test_round_trip(authzid: str, username: str, password: str) -> None:
    assert parse_plain(plain_token(username, password, authzid)) == (authzid, username, password)


@pytest.mark.parametrize("token, reason", [
    (b"alice\x00secret", "expected 3 tokens, got 2"),
    (b"", "expected 3 tokens, got 1"),
    (b"\x00alice\x00pw\x00more", "expected 3 tokens, got 4"),
    (b"\x00\x00secret", "username not specified"),
    (b"\x00alice\x00", "password not specified"),
    (b"\x00al\xffice\x00pw", "not valid UTF-8"),
])
def test_malformed_tokens(token: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_plain(token)


def test_foreign_authzid_is_refused_with_kafkas_message() -> None:
    token = plain_token("alice", "pw", authzid="admin")
    with pytest.raises(ValueError) as e:
        parse_plain(token)
    assert str(e.value) == ("Authentication failed: Client requested an authorization id "
                            "that is different from username") == AUTHZID_MISMATCH
    assert parse_plain(token, check_authzid=False) == ("admin", "alice", "pw")


@pytest.mark.parametrize("args, reason", [
    (("", "pw"), "username must not be empty"),
    (("alice", ""), "password must not be empty"),
    (("al\x00ice", "pw"), "username must not contain NUL"),
    (("alice", "p\x00w"), "password must not contain NUL"),
    (("alice", "pw", "a\x00"), "authzid must not contain NUL"),
])
def test_unsendable_parts(args: tuple[str, ...], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        plain_token(*args)
