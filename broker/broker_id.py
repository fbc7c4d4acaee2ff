"""Which broker id this process runs as (Kafka's KafkaServer.getOrGenerateBrokerId):
``broker.id`` from the config must agree with ``meta.properties`` in every log dir
that has one; with ``broker.id=-1`` the stored id is kept, else a new one is taken
from ZooKeeper's /brokers/seqid (``allocate``). A bad combination is a ConfigError
naming the key and the values."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

from broker.config import ConfigError
from storage.log_manager import read_meta_properties

log = logging.getLogger("pybroker")


def stored_broker_id(log_dir: str) -> str | None:
    """broker.id from the dir's meta.properties; None when absent or unreadable (a
    dir that cannot be read goes offline in LogManager.startup)."""
    try:
        return read_meta_properties(log_dir).get("broker.id")
    except OSError as e:
        log.warning("cannot read meta.properties in %s: %s", log_dir, e)
        return None


async def settle_broker_id(configured: int, log_dirs: Iterable[str],
                           allocate: Callable[[], Awaitable[int]]) -> int:
    stored = {i for i in (stored_broker_id(d) for d in log_dirs) if i is not None}
    if len(stored) > 1:
        raise ConfigError(f"log.dirs disagree on broker.id in meta.properties: {stored}")
    kept = int(stored.pop()) if stored else None
    if configured >= 0:
        if kept is not None and kept != configured:
            raise ConfigError(f"Invalid value {configured} for configuration broker.id: "
                              f"meta.properties in log.dirs says broker.id={kept}")
        return configured
    if kept is not None:
        return kept
    new_id = await allocate()
    log.info("generated broker id %d from /brokers/seqid", new_id)
    return new_id
