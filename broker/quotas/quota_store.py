"""Client quotas in ZooKeeper, where and as Kafka's ZooKeeper-mode brokers keep them.

Layout (Kafka's ConfigEntityZNode; names sanitized as
broker.security.scram_credentials.sanitize, ``<default>`` for a default entity)::

    /config/users/<user>                        {"version":1,"config":{
    /config/users/<user>/clients/<client id>        "producer_byte_rate":"1048576",
    /config/clients/<client id>                     "consumer_byte_rate":"2097152",
                                                    "request_percentage":"50.0", ...}}
    /config/changes/config_change_<10 digits>   {"version":2,"entity_path":"users/<user>"}
                                                (or "clients/<c>", "users/<u>/clients/<c>")

Values are strings, as Kafka writes them (the byte rates as longs, the percentage as a
double's text). /config/users/<user> also holds the user's SCRAM credentials
(scram_credentials.py): every write here is read-modify-write of the whole "config"
object with a conditional set on the version read (create when absent), re-read and
retried when another writer (a SCRAM alteration, another broker) got there first, so
neither kind of key is ever lost; the SCRAM store writes the same way and keeps ours.
A write then creates the change notification; every broker's watch on /config/changes
(ClusterStore.watch_config_entity_changes, shared with topic configs) re-reads that
entity and applies it without a restart.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from broker.quotas.client_quota_manager import QuotaEntity
from broker.security.scram_credentials import (ABSENT, CONFIG_CHANGE_PREFIX, ConfigZk,
                                               decode_user_config, encode_user_config)

log = logging.getLogger("pybroker.quotas")

CONFIG_USERS = "/config/users"
CONFIG_CLIENTS = "/config/clients"
MAX_WRITE_ATTEMPTS = 10
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage",
              "controller_mutation_rate")


class QuotaWriteError(Exception):
    """A quota write that did not land (the znode kept changing)."""


def parse_entity_path(path: str) -> QuotaEntity | None:
    """'users/U' | 'clients/C' | 'users/U/clients/C' -> the entity; None for any other
    path (topics/..., brokers/...)."""
    parts = path.split("/")
    if len(parts) == 2 and parts[0] == "users" and parts[1]:
        return QuotaEntity(parts[1], None)
    if len(parts) == 2 and parts[0] == "clients" and parts[1]:
        return QuotaEntity(None, parts[1])
    if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients" and parts[1] and parts[3]:
        return QuotaEntity(parts[1], parts[3])
    return None


def znode_path(entity: QuotaEntity) -> str:
    return f"/config/{entity.path}"


def quota_values(config: Mapping[str, object]) -> dict[str, float]:
    """The quota keys of an entity's config as numbers; a value that is not a number is
    logged and left out (the rest still apply)."""
    out: dict[str, float] = {}
    for key in QUOTA_KEYS:
        raw = config.get(key)
        if raw is None:
            continue
        try:
            out[key] = float(str(raw))
        except ValueError:
            log.warning("quota %s=%r is not a number; ignored", key, raw)
    return out


def encode_change(entity: QuotaEntity) -> bytes:
    return json.dumps({"version": 2, "entity_path": entity.path},
                      separators=(",", ":")).encode()


class QuotaStore:
    """Read and write quota entities' configs (see the module docstring)."""

    def __init__(self, zk: ConfigZk) -> None:
        self.zk = zk

    async def read(self, entity: QuotaEntity) -> tuple[dict[str, object], int]:
        """(the entity's whole config, its znode version or ABSENT)."""
        got = await self.zk.get_data(znode_path(entity))
        if got is None:
            return {}, ABSENT
        try:
            return decode_user_config(got[0]), got[1]
        except ValueError as e:
            log.warning("%s: %s; read as empty", znode_path(entity), e)
            return {}, got[1]

    async def read_all(self) -> dict[QuotaEntity, dict[str, float]]:
        """Every entity with at least one quota key -> its quota values."""
        entities: list[QuotaEntity] = []
        for user in await self.zk.children(CONFIG_USERS):
            entities.append(QuotaEntity(user, None))
            for client in await self.zk.children(f"{CONFIG_USERS}/{user}/clients"):
                entities.append(QuotaEntity(user, client))
        entities += [QuotaEntity(None, c) for c in await self.zk.children(CONFIG_CLIENTS)]
        out: dict[QuotaEntity, dict[str, float]] = {}
        for entity in entities:
            values = quota_values((await self.read(entity))[0])
            if values:
                out[entity] = values
        return out

    async def alter(self, entity: QuotaEntity, changes: Mapping[str, str | None]) -> None:
        """Set (value) or remove (None) the keys of ``changes`` in the entity's config,
        every other key kept; then the change notification. QuotaWriteError when the
        znode kept changing under us."""
        path = znode_path(entity)
        for _ in range(MAX_WRITE_ATTEMPTS):
            config, version = await self.read(entity)
            new = dict(config)
            for key, value in changes.items():
                if value is None:
                    new.pop(key, None)
                else:
                    new[key] = value
            data = encode_user_config(new)
            written = (await self.zk.create(path, data) if version == ABSENT
                       else await self.zk.set_data(path, data, version) is not None)
            if written:
                await self.zk.create_sequential(CONFIG_CHANGE_PREFIX, encode_change(entity))
                log.info("altered quotas of %s: %s", entity.path, dict(changes))
                return
        raise QuotaWriteError(f"{path} kept changing: gave up after "
                              f"{MAX_WRITE_ATTEMPTS} attempts")
