"""Client quota verbs (KIP-546) over a ``KafkaAdmin``: DescribeClientQuotas and
AlterClientQuotas, for ``pybroker configs --entity-type users|clients`` and tests.

An entity is a tuple of (entity type, name) pairs -- ("user", "alice"),
("client-id", "app") or both -- with name None for the type's default entity, as
Kafka's ClientQuotaEntity. As Kafka's admin client, both requests go to any broker; a
describe's top-level error raises KafkaError, an alteration's errors come back per
entity.

Filter components for describe: ``exact(type, name)``, ``default(type)`` and
``any_specified(type)``; ``strict`` leaves out entities with types the filter does not
name (kafka-configs.sh describes with strict filters).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from client.admin import KafkaAdmin
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from protocol.spec import api

USER, CLIENT_ID = "user", "client-id"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class FilterComponent:
    entity_type: str
    match_type: int
    match: str | None = None


def exact(entity_type: str, name: str) -> FilterComponent:
    return FilterComponent(entity_type, MATCH_EXACT, name)


def default(entity_type: str) -> FilterComponent:
    return FilterComponent(entity_type, MATCH_DEFAULT)


def any_specified(entity_type: str) -> FilterComponent:
    return FilterComponent(entity_type, MATCH_SPECIFIED)


async def describe_client_quotas(admin: KafkaAdmin, components: Sequence[FilterComponent] = (),
                                 *, strict: bool = False) -> dict[Entity, dict[str, float]]:
    """Entity -> its quota values (key -> value)."""
    spec = api(ApiKey.DESCRIBE_CLIENT_QUOTAS).request
    body = spec.new(components=[spec.structs["ComponentData"].new(
        entity_type=c.entity_type, match_type=c.match_type, match=c.match)
        for c in components], strict=strict)
    conn = await admin.any_connection()
    resp = await conn.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, body)
    assert resp is not None
    if resp.error_code != ErrorCode.NONE:
        raise KafkaError(resp.error_code, resp.error_message)
    return {tuple((e.entity_type, e.entity_name) for e in entry.entity):
            {v.key: float(v.value) for v in entry.values}
            for entry in resp.entries or []}


async def alter_client_quotas(admin: KafkaAdmin,
                              alterations: Mapping[Entity, Mapping[str, float | None]],
                              *, validate_only: bool = False
                              ) -> dict[Entity, tuple[int, str | None]]:
    """Per entity: key -> value to set, or None to remove. -> entity -> (error, message)."""
    spec = api(ApiKey.ALTER_CLIENT_QUOTAS).request
    s = spec.structs
    body = spec.new(validate_only=validate_only, entries=[s["EntryData"].new(
        entity=[s["EntityData"].new(entity_type=t, entity_name=n) for t, n in entity],
        ops=[s["OpData"].new(key=k, value=0.0 if v is None else float(v), remove=v is None)
             for k, v in ops.items()])
        for entity, ops in alterations.items()])
    conn = await admin.any_connection()
    resp = await conn.request(ApiKey.ALTER_CLIENT_QUOTAS, body)
    assert resp is not None
    return {tuple((e.entity_type, e.entity_name) for e in entry.entity):
            (int(entry.error_code), entry.error_message) for entry in resp.entries}
