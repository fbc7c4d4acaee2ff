"""The transaction marker channel (Kafka's TransactionMarkerChannelManager): once a
transaction is PrepareCommit / PrepareAbort in ``__transaction_state``, its COMMIT or
ABORT marker must reach every partition it wrote to, through WriteTxnMarkers to each
partition's current leader, before the coordinator writes CompleteCommit /
CompleteAbort.

``MarkerChannel.write(marker, still_owner)`` keeps at it until every partition
answered, grouping the partitions by leader (one request per leader per round;
the leader of a partition is looked up again each round, so leader moves are
followed):

* NONE: written (the leader waited for the ISR).
* INVALID_PRODUCER_EPOCH: the partition already saw a newer epoch of the producer
  (a later coordinator fenced this transaction), so this marker is moot there.
  Kafka stops sending the whole transaction then; we count the partition done so
  that the id does not stay in Prepare* on this coordinator.
* a topic no longer in the metadata (deleted): nothing to mark.
* anything else (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION while the
  metadata catches up, NOT_ENOUGH_REPLICAS*, REQUEST_TIMED_OUT, a dropped
  connection, no leader): retried after a back-off that doubles up to 1 s.

It gives up (False) only when ``still_owner()`` says this broker no longer
coordinates the id: the new coordinator reloads the Prepare* state and sends the
markers again (markers are idempotent for the reader: a second COMMIT for an
ended transaction ends nothing).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

TP = tuple[str, int]
MAX_BACKOFF_S = 1.0


@dataclass(frozen=True)
class TxnMarker:
    """One WriteTxnMarkers entry: a producer's transaction result for ``partitions``."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[TP, ...]


# send(broker id, marker) -> error per partition; raises on transport failure
MarkerSend = Callable[[int, TxnMarker], Awaitable[dict[TP, int]]]
_DONE = frozenset({ErrorCode.NONE, ErrorCode.INVALID_PRODUCER_EPOCH})


class MarkerChannel:
    def __init__(self, send: MarkerSend, leader_of: Callable[[TP], int | None],
                 topic_exists: Callable[[str], bool], *, backoff_s: float = 0.05) -> None:
        self.send = send
        self.leader_of = leader_of
        self.topic_exists = topic_exists
        self.backoff_s = backoff_s

    async def write(self, marker: TxnMarker, still_owner: Callable[[], bool]) -> bool:
        """True once every partition has its marker; False when ownership was lost."""
        remaining = set(marker.partitions)
        delay = self.backoff_s
        while True:
            if not still_owner():
                return False
            remaining = {tp for tp in remaining if self.topic_exists(tp[0])}
            if not remaining:
                return True
            by_leader: dict[int, list[TP]] = {}
            for tp in sorted(remaining):
                leader = self.leader_of(tp)
                if leader is not None and leader >= 0:
                    by_leader.setdefault(leader, []).append(tp)
                else:
                    log.info("marker for producer %d on %s-%d: no leader known; retrying",
                             marker.producer_id, tp[0], tp[1])
            answers = await asyncio.gather(
                *(self.send(b, replace(marker, partitions=tuple(tps)))
                  for b, tps in by_leader.items()), return_exceptions=True)
            for (broker, tps), answer in zip(by_leader.items(), answers):
                if isinstance(answer, BaseException):
                    log.info("markers for producer %d to broker %d: %s", marker.producer_id,
                             broker, answer)
                    continue
                for tp in tps:
                    error = answer.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)
                    if error not in _DONE:
                        log.info("marker for producer %d on %s-%d at broker %d: %s; retrying",
                                 marker.producer_id, tp[0], tp[1], broker,
                                 ErrorCode.from_code(error).name)
                    if error in _DONE:
                        remaining.discard(tp)
                        if error != ErrorCode.NONE:
                            log.warning("marker for producer %d on %s-%d is stale: %s",
                                        marker.producer_id, tp[0], tp[1],
                                        ErrorCode.from_code(error).name)
            if not remaining:
                return True
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_S)


__all__ = ["MarkerChannel", "MarkerSend", "TxnMarker"]
