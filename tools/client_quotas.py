"""``pybroker configs`` for client quotas: kafka-configs.sh's quota side.

    pybroker configs --bootstrap-server HOST:PORT --alter --entity-type clients
        --entity-name app --add-config 'producer_byte_rate=1048576,consumer_byte_rate=2097152'
    pybroker configs ... --alter --entity-type users --entity-name alice
        --entity-type clients --entity-default --add-config request_percentage=50
    pybroker configs ... --alter --entity-type users --entity-default
        --delete-config producer_byte_rate
    pybroker configs ... --describe --entity-type users [--entity-name U | --entity-default]
        [--entity-type clients [--entity-name C | --entity-default]]

Entities as ConfigCommand builds them: the --entity-type options in order ("users"
-> user, "clients" -> client-id), paired in order with the --entity-name /
--entity-default options (``--user U`` / ``--client C`` are shorthands); a default
is the type's <default> entity. Describe sends a strict filter: a named type matches
that name exactly, a default the default entity, a type without a name any
specified entity of that type (the default included).

Quota keys: producer_byte_rate, consumer_byte_rate (whole numbers of bytes per
second), request_percentage (percent of the broker's event loop),
controller_mutation_rate; a value that is not a number is refused here. A users
--alter may mix quota keys with SCRAM credentials (tools/configs.py sends those).

Output, as Kafka's: ``Quota configs for user-principal 'alice', client-id 'app' are
producer_byte_rate=1048576.0`` per entity (``the default client-id`` for a
default); ``Completed updating config for user alice.`` /
``Completed updating default config for clients in the cluster.``
"""

from __future__ import annotations

from typing import IO

from client import KafkaAdmin
from client.quota_admin import (CLIENT_ID, USER, Entity, FilterComponent, alter_client_quotas,
                                any_specified, default, describe_client_quotas, exact)
from protocol.errors import ErrorCode
from tools import ToolError

QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage",
              "controller_mutation_rate")
WIRE_TYPES = {"users": USER, "clients": CLIENT_ID}
SHOWN_TYPES = {USER: "user-principal", CLIENT_ID: "client-id"}


def quota_entity(types: list[str], names: list[str | None]) -> Entity:
    """The entity an --alter names: every type paired with a name or a default."""
    if len(names) != len(types):
        raise ToolError("An entity name or --entity-default must be given for each "
                        "--entity-type with --alter")
    bad = [t for t in types if t not in WIRE_TYPES]
    if bad or len(set(types)) != len(types):
        raise ToolError("Quota entities are --entity-type users and/or clients, each once; "
                        f"got {', '.join(types)}")
    return tuple((WIRE_TYPES[t], n) for t, n in zip(types, names))


def quota_filter(types: list[str], names: list[str | None]) -> list[FilterComponent]:
    """A describe's strict filter (see the module docstring)."""
    if len(names) > len(types):
        raise ToolError("More entity names than --entity-type options")
    out = []
    for i, t in enumerate(types):
        if t not in WIRE_TYPES:
            raise ToolError(f"Quotas are described for users and clients, not {t}")
        wire = WIRE_TYPES[t]
        if i >= len(names):
            out.append(any_specified(wire))
        elif names[i] is None:
            out.append(default(wire))
        else:
            out.append(exact(wire, names[i] or ""))
    return out


def quota_changes(adds: dict[str, str], deletes: list[str]) -> dict[str, float | None]:
    """--add-config / --delete-config quota keys -> key -> value (None: remove)."""
    changes: dict[str, float | None] = {}
    for key, text in adds.items():
        if key not in QUOTA_KEYS:
            raise ToolError(f"Only quota configs can be added for 'clients' using "
                            f"--bootstrap-server. Unexpected config names: {key}")
        try:
            changes[key] = float(text)
        except ValueError:
            raise ToolError(f"Invalid value for quota config {key}: {text!r} is not a "
                            "number") from None
    for key in deletes:
        if key not in QUOTA_KEYS:
            raise ToolError(f"Only quota configs can be deleted for 'clients' using "
                            f"--bootstrap-server. Unexpected config names: {key}")
        changes[key] = None
    return changes


def describe_entity(entity: Entity) -> str:
    return ", ".join(f"{SHOWN_TYPES.get(t, t)} '{n}'" if n is not None
                     else f"the default {SHOWN_TYPES.get(t, t)}" for t, n in entity)


def _format_value(value: float) -> str:
    return repr(float(value))       # Java's Double.toString for ordinary values: 1024.0


async def describe(admin: KafkaAdmin, types: list[str], names: list[str | None],
                   out: IO[str]) -> None:
    described = await describe_client_quotas(admin, quota_filter(types, names), strict=True)
    for entity in sorted(described, key=lambda e: [(t, n or "") for t, n in e]):
        values = ", ".join(f"{k}={_format_value(v)}" for k, v in described[entity].items())
        out.write(f"Quota configs for {describe_entity(entity)} are {values}\n")


async def alter(admin: KafkaAdmin, entity: Entity, changes: dict[str, float | None]) -> None:
    results = await alter_client_quotas(admin, {entity: changes})
    for name, (code, message) in results.items():
        if code != ErrorCode.NONE:
            err = ErrorCode.from_code(code)
            raise ToolError(f"{message or err.message} ({err.name}) for "
                            f"{describe_entity(name)}")


def completed(types: list[str], names: list[str | None]) -> str:
    if names and names[0] is not None:
        return f"Completed updating config for {types[0][:-1]} {names[0]}."
    return f"Completed updating default config for {types[0]} in the cluster."
