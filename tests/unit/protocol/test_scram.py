"""SCRAM: the RFC 7677 exchange byte for byte on both sides, round trips, every refusal."""

from __future__ import annotations

import base64

import pytest

from protocol.scram import (
    MECHANISMS,
    ScramClient,
    ScramCredential,
    ScramError,
    ScramServer,
    credential_from_salted,
    escape_username,
    format_credential,
    generic_failure_message,
    make_credential,
    parse_credential,
    salted_password,
    unescape_username,
)

# RFC 7677 section 3, copied from the RFC's text (user "user", password "pencil").
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"  # what the server appends
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

SHA256, SHA512 = "SCRAM-SHA-256", "SCRAM-SHA-512"


def rfc_server() -> ScramServer:
    return ScramServer(SHA256, nonce=RFC_SERVER_NONCE)


def rfc_credential() -> ScramCredential:
    return make_credential(SHA256, "pencil", salt=RFC_SALT, iterations=4096)


def exchange(client: ScramClient, server: ScramServer, credential: ScramCredential | None) -> None:
    """Run all four messages; raises where either side refuses."""
    username = server.receive_client_first(client.first_message())
    assert credential is None or username
    client_final = client.final_message(server.server_first(credential))
    client.check_server_final(server.server_final(client_final))


# --- the RFC 7677 vector ----------------------------------------------------------------


def test_client_reproduces_rfc_7677() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first_message() == RFC_CLIENT_FIRST
    assert client.final_message(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.check_server_final(RFC_SERVER_FINAL)
    assert client.complete


def test_server_reproduces_rfc_7677() -> None:
    server = rfc_server()
    assert server.receive_client_first(RFC_CLIENT_FIRST) == "user"
    assert server.extensions == {} and server.authzid == "" and not server.token_auth
    assert server.server_first(rfc_credential()) == RFC_SERVER_FIRST
    assert not server.complete
    assert server.server_final(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete


def test_credential_from_salted_matches_make_credential() -> None:
    salted = salted_password(SHA256, "pencil", RFC_SALT, 4096)
    assert len(salted) == 32
    assert credential_from_salted(SHA256, salted, RFC_SALT, 4096) == rfc_credential()


# --- round trips and refusals -----------------------------------------------------------


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_round_trip(mechanism: str) -> None:
    client = ScramClient(mechanism, "alice", "alice-secret")
    server = ScramServer(mechanism)
    exchange(client, server, make_credential(mechanism, "alice-secret"))
    assert client.complete and server.complete and server.username == "alice"


def test_wrong_password_fails_at_server_final() -> None:
    client = ScramClient(SHA512, "alice", "wrong")
    server = ScramServer(SHA512)
    server.receive_client_first(client.first_message())
    client_final = client.final_message(server.server_first(make_credential(SHA512, "right")))
    with pytest.raises(ScramError, match="Authentication failed: Invalid client proof") as e:
        server.server_final(client_final)
    assert not e.value.client_visible and not server.complete


def test_credential_of_other_mechanism_fails() -> None:
    client = ScramClient(SHA512, "alice", "pw")
    with pytest.raises(ScramError, match="Invalid client proof"):
        exchange(client, ScramServer(SHA512), make_credential(SHA256, "pw"))


def test_tampered_server_signature_fails_at_check_server_final() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    client.final_message(RFC_SERVER_FIRST)
    signature = bytearray(base64.b64decode(RFC_SERVER_FINAL[2:]))
    signature[0] ^= 1
    with pytest.raises(ScramError, match="Invalid server signature"):
        client.check_server_final(b"v=" + base64.b64encode(bytes(signature)))
    assert not client.complete


def test_server_error_answer_fails_the_client() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    client.final_message(RFC_SERVER_FIRST)
    with pytest.raises(ScramError, match="failed with error: invalid-proof"):
        client.check_server_final(b"e=invalid-proof")


def test_client_refuses_a_server_nonce_not_extending_its_own() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce="abc")
    client.first_message()
    with pytest.raises(ScramError, match="does not start with client nonce"):
        client.final_message(b"r=xyzabc123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


def test_server_refuses_a_final_nonce_not_its_own() -> None:
    server = rfc_server()
    server.receive_client_first(RFC_CLIENT_FIRST)
    server.server_first(rfc_credential())
    forged = RFC_CLIENT_FINAL.replace(b"$k0,", b"$k1,")
    with pytest.raises(ScramError, match="Invalid client nonce"):
        server.server_final(forged)


def test_server_accepts_librdkafkas_doubled_client_nonce_as_kafka_does() -> None:
    """librdkafka <= 2.0 sends r=<client nonce><client nonce><server nonce> and computes
    its proof over that message; Kafka checks only the suffix, so must we."""
    import hashlib
    import hmac as hmac_

    server = rfc_server()
    server.receive_client_first(RFC_CLIENT_FIRST)
    server.server_first(rfc_credential())
    without_proof = (f"c=biws,r={RFC_CLIENT_NONCE}{RFC_CLIENT_NONCE}{RFC_SERVER_NONCE}"
                     .encode())
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", RFC_SALT, 4096)
    client_key = hmac_.new(salted, b"Client Key", "sha256").digest()
    auth = RFC_CLIENT_FIRST[3:] + b"," + RFC_SERVER_FIRST + b"," + without_proof
    signature = hmac_.new(hashlib.sha256(client_key).digest(), auth, "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    answer = server.server_final(without_proof + b",p=" + base64.b64encode(proof))
    assert answer.startswith(b"v=")


def test_server_refuses_other_channel_binding_in_final() -> None:
    server = rfc_server()
    server.receive_client_first(RFC_CLIENT_FIRST)
    server.server_first(rfc_credential())
    with pytest.raises(ScramError, match="channel binding"):
        server.server_final(RFC_CLIENT_FINAL.replace(b"c=biws", b"c=eSws"))  # "y,,"


def test_client_refuses_too_few_iterations() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    with pytest.raises(ScramError, match="4095 is less than the minimum 4096"):
        client.final_message(RFC_SERVER_FIRST.replace(b"i=4096", b"i=4095"))


def test_server_refuses_a_credential_with_too_few_iterations() -> None:
    server = rfc_server()
    server.receive_client_first(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError, match="Iterations 100 is less than the minimum 4096"):
        server.server_first(make_credential(SHA256, "pencil", iterations=100))


def test_unknown_user_fails_like_kafka() -> None:
    server = rfc_server()
    server.receive_client_first(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError, match="^Authentication failed: Invalid user credentials$"):
        server.server_first(None)
    assert generic_failure_message(SHA256) == (
        "Authentication failed during authentication due to invalid credentials "
        "with SASL mechanism SCRAM-SHA-256")


# --- usernames, extensions, the gs2 header -----------------------------------------------


@pytest.mark.parametrize("username", ["a,b", "a=b", "=2C", "x=3D,=,", "ünï,cödé="])
def test_escaped_usernames_round_trip(username: str) -> None:
    saslname = escape_username(username)
    assert "," not in saslname
    assert unescape_username(saslname) == username
    client = ScramClient(SHA256, username, "pw")
    server = ScramServer(SHA256)
    exchange(client, server, make_credential(SHA256, "pw"))
    assert server.username == username


def test_escaping_is_the_rfcs() -> None:
    assert escape_username("a=b,c") == "a=3Db=2Cc"
    first = ScramClient(SHA256, "a=b,c", "pw", nonce="n0nce").first_message()
    assert first == b"n,,n=a=3Db=2Cc,r=n0nce"


@pytest.mark.parametrize("saslname", ["a=b", "a=2c", "a=", "", "a,b"])
def test_bad_saslnames_are_refused(saslname: str) -> None:
    with pytest.raises(ScramError, match="Invalid username"):
        unescape_username(saslname)


def test_tokenauth_extension_is_accepted_and_exposed() -> None:
    client = ScramClient(SHA256, "tokenid", "hmac", nonce="abc", extensions={"tokenauth": "true"})
    first = client.first_message()
    assert first == b"n,,n=tokenid,r=abc,tokenauth=true"
    server = ScramServer(SHA256)
    assert server.receive_client_first(first) == "tokenid"
    client_final = client.final_message(server.server_first(make_credential(SHA256, "hmac")))
    client.check_server_final(server.server_final(client_final))  # extension is in AuthMessage
    assert server.extensions == {"tokenauth": "true"} and server.token_auth


@pytest.mark.parametrize("message, reason", [
    (b"y,,n=user,r=abc", "channel binding flag 'y'"),
    (b"p=tls-unique,,n=user,r=abc", "channel binding flag 'p=tls-unique'"),
    (b"n,,m=ext,n=user,r=abc", "mandatory extension"),
    (b"n,,r=abc,n=user", "expected 'n='"),
    (b"n,,n=user", "expected n= and r="),
    (b"n,,n=user,r=a b", "nonce"),
    (b"n,,n=user,r=abc,1x=y", "bad extension"),
    (b"n=user,r=abc", "no gs2 header"),
    (b"n,,n=us=er,r=abc", "Invalid username"),
    (b"n,,n=\xff,r=abc", "not UTF-8"),
    (b"n,x,n=user,r=abc", "expected 'a='"),
])
def test_server_refuses_malformed_client_first(message: bytes, reason: str) -> None:
    with pytest.raises(ScramError, match=reason):
        ScramServer(SHA256).receive_client_first(message)


def test_authzid_equal_to_username_is_accepted() -> None:
    server = ScramServer(SHA256, nonce=RFC_SERVER_NONCE)
    assert server.receive_client_first(b"n,a=user,n=user,r=" + RFC_CLIENT_NONCE.encode()) == "user"
    server.server_first(rfc_credential())
    # the channel binding now carries base64("n,a=user,"), not "biws"
    with pytest.raises(ScramError, match="channel binding"):
        server.server_final(RFC_CLIENT_FINAL)


def test_authzid_other_than_username_is_refused_visibly() -> None:
    server = ScramServer(SHA256)
    server.receive_client_first(b"n,a=admin,n=user,r=abc")
    assert server.authzid == "admin"
    with pytest.raises(ScramError, match="authorization id that is different") as e:
        server.server_first(rfc_credential())
    assert e.value.client_visible


@pytest.mark.parametrize("server_first, reason", [
    (b"m=x,r=abcdef,s=AAAA,i=4096", "mandatory extension"),
    (b"r=abcdef,s=AAAA", "expected r=, s= and i="),
    (b"r=abcdef,s=!!!!,i=4096", "salt is not base64"),
    (b"r=abcdef,s=AAAA,i=-1", "invalid iterations"),
    (b"r=abcdef,s=AAAA,i=x", "invalid iterations"),
    (b"s=AAAA,r=abcdef,i=4096", "expected 'r='"),
])
def test_client_refuses_malformed_server_first(server_first: bytes, reason: str) -> None:
    client = ScramClient(SHA256, "user", "pw", nonce="abc")
    client.first_message()
    with pytest.raises(ScramError, match=reason):
        client.final_message(server_first)


@pytest.mark.parametrize("client_final, reason", [
    (b"c=biws,r=abc", "expected c=, r= and p="),
    (b"c=biws,p=AAAA,r=abc", "expected 'r='"),
    (b"c=biws,r=abcdef,p=!!", "client proof is not base64"),
    (b"c=biws,r=abcdef,x,p=AAAA", "bad extension"),
    (b"c=biws,r=abcdef,p=AAAA", "Invalid client proof"),  # proof of the wrong length
])
def test_server_refuses_malformed_client_final(client_final: bytes, reason: str) -> None:
    server = ScramServer(SHA256, nonce="def")
    server.receive_client_first(b"n,,n=user,r=abc")
    server.server_first(rfc_credential())
    with pytest.raises(ScramError, match=reason):
        server.server_final(client_final)


# --- state machine -----------------------------------------------------------------------


def test_steps_out_of_order_raise_and_fail_the_exchange() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    with pytest.raises(ScramError, match="out of order"):
        client.final_message(RFC_SERVER_FIRST)
    with pytest.raises(ScramError, match="out of order"):
        client.first_message()  # a failed exchange stays failed

    server = rfc_server()
    with pytest.raises(ScramError, match="out of order"):
        server.server_first(rfc_credential())
    server = rfc_server()
    server.receive_client_first(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError, match="out of order"):
        server.server_final(RFC_CLIENT_FINAL)
    server = rfc_server()
    server.receive_client_first(RFC_CLIENT_FIRST)
    server.server_first(rfc_credential())
    server.server_final(RFC_CLIENT_FINAL)
    with pytest.raises(ScramError, match="out of order"):
        server.server_final(RFC_CLIENT_FINAL)


def test_a_refused_step_cannot_be_retried() -> None:
    server = rfc_server()
    server.receive_client_first(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError):
        server.server_first(None)
    with pytest.raises(ScramError, match="out of order"):
        server.server_first(rfc_credential())


def test_bad_arguments_are_value_errors() -> None:
    with pytest.raises(ValueError, match="unsupported SCRAM mechanism 'SCRAM-SHA-1'"):
        ScramClient("SCRAM-SHA-1", "u", "p")
    with pytest.raises(ValueError, match="nonce"):
        ScramClient(SHA256, "u", "p", nonce="a,b")
    with pytest.raises(ValueError, match="empty"):
        ScramClient(SHA256, "", "p")
    with pytest.raises(ValueError, match="extension"):
        ScramClient(SHA256, "u", "p", extensions={"token-auth": "true"})
    with pytest.raises(ValueError, match="nonce"):
        ScramServer(SHA512, nonce="")


def test_generated_nonces_and_salts_look_like_kafkas() -> None:
    first = ScramClient(SHA256, "u", "p").first_message().decode()
    nonce = first.rsplit("r=", 1)[1]
    assert 1 <= len(nonce) <= 26 and nonce.isalnum() and nonce == nonce.lower()
    salts = {make_credential(SHA256, "p").salt for _ in range(5)}
    assert len(salts) == 5
    assert all(1 <= len(s) <= 26 and s.isalnum() for s in salts)


# --- mechanisms and the stored form ------------------------------------------------------


def test_mechanisms_match_kafka() -> None:
    assert set(MECHANISMS) == {SHA256, SHA512}
    assert [(m.hash_name, m.min_iterations, m.max_iterations, m.wire_type)
            for m in MECHANISMS.values()] == [("sha256", 4096, 16384, 1), ("sha512", 4096, 16384, 2)]


def test_format_credential_is_kafkas_zookeeper_form() -> None:
    c = ScramCredential(salt=b"salt", stored_key=b"\x00\x01\x02", server_key=b"\xff" * 4, iterations=8192)
    text = format_credential(c)
    assert text == "salt=c2FsdA==,stored_key=AAEC,server_key=/////w==,iterations=8192"
    assert parse_credential(text) == c


def test_credential_round_trip() -> None:
    c = make_credential(SHA512, "secret", iterations=4096)
    assert parse_credential(format_credential(c)) == c
    reordered = ",".join(reversed(format_credential(c).split(",")))
    assert parse_credential(reordered) == c


@pytest.mark.parametrize("text, reason", [
    ("", "is not key=value"),
    ("salt=AAAA,stored_key=AAAA,server_key=AAAA", "missing iterations"),
    ("salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=4096,extra=1", "unknown key 'extra'"),
    ("salt=AAAA,salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=1", "'salt' given twice"),
    ("salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=x", "not a number"),
    ("salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=0", "must be positive"),
    ("salt=A,stored_key=AAAA,server_key=AAAA,iterations=4096", "salt is not base64"),
    ("salt=AAAA,stored_key=AAAA,=x,server_key=AAAA,iterations=4096", "is not key=value"),
])
def test_parse_credential_refuses(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_credential(text)
