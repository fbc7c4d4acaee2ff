"""The rules of AlterClientQuotas and DescribeClientQuotas, as Kafka 3.9's
ZkAdminManager (alterClientQuotas, describeClientQuotas) and the requests' own checks.

Entity on the wire: a list of (entity type, name) with name null for the type's
default. ``parse_entity`` -> QuotaEntity (names sanitized, ``<default>`` for null):

* an empty list -> "Invalid empty client quota entity";
* a type other than "user" / "client-id" -> "Unhandled client quota entity type: T";
  "ip" (connection-rate quotas) is refused as not supported here;
* a type named twice -> "Duplicate entity type T";
* an empty name -> "Empty T not supported".

Operations (``parse_ops``): remove -> the key is deleted; otherwise the key must be a
quota key ("Invalid configuration key K"); producer_byte_rate / consumer_byte_rate are
LONGs -- a value more than 1e-6 from a whole number -> "Configuration K must be a LONG
value" -- written as the integer's text; request_percentage / controller_mutation_rate
are DOUBLEs, written as the double's text; a negative value is refused. All of these
answer INVALID_REQUEST for that entry alone.

Describe filter (``QuotaFilter``): one component per type, MatchType 0 exact (Match
required), 1 default, 2 any specified (Match must be null for 1 and 2). An entity
matches when, for each type, a component's condition holds for the entity's part of
that type, and for a type without a component the entity has no such part -- only
under Strict; without Strict any part is fine. Only entities with quota keys are
listed; names go back desanitized, null for a default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker.quotas.client_quota_manager import DEFAULT, QuotaEntity
from broker.quotas.quota_store import QUOTA_KEYS
from broker.security.scram_credentials import desanitize, sanitize
from protocol.errors import ErrorCode

USER, CLIENT_ID, IP = "user", "client-id", "ip"
LONG_KEYS = ("producer_byte_rate", "consumer_byte_rate")
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
EPSILON = 1e-6


class QuotaRequestError(Exception):
    """An entry or filter Kafka would refuse: ``code`` and the message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _invalid(message: str) -> QuotaRequestError:
    return QuotaRequestError(ErrorCode.INVALID_REQUEST, message)


def parse_entity(parts: Sequence[tuple[str, str | None]]) -> QuotaEntity:
    if not parts:
        raise _invalid("Invalid empty client quota entity")
    found: dict[str, str] = {}
    for entity_type, name in parts:
        if entity_type == IP:
            raise _invalid("IP quotas (connection_creation_rate) are not supported by pybroker")
        if entity_type not in (USER, CLIENT_ID):
            raise _invalid(f"Unhandled client quota entity type: {entity_type}")
        if entity_type in found:
            raise _invalid(f"Duplicate entity type {entity_type}")
        if name is not None and not name:
            raise _invalid(f"Empty {entity_type} not supported")
        found[entity_type] = DEFAULT if name is None else sanitize(name)
    return QuotaEntity(found.get(USER), found.get(CLIENT_ID))


def entity_parts(entity: QuotaEntity) -> list[tuple[str, str | None]]:
    """The wire form of an entity: user first, then client id; None for a default."""
    def name(part: str) -> str | None:
        return None if part == DEFAULT else desanitize(part)
    out: list[tuple[str, str | None]] = []
    if entity.user is not None:
        out.append((USER, name(entity.user)))
    if entity.client_id is not None:
        out.append((CLIENT_ID, name(entity.client_id)))
    return out


def parse_ops(ops: Sequence[tuple[str, float, bool]]) -> dict[str, str | None]:
    """(key, value, remove) operations -> key -> the text to store, None to delete."""
    changes: dict[str, str | None] = {}
    for key, value, remove in ops:
        if remove:
            changes[key] = None
            continue
        if key not in QUOTA_KEYS:
            raise _invalid(f"Invalid configuration key {key}")
        if value != value or value < 0:    # NaN or negative
            raise _invalid(f"Configuration {key} must be a non-negative number, not {value}")
        if key in LONG_KEYS:
            whole = int(value + EPSILON)
            if abs(whole - value) > EPSILON:
                raise _invalid(f"Configuration {key} must be a LONG value")
            changes[key] = str(whole)
        else:
            changes[key] = repr(float(value))
    return changes


@dataclass(frozen=True)
class Component:
    entity_type: str
    match_type: int
    match: str | None


class QuotaFilter:
    """A DescribeClientQuotas filter, checked as Kafka checks it (QuotaRequestError)."""

    def __init__(self, components: Sequence[Component], strict: bool) -> None:
        self.strict = strict
        self.by_type: dict[str, Component] = {}
        for c in components:
            if c.match_type == MATCH_EXACT and c.match is None:
                raise _invalid("Request specified MATCH_TYPE_EXACT, but set match string to null")
            if c.match_type == MATCH_DEFAULT and c.match is not None:
                raise _invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a "
                               "match string")
            if c.match_type == MATCH_SPECIFIED and c.match is not None:
                raise _invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a "
                               "match string")
            if c.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
                raise _invalid(f"Unexpected match type: {c.match_type}")
            if c.entity_type == "":
                raise _invalid("Unexpected empty filter component entity type")
            if c.entity_type not in (USER, CLIENT_ID, IP):
                raise QuotaRequestError(ErrorCode.UNSUPPORTED_VERSION,
                                        f"Custom entity type '{c.entity_type}' not supported")
            if c.entity_type in self.by_type:
                kind = "client" if c.entity_type == CLIENT_ID else c.entity_type
                raise _invalid(f"Duplicate {kind} filter component entity type")
            self.by_type[c.entity_type] = c
        if IP in self.by_type and (USER in self.by_type or CLIENT_ID in self.by_type):
            raise _invalid("Invalid entity filter component combination, IP filter component "
                           "should not be used with User or clientId filter component.")

    @property
    def ip_only(self) -> bool:
        return IP in self.by_type

    def _matches(self, entity_type: str, part: str | None) -> bool:
        c = self.by_type.get(entity_type)
        if c is None:
            return part is None or not self.strict
        if part is None:
            return False
        if c.match_type == MATCH_EXACT:
            return part == sanitize(c.match or "")
        if c.match_type == MATCH_DEFAULT:
            return part == DEFAULT
        return True

    def matches(self, entity: QuotaEntity) -> bool:
        if self.ip_only:
            return False        # we keep no IP quotas
        return (self._matches(USER, entity.user)
                and self._matches(CLIENT_ID, entity.client_id))
