"""High watermarks of partitions led elsewhere, for consumer-group lag.

kafka-exporter's ``kafka_consumergroup_lag`` is the partition's latest offset (the
leader's high watermark) minus the group's committed offset, for every partition
the group committed. A group's coordinator holds the committed offsets, but the
partitions may be led by other brokers. So before each scrape the coordinator
asks their leaders (ListOffsets, latest, one request per leader, as a consumer
asks: replica id -1, so the answer is the high watermark), and
``group_families`` reads this cache where the partition is not led here.

Bounds: at most ``TIMEOUT_S`` per scrape, leaders asked concurrently; a leader
that does not answer keeps its last values for ``STALE_S`` and then its
partitions have no lag sample until it answers again (no sample rather than a
wrong one). Only partitions some group coordinated here has committed are asked
for, and entries not asked for in the last round are dropped: the cache is
bounded by the groups' commits.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from broker.metrics.group_metrics import committed_offsets_of
from client.verbs import LATEST_TIMESTAMP, list_offsets

if TYPE_CHECKING:
    from broker.metrics.host import MetricsHost

log = logging.getLogger(__name__)

TP = tuple[str, int]
TIMEOUT_S = 2.0
STALE_S = 60.0


class RemoteHighWatermarks:
    """``await refresh(broker)`` before collecting; ``get(tp)`` -> HW or None."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._hw: dict[TP, tuple[int, float]] = {}   # tp -> (high watermark, when read)

    def get(self, tp: TP) -> int | None:
        entry = self._hw.get(tp)
        if entry is None or self.clock() - entry[1] > STALE_S:
            return None
        return entry[0]

    async def refresh(self, broker: MetricsHost) -> None:
        wanted = set(_committed_not_led_here(broker))
        for tp in list(self._hw):
            if tp not in wanted:
                del self._hw[tp]
        by_leader: dict[int, list[TP]] = defaultdict(list)
        for tp in wanted:
            meta = broker.metadata.partition(*tp)
            if meta is not None and meta.leader >= 0 and meta.leader != broker.broker_id:
                by_leader[meta.leader].append(tp)
        if not by_leader:
            return
        asks = [self._ask(broker, leader, tps) for leader, tps in by_leader.items()]
        done = await asyncio.wait_for(asyncio.gather(*asks, return_exceptions=True),
                                      TIMEOUT_S * 2)
        for leader, outcome in zip(by_leader, done):
            if isinstance(outcome, BaseException):
                log.debug("group lag: high watermarks from broker %d: %s", leader, outcome)

    async def _ask(self, broker: MetricsHost, leader: int, tps: list[TP]) -> None:
        target = broker.metadata.broker(leader)
        if target is None:
            return
        conn = await asyncio.wait_for(broker.pool.get(target.host, target.port), TIMEOUT_S)
        answer = await asyncio.wait_for(
            list_offsets(conn, {tp: LATEST_TIMESTAMP for tp in tps}), TIMEOUT_S)
        now = self.clock()
        for tp, listed in answer.items():
            if listed.error == 0 and listed.offset >= 0:
                self._hw[tp] = (listed.offset, now)


def _committed_not_led_here(broker: MetricsHost) -> Iterator[TP]:
    """Partitions with a commit in a group (either kind) coordinated here, not led
    by this broker."""
    gc = broker.group_coordinator
    if gc is None:
        return
    hosted = broker.replicas.partitions if broker.replicas is not None else {}
    seen: set[TP] = set()
    for _, offsets in committed_offsets_of(gc):
        for tp in list(offsets):
            if tp in seen:
                continue
            seen.add(tp)
            p = hosted.get(tp)
            if p is None or not p.is_leader:
                yield tp
