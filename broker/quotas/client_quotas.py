"""ClientQuotas: a broker's client quotas -- the three managers, their ZooKeeper store,
and the change notifications that keep them current.

Start-up (``start``): subscribe to /config/changes first (ClusterStore's shared watch),
then read every quota entity under /config/users and /config/clients; a notification
naming a quota entity (users/U, clients/C, users/U/clients/C) re-reads that entity and
applies it to the managers, so a quota set through any broker -- or by Kafka's own
kafka-configs.sh against the same ZooKeeper -- applies everywhere without a restart.
Re-reads run one at a time (a lock), so an older read never lands after a newer one.

``call`` is the hook broker.dispatch runs every request through (throttle.py); with no
quota of any type set it is a plain call of the handler.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from broker.quotas.client_quota_manager import ClientQuotaManager, QuotaEntity, QuotaType
from broker.quotas.quota_store import QuotaStore, parse_entity_path, quota_values
from broker.quotas.throttle import Ctx, Handler, throttled_call
from broker.security.scram_credentials import ConfigZk
from protocol.headers import RequestHeader
from protocol.schema import Struct

if TYPE_CHECKING:
    from broker.config import BrokerConfig

log = logging.getLogger("pybroker.quotas")


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ConfigChangeWatch(Protocol):
    """The /config/changes subscription (controller.ClusterStore's)."""

    def watch_config_entity_changes(self, fn: Callable[[str], None]) -> Callable[[], None]: ...


class ClientQuotas:
    def __init__(self, config: BrokerConfig, zk: ConfigZk,
                 clock_ms: Callable[[], int] = _monotonic_ms) -> None:
        samples, window_s = config.quota_window_num, config.quota_window_size_seconds
        self.produce = ClientQuotaManager(QuotaType.PRODUCE, samples, window_s)
        self.fetch = ClientQuotaManager(QuotaType.FETCH, samples, window_s)
        self.request = ClientQuotaManager(QuotaType.REQUEST, samples, window_s,
                                          max_throttle_ms=window_s * 1000)
        self.store = QuotaStore(zk)
        self.clock_ms = clock_ms
        self._reload_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def managers(self) -> tuple[ClientQuotaManager, ...]:
        return self.produce, self.fetch, self.request

    @property
    def enabled(self) -> bool:
        return any(m.enabled for m in self.managers)

    def apply(self, entity: QuotaEntity, values: dict[str, float]) -> None:
        """Make ``values`` (quota key -> bound) the entity's quotas; keys left out are
        removed."""
        for manager in self.managers:
            manager.update_quota(entity, values.get(manager.quota_type.value))

    async def start(self, cluster: ConfigChangeWatch) -> Callable[[], None]:
        """Subscribe to change notifications, then load every entity -> cancel."""
        cancel: Callable[[], None] = cluster.watch_config_entity_changes(self.on_change)
        loaded = await self.store.read_all()
        for entity, values in loaded.items():
            self.apply(entity, values)
        if loaded:
            log.info("client quotas loaded for %d entities", len(loaded))
        return cancel

    def on_change(self, entity_path: str) -> None:
        entity = parse_entity_path(entity_path)
        if entity is None:
            return
        task = asyncio.ensure_future(self.reload(entity))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def reload(self, entity: QuotaEntity) -> None:
        async with self._reload_lock:
            try:
                config, _ = await self.store.read(entity)
            except Exception:
                log.exception("re-reading the quotas of %s failed", entity.path)
                return
            values = quota_values(config)
            self.apply(entity, values)
            log.info("applied client quota change for %s: %s", entity.path, values or "none")

    async def call(self, ctx: Ctx, header: RequestHeader, body: Struct,
                   fn: Handler[Ctx]) -> Any:
        if not self.enabled:
            return await fn(ctx, body)
        return await throttled_call(self, ctx, header, body, fn)
