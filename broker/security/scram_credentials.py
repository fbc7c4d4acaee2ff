"""SCRAM credentials in ZooKeeper, where and as Kafka's ZooKeeper-mode brokers keep them.

Layout (Kafka's ConfigEntityZNode, ConfigEntityChangeNotificationSequenceZNode)::

    /config/users/<sanitized user>
        {"version":1,"config":{
            "SCRAM-SHA-256":"salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=4096",
            "SCRAM-SHA-512":"...", <other keys, e.g. quotas: kept as they are>}}
    /config/changes/config_change_<10-digit seq>
        {"version":2,"entity_path":"users/<sanitized user>"}

<sanitized user> is Kafka's Sanitizer.sanitize: Java's URLEncoder (UTF-8; letters, digits
and ``.-*_`` kept, space as ``+``) with ``*`` then written ``%2A`` and ``+`` written ``%20``,
so a name never holds ``/``. A credential value is protocol.scram's ``format_credential``.

No cache: ``get`` reads the znode on every authentication (one ZooKeeper read per SASL
SCRAM exchange), so a credential altered through any broker -- or written by Kafka's own
kafka-configs.sh --zookeeper -- applies to the next login everywhere. The change
notification is written all the same, as Kafka's AdminZkClient.changeConfigs does, for the
brokers that do cache (Kafka's); our topic-config watcher ignores ``users/`` entries.

``describe`` and ``alter`` are Kafka 3.9's ZkAdminManager.describeUserScramCredentials /
alterUserScramCredentials (their rules are listed on each); ``alter`` writes each user's
znode with a conditional set (create when absent), re-reading and retrying when another
writer got there first, then creates the change notification.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote, unquote_plus

from protocol.errors import ErrorCode
from protocol.scram import (MECHANISMS, ScramCredential, credential_from_salted,
                            format_credential, parse_credential)

log = logging.getLogger("pybroker.scram")

CONFIG_USERS = "/config/users"
CONFIG_CHANGE_PREFIX = "/config/changes/config_change_"
ABSENT = -1                 # the version of a znode that does not exist
MAX_WRITE_ATTEMPTS = 10     # conditional writes per user before giving up (a write storm)

EMPTY_USER = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
TOO_FEW_ITERATIONS = "Too few iterations"
TOO_MANY_ITERATIONS = "Too many iterations"
ALTERED_TWICE = "A user credential cannot be altered twice in the same request"
DELETE_MISSING = "Attempt to delete a user credential that does not exist"
DESCRIBE_MISSING = "Attempt to describe a user credential that does not exist"

Result = tuple[ErrorCode, str | None]     # (error, message) for one user


class ConfigZk(Protocol):
    """The ZooKeeper access the store needs; broker.cluster (ClusterStore) provides it."""

    async def get_data(self, path: str) -> tuple[bytes, int] | None: ...

    async def children(self, path: str) -> list[str]: ...

    async def create(self, path: str, data: bytes) -> bool: ...

    async def set_data(self, path: str, data: bytes, version: int) -> int | None: ...

    async def create_sequential(self, prefix: str, data: bytes) -> str: ...


# ---- names and znode JSON ----------------------------------------------------------------

def sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize: the znode name of a user ("a b*" -> "a%20b%2A")."""
    return quote(name, safe="-._").replace("~", "%7E")  # quote keeps "~", URLEncoder does not


def desanitize(name: str) -> str:
    """Kafka's Sanitizer.desanitize (Java's URLDecoder: "+" is a space)."""
    return unquote_plus(name)


def user_path(user: str) -> str:
    return f"{CONFIG_USERS}/{sanitize(user)}"


def decode_user_config(data: bytes | None) -> dict[str, Any]:
    """The "config" object of a /config/users/<u> znode; {} for an empty or config-less
    znode (ConfigEntityZNode.decode). ValueError when it is not JSON."""
    if not data:
        return {}
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"user config znode is not JSON: {e}") from None
    config = obj.get("config") if isinstance(obj, dict) else None
    return dict(config) if isinstance(config, dict) else {}


def encode_user_config(config: dict[str, Any]) -> bytes:
    """``{"version":1,"config":{...}}`` in Jackson's compact form, keys in ``config``'s order."""
    return json.dumps({"version": 1, "config": config}, separators=(",", ":")).encode()


def encode_change(user: str) -> bytes:
    return json.dumps({"version": 2, "entity_path": f"users/{sanitize(user)}"},
                      separators=(",", ":")).encode()


def scram_keys(config: dict[str, Any]) -> list[str]:
    """The SCRAM mechanisms ``config`` holds a credential for, in Kafka's order."""
    return [m for m in MECHANISMS if m in config]


# ---- what describe and alter take and give -----------------------------------------------

@dataclass(frozen=True)
class CredentialInfo:
    mechanism: str          # "SCRAM-SHA-256" / "SCRAM-SHA-512"
    iterations: int


@dataclass(frozen=True)
class UserDescription:
    user: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    credentials: tuple[CredentialInfo, ...] = ()


@dataclass(frozen=True)
class Upsertion:
    user: str
    mechanism: str          # a MECHANISMS name; others are refused (UNSUPPORTED_SASL_MECHANISM)
    iterations: int
    salt: bytes
    salted_password: bytes = field(repr=False)


@dataclass(frozen=True)
class Deletion:
    user: str
    mechanism: str


def screen(upsertions: Sequence[Upsertion], deletions: Sequence[Deletion]
           ) -> tuple[dict[str, Result], list[str]]:
    """The checks ZkAdminManager.alterUserScramCredentials makes before reading ZooKeeper.

    -> (user -> error for the users refused, the users still to alter, in request order).
    Any refused alteration refuses every alteration of that user:

    1. an empty user name -> UNACCEPTABLE_CREDENTIAL "Username must not be empty";
    2. an unknown mechanism -> UNSUPPORTED_SASL_MECHANISM;
    3. an upsertion with iterations below the mechanism's minimum (4096) or above 16384
       -> UNACCEPTABLE_CREDENTIAL "Too few/many iterations";
       (a user's deletions are judged first, then its upsertions: the last problem found
       names the error, as Kafka builds its map);
    4. of the users left, one named twice with the same mechanism (two upsertions, or an
       upsertion and a deletion, of one credential) -> DUPLICATE_RESOURCE. One user may
       upsert one mechanism and delete the other in the same request.
    """
    refused: dict[str, Result] = {}
    for d in deletions:
        if not d.user:
            refused[d.user] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_USER)
        elif d.mechanism not in MECHANISMS:
            refused[d.user] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM)
    for u in upsertions:
        m = MECHANISMS.get(u.mechanism)
        if not u.user:
            refused[u.user] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_USER)
        elif m is None:
            refused[u.user] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM)
        elif u.iterations > m.max_iterations:
            refused[u.user] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_MANY_ITERATIONS)
        elif u.iterations < m.min_iterations:
            refused[u.user] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW_ITERATIONS)
    alterations: list[Upsertion | Deletion] = [*upsertions, *deletions]
    pairs = Counter((a.user, a.mechanism) for a in alterations if a.user not in refused)
    for (user, _), n in pairs.items():
        if n > 1:
            refused[user] = (ErrorCode.DUPLICATE_RESOURCE, ALTERED_TWICE)
    remaining = list(dict.fromkeys(a.user for a in alterations if a.user not in refused))
    return refused, remaining


def apply_alterations(config: dict[str, Any], upsertions: Sequence[Upsertion],
                      deletions: Sequence[Deletion]) -> dict[str, Any] | str:
    """One user's new config: deletions removed, then upsertions' credentials put (derived
    from the salted password, as Kafka's ScramFormatter.generateCredential); every other key
    kept. -> the message of a deletion whose credential is not there instead."""
    if any(d.mechanism not in config for d in deletions):
        return DELETE_MISSING
    new = dict(config)
    for d in deletions:
        del new[d.mechanism]
    for u in upsertions:
        if not u.salted_password:  # Java's Mac.init refuses an empty key: Kafka fails here too
            raise ValueError("Empty salted password")
        new[u.mechanism] = format_credential(
            credential_from_salted(u.mechanism, u.salted_password, u.salt, u.iterations))
    return new


# ---- the store ---------------------------------------------------------------------------

class ScramCredentialStore:
    """SCRAM credentials under /config/users (see the module docstring)."""

    def __init__(self, zk: ConfigZk) -> None:
        self.zk = zk

    async def _read(self, user: str, path: str | None = None) -> tuple[dict[str, Any], int]:
        """(the user's config, its znode version or ABSENT), from ``path`` if given."""
        got = await self.zk.get_data(path or user_path(user))
        if got is None:
            return {}, ABSENT
        return decode_user_config(got[0]), got[1]

    async def get(self, user: str, mechanism: str) -> ScramCredential | None:
        """The user's credential for ``mechanism``, read from ZooKeeper now; None when there
        is none or the stored one is malformed (logged: authentication then fails). A
        ZooKeeper failure raises."""
        try:
            config, _ = await self._read(user)
            text = config.get(mechanism)
            return None if text is None else parse_credential(str(text))
        except ValueError as e:
            log.warning("unreadable %s credential for user %r: %s", mechanism, user, e)
            return None

    async def describe(self, users: list[str] | None) -> list[UserDescription]:
        """Kafka's describeUserScramCredentials.

        * ``users`` None or empty: every user with a SCRAM credential, sorted by name (a
          ZooKeeper failure here raises: the caller answers it at the top level);
        * otherwise each distinct name once, in request order: an empty name ->
          RESOURCE_NOT_FOUND "Username must not be empty", a name given twice ->
          DUPLICATE_RESOURCE, a user without a SCRAM credential -> RESOURCE_NOT_FOUND,
          a failed read -> UNKNOWN_SERVER_ERROR for that user.

        Kafka lists every user under its znode (sanitized) name; we give the user name.
        """
        if not users:
            out = []
            children = await self.zk.children(CONFIG_USERS)
            for znode, name in sorted(((c, desanitize(c)) for c in children), key=lambda x: x[1]):
                config, _ = await self._read(name, f"{CONFIG_USERS}/{znode}")
                if scram_keys(config):
                    out.append(self._description(name, config))
            return out
        counts = Counter(users)
        result: dict[str, UserDescription] = {}
        for name in dict.fromkeys(users):
            if not name:
                result[name] = UserDescription(name, ErrorCode.RESOURCE_NOT_FOUND, EMPTY_USER)
            elif counts[name] > 1:
                result[name] = UserDescription(
                    name, ErrorCode.DUPLICATE_RESOURCE, "Cannot describe SCRAM credentials "
                    f"for the same user twice in a single request: {name}")
            else:
                result[name] = await self._describe_one(name)
        return list(result.values())

    async def _describe_one(self, user: str) -> UserDescription:
        try:
            config, _ = await self._read(user)
        except Exception as e:  # a per-user answer, as Kafka's
            log.warning("describing SCRAM credentials of %r failed: %s", user, e)
            return UserDescription(user, ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
        if not scram_keys(config):
            return UserDescription(user, ErrorCode.RESOURCE_NOT_FOUND,
                                   f"{DESCRIBE_MISSING}: {user}")
        return self._description(user, config)

    @staticmethod
    def _description(user: str, config: dict[str, Any]) -> UserDescription:
        try:
            infos = tuple(CredentialInfo(m, parse_credential(str(config[m])).iterations)
                          for m in scram_keys(config))
        except ValueError as e:  # bad data in ZooKeeper: Kafka answers the exception too
            return UserDescription(user, ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
        return UserDescription(user, credentials=infos)

    async def alter(self, upsertions: Sequence[Upsertion], deletions: Sequence[Deletion]
                    ) -> dict[str, Result]:
        """Kafka's alterUserScramCredentials: one (error, message) per user named.

        1. ``screen`` refuses bad alterations (empty name, unknown mechanism, iterations,
           a credential named twice);
        2. per remaining user: read /config/users/<u>; a deletion of a credential it does not
           hold -> RESOURCE_NOT_FOUND (nothing of that user is written);
        3. write the new config with a conditional set on the version read (create when
           absent); when another writer moved it on, go back to 2 (at most
           MAX_WRITE_ATTEMPTS times, then UNKNOWN_SERVER_ERROR);
        4. create /config/changes/config_change_<seq> naming ``users/<u>``.
        A ZooKeeper failure fails that user alone (UNKNOWN_SERVER_ERROR).
        """
        results, users = screen(upsertions, deletions)
        for user in users:
            ups = [u for u in upsertions if u.user == user]
            dels = [d for d in deletions if d.user == user]
            try:
                results[user] = await self._alter_user(user, ups, dels)
            except Exception as e:  # one user's failure, as Kafka reports it
                log.warning("altering SCRAM credentials of %r failed: %s", user, e)
                results[user] = (ErrorCode.UNKNOWN_SERVER_ERROR, str(e) or type(e).__name__)
        return results

    async def _alter_user(self, user: str, ups: list[Upsertion], dels: list[Deletion]) -> Result:
        path = user_path(user)
        for _ in range(MAX_WRITE_ATTEMPTS):
            config, version = await self._read(user)
            new = apply_alterations(config, ups, dels)
            if isinstance(new, str):
                return ErrorCode.RESOURCE_NOT_FOUND, new
            data = encode_user_config(new)
            written = (await self.zk.create(path, data) if version == ABSENT
                       else await self.zk.set_data(path, data, version) is not None)
            if written:
                await self.zk.create_sequential(CONFIG_CHANGE_PREFIX, encode_change(user))
                log.info("altered SCRAM credentials of user %r (%s)", user,
                         ", ".join([f"upsert {u.mechanism}" for u in ups]
                                   + [f"delete {d.mechanism}" for d in dels]))
                return ErrorCode.NONE, None
        return (ErrorCode.UNKNOWN_SERVER_ERROR,
                f"{path} kept changing: gave up after {MAX_WRITE_ATTEMPTS} attempts")
