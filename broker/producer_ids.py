"""Producer id allocation for InitProducerId (Kafka ``ZkProducerIdManager``).

Ids come in blocks from ZooKeeper's ``/latest_producer_id_block`` through the
ClusterStore seam ``allocate_producer_ids(broker_id, count) -> (first, last)``
(a versioned conditional update, so blocks never overlap between brokers).
One block is handed out id by id; the next is fetched when it runs out.
Concurrent callers share one in-flight block request.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

log = logging.getLogger(__name__)

BLOCK_SIZE = 1000


class ProducerIdBlockSource(Protocol):
    async def allocate_producer_ids(self, broker_id: int, count: int) -> tuple[int, int]: ...


class ProducerIdManager:
    def __init__(self, broker_id: int, cluster: ProducerIdBlockSource | Any,
                 block_size: int = BLOCK_SIZE) -> None:
        self.broker_id = broker_id
        self.cluster = cluster
        self.block_size = block_size
        self._next = 0
        self._last = -1       # inclusive end of the current block; -1: none yet
        self._refill: asyncio.Future[None] | None = None

    async def generate_producer_id(self) -> int:
        """A producer id never handed out before, by any broker."""
        while self._next > self._last:
            if self._refill is None:
                self._refill = asyncio.ensure_future(self._fetch_block())
                try:
                    await self._refill
                finally:
                    self._refill = None
            else:
                await asyncio.shield(self._refill)
        pid = self._next
        self._next += 1
        return pid

    async def _fetch_block(self) -> None:
        first, last = await self.cluster.allocate_producer_ids(self.broker_id, self.block_size)
        if last < first:
            raise RuntimeError(f"empty producer id block [{first}, {last}]")
        log.info("acquired producer id block [%d, %d]", first, last)
        self._next, self._last = first, last
