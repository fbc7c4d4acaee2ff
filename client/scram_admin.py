"""SCRAM credential verbs (KIP-554) over a ``KafkaAdmin``: DescribeUserScramCredentials
and AlterUserScramCredentials, for ``pybroker configs --entity-type users`` and tests.

As Kafka's admin client:

* describe goes to any broker; a top-level error raises KafkaError, per-user errors
  (RESOURCE_NOT_FOUND for a user without credentials, ...) come back in the results;
* alter goes to the controller (a Kafka ZooKeeper-mode broker that is not the controller
  answers NOT_CONTROLLER: refresh and retry). The password never leaves the client: each
  upsertion carries a fresh random salt (Kafka's form: the base-36 text of a random 130-bit
  number) and SaltedPassword = Hi(password, salt, iterations);
* a user with an alteration the client can already tell is invalid (empty name, unknown
  mechanism, empty password) gets its result here and none of its alterations is sent,
  as KafkaAdminClient.alterUserScramCredentials does.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

from client.admin import KafkaAdmin
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from protocol.schema import Struct
from protocol.scram import MECHANISMS, salted_password
from protocol.spec import api

DEFAULT_ITERATIONS = 4096     # kafka-configs.sh's DefaultScramIterations
_NOT_CONTROLLER_RETRIES = 5
MECHANISM_NAMES = {m.wire_type: m.name for m in MECHANISMS.values()}

Result = tuple[int, str | None]   # (error code, message) for one user


@dataclass(frozen=True)
class CredentialInfo:
    mechanism: str            # "SCRAM-SHA-256" / "SCRAM-SHA-512" ("UNKNOWN" for other codes)
    iterations: int


@dataclass(frozen=True)
class UserCredentials:
    user: str
    error: int = 0
    message: str | None = None
    credentials: tuple[CredentialInfo, ...] = ()


@dataclass(frozen=True)
class ScramUpsertion:
    user: str
    mechanism: str
    password: str = field(repr=False)
    iterations: int = DEFAULT_ITERATIONS
    salt: bytes | None = None     # None: a fresh random salt


@dataclass(frozen=True)
class ScramDeletion:
    user: str
    mechanism: str


async def describe_user_scram_credentials(admin: KafkaAdmin, users: Sequence[str] | None = None
                                          ) -> list[UserCredentials]:
    """Every user with credentials (``users`` None or empty), or the users named."""
    spec = api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS).request
    body = spec.new(users=[spec.structs["UserName"].new(name=u) for u in users]
                    if users else None)
    conn = await admin.any_connection()
    resp = await conn.request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, body)
    assert resp is not None
    if resp.error_code != ErrorCode.NONE:
        raise KafkaError(resp.error_code, resp.error_message)
    return [UserCredentials(r.user, int(r.error_code), r.error_message, tuple(
        CredentialInfo(MECHANISM_NAMES.get(c.mechanism, "UNKNOWN"), int(c.iterations))
        for c in r.credential_infos)) for r in resp.results]


def random_salt() -> bytes:
    """Kafka's ScramFormatter.secureRandomBytes: the ASCII base-36 text of a random
    130-bit number (at most 26 bytes of [0-9a-z])."""
    n, digits = secrets.randbits(130), ""
    while True:
        n, d = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
        if not n:
            return digits.encode("ascii")


def _refusal(user: str, mechanism: str, password: str | None) -> Result | None:
    """Why the client refuses an alteration before sending it, or None."""
    if not user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if password is not None and not password:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Password must not be empty"
    if mechanism not in MECHANISMS:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def alter_request(upsertions: Sequence[ScramUpsertion], deletions: Sequence[ScramDeletion]
                  ) -> tuple[Struct, dict[str, Result]]:
    """(the AlterUserScramCredentials request, the results of the users refused locally)."""
    refused: dict[str, Result] = {}
    for d in deletions:
        why = _refusal(d.user, d.mechanism, None)
        if why is not None:
            refused[d.user] = why
    for u in upsertions:
        if u.user not in refused:
            why = _refusal(u.user, u.mechanism, u.password)
            if why is not None:
                refused[u.user] = why
    spec = api(ApiKey.ALTER_USER_SCRAM_CREDENTIALS).request
    s = spec.structs
    wire_ups = []
    for u in upsertions:
        if u.user in refused:
            continue
        m = MECHANISMS[u.mechanism]
        salt = random_salt() if u.salt is None else u.salt
        # Iterations out of the broker's range are refused there before the password is
        # looked at: no need to spend (possibly very long) PBKDF2 work on them.
        salted = salted_password(u.mechanism, u.password, salt, u.iterations) \
            if m.min_iterations <= u.iterations <= m.max_iterations else b""
        wire_ups.append(s["ScramCredentialUpsertion"].new(
            name=u.user, mechanism=m.wire_type, iterations=u.iterations, salt=salt,
            salted_password=salted))
    wire_dels = [s["ScramCredentialDeletion"].new(name=d.user,
                                                  mechanism=MECHANISMS[d.mechanism].wire_type)
                 for d in deletions if d.user not in refused]
    return spec.new(upsertions=wire_ups, deletions=wire_dels), refused


async def alter_user_scram_credentials(admin: KafkaAdmin,
                                       upsertions: Sequence[ScramUpsertion] = (),
                                       deletions: Sequence[ScramDeletion] = ()
                                       ) -> dict[str, Result]:
    """-> user -> (error code, message), one entry per user named."""
    body, results = alter_request(upsertions, deletions)
    if body.upsertions or body.deletions:
        for attempt in range(_NOT_CONTROLLER_RETRIES):
            conn = await admin.controller_connection()
            resp = await conn.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, body)
            assert resp is not None
            if attempt + 1 < _NOT_CONTROLLER_RETRIES and any(
                    r.error_code == ErrorCode.NOT_CONTROLLER for r in resp.results):
                await asyncio.sleep(0.2 * (attempt + 1))
                continue
            break
        assert resp is not None            # None only answers an acks=0 Produce
        for r in resp.results:
            results[r.user] = (int(r.error_code), r.error_message)
    for user in [*(u.user for u in upsertions), *(d.user for d in deletions)]:
        results.setdefault(user, (ErrorCode.UNKNOWN_SERVER_ERROR,
                                  f"The broker response did not contain a result for user {user}"))
    return results
