"""SASL PLAIN (RFC 4616) tokens, sans-I/O.

PLAIN is one message, client to server, carried as the ``auth_bytes`` of a SaslAuthenticate
request (or a bare size-prefixed token before KIP-152); the server answers with empty bytes::

    message = [authzid] NUL authcid NUL passwd        ; UTF-8, NUL = 0x00
    authcid = 1*SAFE      (the username; Kafka: must not be empty)
    passwd  = 1*SAFE      (Kafka: must not be empty)
    authzid = *SAFE       (empty: act as authcid)
    SAFE    = any UTF-8 character except NUL

So a token has exactly two NULs, e.g. ``b"\\x00alice\\x00alice-secret"``.

Kafka's PlainSaslServer also refuses an authzid that is not empty and differs from the
username: it cannot act on someone else's behalf. ``parse_plain`` does so too, raising
ValueError with Kafka's message. (Kafka checks this after the password, so with a wrong
password *and* a foreign authzid it reports the password; a caller wanting that precedence
verifies the password with ``parse_plain(token, check_authzid=False)`` first.)

The messages of the ValueErrors are Kafka's. Kafka sends the authzid refusal (and its
"Authentication failed: Invalid username or password") to the client verbatim; for a malformed
token it answers "Authentication failed during authentication due to invalid credentials with
SASL mechanism PLAIN" and keeps the reason to itself.
"""

from __future__ import annotations

MECHANISM = "PLAIN"

AUTHZID_MISMATCH = ("Authentication failed: Client requested an authorization id that is "
                    "different from username")


def plain_token(username: str, password: str, authzid: str = "") -> bytes:
    """``authzid NUL username NUL password`` in UTF-8; ValueError if a part cannot be sent."""
    if not username:
        raise ValueError("SASL/PLAIN username must not be empty")
    if not password:
        raise ValueError("SASL/PLAIN password must not be empty")
    for name, part in (("authzid", authzid), ("username", username), ("password", password)):
        if "\x00" in part:
            raise ValueError(f"SASL/PLAIN {name} must not contain NUL")
    return f"{authzid}\x00{username}\x00{password}".encode("utf-8")


def parse_plain(token: bytes, *, check_authzid: bool = True) -> tuple[str, str, str]:
    """(authzid, username, password) from a PLAIN token.

    ValueError: not UTF-8, not exactly three NUL-separated parts, an empty username or
    password, or (unless ``check_authzid`` is False) an authzid other than "" or the username.
    """
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("Invalid SASL/PLAIN response: not valid UTF-8") from None
    parts = text.split("\x00")
    if len(parts) != 3:
        raise ValueError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
    authzid, username, password = parts
    if not username:
        raise ValueError("Authentication failed: username not specified")
    if not password:
        raise ValueError("Authentication failed: password not specified")
    if check_authzid and authzid and authzid != username:
        raise ValueError(AUTHZID_MISMATCH)
    return authzid, username, password
