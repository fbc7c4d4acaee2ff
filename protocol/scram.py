"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them, sans-I/O.

Kafka carries each SCRAM message as the ``auth_bytes`` of a SaslAuthenticate request or
response (or, before KIP-152, as a bare size-prefixed token). The exchange, client ``C`` and
server ``S``, with the RFC 7677 example::

    1. C: client-first   n,,n=user,r=rOprNGfwEbeRWgbNEkqO
    2. S: server-first   r=rOprNGfwEbeRWgbNEkqO%hvYD...hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096
    3. C: client-final   c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYD...hNlF$k0,p=dHzb...dVQ=
    4. S: server-final   v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=   (or e=<error>)

Message grammar (UTF-8 text, attributes ``<letter>=<value>`` joined by ``,``)::

    client-first  = gs2-header client-first-bare
    gs2-header    = "n" "," [ "a=" saslname ] ","       ; "y" and "p=..." (channel binding) refused
    client-first-bare = [ "m=" ... "," ] "n=" saslname "," "r=" nonce *( "," ext-key "=" value )
    server-first  = "r=" client-nonce server-nonce "," "s=" base64(salt) "," "i=" iterations
    client-final  = "c=" base64(gs2-header) "," "r=" nonce *( "," ext ) "," "p=" base64(ClientProof)
    server-final  = ( "v=" base64(ServerSignature) / "e=" error ) *( "," ext )

    saslname: the username with "=" written "=3D" and "," written "=2C" (nothing else escaped)
    nonce:    printable ASCII 0x21..0x7E except ","
    "m=" is reserved for mandatory extensions; RFC 5802 says its presence fails authentication.
    Kafka's only client-first extension is "tokenauth=true" (delegation tokens, KIP-48); unknown
    extensions are accepted and exposed, as Kafka's ScramSaslServer ignores them.

The keys (H = SHA-256 or SHA-512, HMAC keyed by its first argument)::

    SaltedPassword  = Hi(UTF-8(password), salt, i)         ; Hi = PBKDF2-HMAC-H, one block
    ClientKey       = HMAC(SaltedPassword, "Client Key")
    StoredKey       = H(ClientKey)
    ServerKey       = HMAC(SaltedPassword, "Server Key")
    AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
    ClientSignature = HMAC(StoredKey, AuthMessage)
    ClientProof     = ClientKey XOR ClientSignature
    ServerSignature = HMAC(ServerKey, AuthMessage)

The server keeps only (salt, StoredKey, ServerKey, iterations), the ``ScramCredential``; it
checks a proof by recovering ClientKey = ClientProof XOR ClientSignature and comparing
H(ClientKey) with StoredKey in constant time. Like Kafka (ScramFormatter.normalize) the
password is UTF-8 encoded with no SASLprep.

Kafka stores a credential in ZooKeeper (``/config/users/<user>``, key = mechanism name) as
``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`` (ScramCredentialUtils), standard
base64 with padding: ``format_credential`` / ``parse_credential``.

Errors: every failure raises ``ScramError``. Kafka's broker sends the text of a failure to the
client only for SaslAuthenticationException (here: ``client_visible=True``, the authorization-id
refusal); for the rest it answers ``generic_failure_message(mechanism)`` so that nothing about
the user's existence leaks.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class ScramMechanism:
    """One SCRAM mechanism, with Kafka's limits (its ScramMechanism enum)."""

    name: str            # the SASL mechanism name, e.g. "SCRAM-SHA-256"
    hash_name: str       # hashlib's name for H
    min_iterations: int  # fewer is refused by both sides of an exchange
    max_iterations: int  # AlterUserScramCredentials refuses more
    wire_type: int       # the int8 "Mechanism" of Describe/AlterUserScramCredentials


MECHANISMS: dict[str, ScramMechanism] = {
    m.name: m
    for m in (
        ScramMechanism("SCRAM-SHA-256", "sha256", 4096, 16384, 1),
        ScramMechanism("SCRAM-SHA-512", "sha512", 4096, 16384, 2),
    )
}


def mechanism_for(name: str) -> ScramMechanism:
    """The mechanism called ``name``; ValueError naming the supported ones otherwise."""
    try:
        return MECHANISMS[name]
    except KeyError:
        raise ValueError(f"unsupported SCRAM mechanism {name!r}; "
                         f"supported: {', '.join(MECHANISMS)}") from None


class ScramError(Exception):
    """Authentication failed or a message was malformed. ``str(e)`` is the reason.

    ``client_visible``: Kafka sends this text to the client as the SaslAuthenticate
    error_message; otherwise it sends ``generic_failure_message`` and only logs the reason.
    """

    def __init__(self, message: str, *, client_visible: bool = False) -> None:
        super().__init__(message)
        self.client_visible = client_visible


def generic_failure_message(mechanism: str, *, reauthentication: bool = False) -> str:
    """Kafka's SaslAuthenticate error_message for a failure whose reason it keeps to itself
    (SaslServerAuthenticator.handleSaslToken)."""
    phase = "re-authentication" if reauthentication else "authentication"
    return f"Authentication failed during {phase} due to invalid credentials with SASL mechanism {mechanism}"


# --- credentials ---------------------------------------------------------------------


@dataclass(frozen=True)
class ScramCredential:
    """What the server stores for one user and mechanism; the password is not derivable."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): PBKDF2-HMAC-H with one output block (dklen = H's digest size)."""
    return hashlib.pbkdf2_hmac(mechanism_for(mechanism).hash_name, password.encode("utf-8"),
                               salt, iterations)


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    """The stored form of SaltedPassword (what AlterUserScramCredentials upserts carry)."""
    m = mechanism_for(mechanism)
    client_key = _hmac(m, salted, b"Client Key")
    return ScramCredential(salt=salt, stored_key=_hash(m, client_key),
                           server_key=_hmac(m, salted, b"Server Key"), iterations=iterations)


def make_credential(mechanism: str, password: str, *, salt: bytes | None = None,
                    iterations: int = 4096) -> ScramCredential:
    """A credential for ``password``; a fresh random salt unless one is given."""
    if salt is None:
        # Kafka's ScramFormatter.secureRandomBytes(): the UTF-8 bytes of the base-36 text of a
        # random 130-bit integer, so a salt of at most 26 ASCII bytes ([0-9a-z]) carrying 130
        # bits of entropy. We make it the same way, so our salts look like Kafka's.
        salt = _random_string().encode("ascii")
    return credential_from_salted(mechanism, salted_password(mechanism, password, salt, iterations),
                                  salt, iterations)


_CREDENTIAL_KEYS = ("salt", "stored_key", "server_key", "iterations")


def format_credential(c: ScramCredential) -> str:
    """Kafka's ZooKeeper form: ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``."""
    return (f"salt={_b64(c.salt)},stored_key={_b64(c.stored_key)},"
            f"server_key={_b64(c.server_key)},iterations={c.iterations}")


def parse_credential(text: str) -> ScramCredential:
    """Read ``format_credential``'s form (keys in any order, each exactly once).

    ValueError names the problem, never echoing the keys themselves."""
    fields: dict[str, str] = {}
    for token in text.split(","):
        key, eq, value = token.partition("=")
        if not eq or not key:
            raise ValueError(f"invalid SCRAM credential: {token[:20]!r} is not key=value")
        if key not in _CREDENTIAL_KEYS:
            raise ValueError(f"invalid SCRAM credential: unknown key {key!r}")
        if key in fields:
            raise ValueError(f"invalid SCRAM credential: {key!r} given twice")
        fields[key] = value
    missing = [k for k in _CREDENTIAL_KEYS if k not in fields]
    if missing:
        raise ValueError(f"invalid SCRAM credential: missing {', '.join(missing)}")
    if not fields["iterations"].isascii() or not fields["iterations"].isdigit():
        raise ValueError(f"invalid SCRAM credential: iterations {fields['iterations']!r} is not a number")
    iterations = int(fields["iterations"])
    if iterations <= 0:
        raise ValueError(f"invalid SCRAM credential: iterations must be positive, got {iterations}")
    decoded = {}
    for key in ("salt", "stored_key", "server_key"):
        try:
            decoded[key] = base64.b64decode(fields[key], validate=True)
        except binascii.Error:
            raise ValueError(f"invalid SCRAM credential: {key} is not base64") from None
    return ScramCredential(decoded["salt"], decoded["stored_key"], decoded["server_key"], iterations)


# --- primitives -----------------------------------------------------------------------


def _hmac(m: ScramMechanism, key: bytes, msg: bytes) -> bytes:
    return hmac.digest(key, msg, m.hash_name)


def _hash(m: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(m.hash_name, data).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _b64decode(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error:
        raise ScramError(f"Invalid SCRAM message: {what} is not base64") from None


_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _random_string() -> str:
    """Kafka's ScramFormatter.secureRandomString(): a random 130-bit integer in base 36."""
    n = secrets.randbits(130)
    digits = []
    while True:
        n, d = divmod(n, 36)
        digits.append(_BASE36[d])
        if not n:
            return "".join(reversed(digits))


_NONCE = re.compile(r"[\x21-\x2b\x2d-\x7e]+")  # printable ASCII but ","
_SASLNAME = re.compile(r"(?:[^=,\x00]|=2C|=3D)+")
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")


def escape_username(username: str) -> str:
    """username -> saslname: "=" becomes "=3D" and "," becomes "=2C" (in that order)."""
    return username.replace("=", "=3D").replace(",", "=2C")


def unescape_username(saslname: str) -> str:
    """saslname -> username; ScramError if a "=" starts anything but "=2C" or "=3D"."""
    if not _SASLNAME.fullmatch(saslname):
        raise ScramError(f"Invalid username: {saslname}")
    return re.sub(r"=(2C|3D)", lambda g: "," if g[1] == "2C" else "=", saslname)


def _check_nonce(nonce: str) -> str:
    if not _NONCE.fullmatch(nonce):
        raise ScramError("Invalid SCRAM message: nonce must be printable ASCII without ','")
    return nonce


def _own_nonce(nonce: str | None) -> str:
    """The nonce a side contributes: the caller's (checked) or a fresh one like Kafka's."""
    if nonce is None:
        return _random_string()
    if not _NONCE.fullmatch(nonce):
        raise ValueError(f"SCRAM nonce {nonce!r} must be printable ASCII without ','")
    return nonce


def _decode(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError(f"Invalid SCRAM {what}: not UTF-8") from None


def _attribute(part: str, key: str, what: str) -> str:
    """The value of ``part`` if it is ``<key>=<value>``; ScramError otherwise."""
    if not part.startswith(key + "="):
        raise ScramError(f"Invalid SCRAM {what}: expected '{key}=' where {part[:16]!r} is")
    return part[len(key) + 1:]


def _refuse_mandatory_extension(parts: list[str], what: str) -> None:
    if parts and parts[0].startswith("m="):
        raise ScramError(f"Invalid SCRAM {what}: mandatory extension 'm=' is not supported")


def _extensions(parts: list[str], what: str) -> dict[str, str]:
    """``key=value`` attributes (key: letters) after the fixed ones, in order."""
    result: dict[str, str] = {}
    for part in parts:
        key, eq, value = part.partition("=")
        if not eq or not _EXTENSION_KEY.fullmatch(key) or not value:
            raise ScramError(f"Invalid SCRAM {what}: bad extension {part[:32]!r}")
        result[key] = value
    return result


# --- the exchange as a state machine ---------------------------------------------------


class _State(enum.Enum):
    START = "start"
    FIRST_DONE = "first message done"
    AWAIT_CREDENTIAL = "awaiting the credential"
    FINAL_DONE = "final message done"
    COMPLETE = "complete"
    FAILED = "failed"


class _Exchange:
    """A side of the exchange. ``_STEPS`` lists each step once with the state it must start
    from and the state it leaves on success; calling a step from any other state, or any
    failure inside a step, leaves the exchange FAILED for good (as Kafka's SaslServer does)."""

    _STEPS: ClassVar[dict[str, tuple[_State, _State]]] = {}

    def __init__(self, mechanism: str) -> None:
        self.mechanism = mechanism_for(mechanism)
        self._state = _State.START

    @property
    def complete(self) -> bool:
        return self._state is _State.COMPLETE

    def _begin(self, step: str) -> None:
        expected, _ = self._STEPS[step]
        state, self._state = self._state, _State.FAILED  # until _end
        if state is not expected:
            raise ScramError(f"SCRAM {step} called out of order (exchange is {state.value})")

    def _end(self, step: str) -> None:
        self._state = self._STEPS[step][1]


class ScramClient(_Exchange):
    """The client side: ``first_message``, ``final_message``, ``check_server_final``."""

    _STEPS = {
        "first_message": (_State.START, _State.FIRST_DONE),
        "final_message": (_State.FIRST_DONE, _State.FINAL_DONE),
        "check_server_final": (_State.FINAL_DONE, _State.COMPLETE),
    }

    def __init__(self, mechanism: str, username: str, password: str, *, nonce: str | None = None,
                 extensions: Mapping[str, str] | None = None) -> None:
        super().__init__(mechanism)
        if not username:
            raise ValueError("SCRAM username must not be empty")
        self._saslname = escape_username(username)
        self._password = password
        self._nonce = _own_nonce(nonce)
        self._extensions = dict(extensions or {})
        for key, value in self._extensions.items():
            if not _EXTENSION_KEY.fullmatch(key) or not value or "," in value:
                raise ValueError(f"bad SCRAM extension {key!r}={value!r}: "
                                 "key must be letters, value non-empty without ','")
        self._client_first_bare = ""
        self._auth_message = b""
        self._server_key = b""

    def first_message(self) -> bytes:
        """Message 1: ``n,,n=<saslname>,r=<nonce>[,<ext>=<value>...]`` (no channel binding,
        no authzid)."""
        self._begin("first_message")
        ext = "".join(f",{k}={v}" for k, v in self._extensions.items())
        self._client_first_bare = f"n={self._saslname},r={self._nonce}{ext}"
        self._end("first_message")
        return ("n,," + self._client_first_bare).encode("utf-8")

    def final_message(self, server_first: bytes) -> bytes:
        """Check message 2 (server-first); return message 3, which carries the ClientProof."""
        self._begin("final_message")
        text = _decode(server_first, "server first message")
        parts = text.split(",")
        _refuse_mandatory_extension(parts, "server first message")
        if len(parts) < 3:
            raise ScramError("Invalid SCRAM server first message: expected r=, s= and i=")
        nonce = _check_nonce(_attribute(parts[0], "r", "server first message"))
        salt = _b64decode(_attribute(parts[1], "s", "server first message"), "salt")
        iterations = _iterations(_attribute(parts[2], "i", "server first message"))
        _extensions(parts[3:], "server first message")
        if not nonce.startswith(self._nonce):
            raise ScramError("Invalid server nonce: does not start with client nonce")
        if iterations < self.mechanism.min_iterations:
            raise ScramError(f"Requested iterations {iterations} is less than the minimum "
                             f"{self.mechanism.min_iterations} for {self.mechanism.name}")

        m = self.mechanism
        salted = salted_password(m.name, self._password, salt, iterations)
        client_key = _hmac(m, salted, b"Client Key")
        without_proof = f"c={_b64(b'n,,')},r={nonce}"
        self._auth_message = f"{self._client_first_bare},{text},{without_proof}".encode("utf-8")
        proof = _xor(client_key, _hmac(m, _hash(m, client_key), self._auth_message))
        self._server_key = _hmac(m, salted, b"Server Key")
        self._end("final_message")
        return f"{without_proof},p={_b64(proof)}".encode("ascii")

    def check_server_final(self, server_final: bytes) -> None:
        """Check message 4: verify the ServerSignature; an ``e=`` answer or a wrong one raises."""
        self._begin("check_server_final")
        text = _decode(server_final, "server final message")
        parts = text.split(",")
        if parts[0].startswith("e="):
            raise ScramError(f"SASL authentication using {self.mechanism.name} failed with error: "
                             f"{parts[0][2:]}")
        signature = _b64decode(_attribute(parts[0], "v", "server final message"), "server signature")
        _extensions(parts[1:], "server final message")
        expected = _hmac(self.mechanism, self._server_key, self._auth_message)
        if not hmac.compare_digest(signature, expected):
            raise ScramError("Invalid server signature in server final message")
        self._end("check_server_final")


def _iterations(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) <= 0:
        raise ScramError(f"Invalid SCRAM server first message: invalid iterations {text!r}")
    return int(text)


class ScramServer(_Exchange):
    """The server side, in three steps around the (asynchronous) credential lookup:

    1. ``receive_client_first(data)`` -> the username to look up (also ``authzid``,
       ``extensions``, ``token_auth``);
    2. ``server_first(credential or None)`` -> the server-first message;
    3. ``server_final(client_final)`` -> ``v=<ServerSignature>``; ``complete`` is then True.
    """

    _STEPS = {
        "receive_client_first": (_State.START, _State.AWAIT_CREDENTIAL),
        "server_first": (_State.AWAIT_CREDENTIAL, _State.FINAL_DONE),
        "server_final": (_State.FINAL_DONE, _State.COMPLETE),
    }

    def __init__(self, mechanism: str, *, nonce: str | None = None) -> None:
        super().__init__(mechanism)
        self._server_nonce = _own_nonce(nonce)
        self.username = ""
        self.authzid = ""
        self.extensions: dict[str, str] = {}
        self._gs2_header = ""
        self._client_first_bare = ""
        self._client_nonce = ""
        self._server_first = ""
        self._credential: ScramCredential | None = None

    @property
    def token_auth(self) -> bool:
        """Whether the client asked for delegation-token authentication (``tokenauth=true``):
        then ``username`` is a token id and the credential is the token's."""
        return self.extensions.get("tokenauth", "").lower() == "true"

    def receive_client_first(self, data: bytes) -> str:
        """Step 1, message 1: parse client-first; return the (unescaped) username to look up."""
        self._begin("receive_client_first")
        text = _decode(data, "client first message")
        cbind, comma1, rest = text.partition(",")
        authzid, comma2, bare = rest.partition(",")
        if not comma1 or not comma2:
            raise ScramError("Invalid SCRAM client first message: no gs2 header")
        if cbind != "n":
            raise ScramError(f"Invalid SCRAM client first message: channel binding flag {cbind[:16]!r} "
                             f"is not supported (only 'n')")
        if authzid:
            self.authzid = unescape_username(_attribute(authzid, "a", "client first message"))
        parts = bare.split(",")
        _refuse_mandatory_extension(parts, "client first message")
        if len(parts) < 2:
            raise ScramError("Invalid SCRAM client first message: expected n= and r=")
        self.username = unescape_username(_attribute(parts[0], "n", "client first message"))
        self._client_nonce = _check_nonce(_attribute(parts[1], "r", "client first message"))
        self.extensions = _extensions(parts[2:], "client first message")
        self._gs2_header = f"{cbind},{authzid},"
        self._client_first_bare = bare
        self._end("receive_client_first")
        return self.username

    def server_first(self, credential: ScramCredential | None) -> bytes:
        """Step 2, message 2: ``r=<client nonce><server nonce>,s=<salt>,i=<iterations>``;
        ``credential`` None means the user is unknown.

        Checks in Kafka's order: known user, then authzid, then the iteration count."""
        self._begin("server_first")
        if credential is None:
            raise ScramError("Authentication failed: Invalid user credentials")
        if self.authzid and self.authzid != self.username:
            raise ScramError("Authentication failed: Client requested an authorization id "
                             "that is different from username", client_visible=True)
        if credential.iterations < self.mechanism.min_iterations:
            raise ScramError(f"Iterations {credential.iterations} is less than the minimum "
                             f"{self.mechanism.min_iterations} for {self.mechanism.name}")
        self._credential = credential
        self._server_first = (f"r={self._client_nonce}{self._server_nonce},"
                              f"s={_b64(credential.salt)},i={credential.iterations}")
        self._end("server_first")
        return self._server_first.encode("utf-8")

    def server_final(self, client_final: bytes) -> bytes:
        """Step 3, messages 3 and 4: check channel binding, nonce and ClientProof; answer
        ``v=<ServerSignature>``."""
        self._begin("server_final")
        credential, self._credential = self._credential, None  # used once, then dropped
        if credential is None:  # unreachable: server_first set it on the way to FINAL_DONE
            raise ScramError("SCRAM server_final called before server_first")
        text = _decode(client_final, "client final message")
        parts = text.split(",")
        if len(parts) < 3:
            raise ScramError("Invalid SCRAM client final message: expected c=, r= and p=")
        channel = _attribute(parts[0], "c", "client final message")
        nonce = _attribute(parts[1], "r", "client final message")
        _extensions(parts[2:-1], "client final message")
        proof = _b64decode(_attribute(parts[-1], "p", "client final message"), "client proof")
        if channel != _b64(self._gs2_header.encode("utf-8")):
            raise ScramError("Invalid channel binding in the final client message.")
        # Kafka's ScramSaslServer only checks that the nonce ends with the combined
        # nonce of server-first, and librdkafka up to 2.0.x sends its own nonce twice
        # ("r=<client><client><server>", proof computed over what it sent): accept
        # what Kafka accepts, or those clients cannot log in.
        if not nonce.endswith(self._client_nonce + self._server_nonce):
            raise ScramError("Invalid client nonce in the final client message.")

        m = self.mechanism
        without_proof = text[:len(text) - len(parts[-1]) - 1]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode("utf-8")
        client_signature = _hmac(m, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise ScramError("Authentication failed: Invalid client proof")
        if not hmac.compare_digest(_hash(m, _xor(proof, client_signature)), credential.stored_key):
            raise ScramError("Authentication failed: Invalid client proof")
        self._end("server_final")
        return f"v={_b64(_hmac(m, credential.server_key, auth_message))}".encode("ascii")
