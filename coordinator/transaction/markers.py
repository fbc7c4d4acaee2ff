"""The transaction marker channel (Kafka's TransactionMarkerChannelManager): once a
transaction is PrepareCommit / PrepareAbort in ``__transaction_state``, its COMMIT or
ABORT marker must reach every partition it wrote to, through WriteTxnMarkers to each
partition's current leader, before the coordinator writes CompleteCommit /
CompleteAbort.

``MarkerChannel.write(marker, still_owner)`` keeps at it until every partition
answered, grouping the partitions by leader (one request per leader per round;
the leader of a partition is looked up again each round in the metadata the
controller sends, so leader moves are followed):

* NONE: written (the leader waited for the ISR).
* INVALID_PRODUCER_EPOCH: the partition already saw a newer epoch of the producer
  (a later coordinator fenced this transaction), so this marker is moot there.
  Kafka stops sending the whole transaction then; we count the partition done so
  that the id does not stay in Prepare* on this coordinator.
* a topic no longer in the metadata (deleted): nothing to mark.
* anything else (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION while the
  metadata catches up, NOT_ENOUGH_REPLICAS*, REQUEST_TIMED_OUT, a refused or
  dropped connection, no leader): retried after a back-off that doubles up to 1 s.

A request in flight is abandoned as soon as the metadata names another leader for
one of its partitions (checked every ``leader_check_s``): a leader that was
stopped (SIGSTOP) or cut off holds the request, and a connection to it, for up to
``request.timeout.ms``; the new leader is asked at once instead. The abandoned
request, if the old leader ever answers it, is ignored (a marker written twice
ends nothing the first did not: the second finds no open transaction).

What waits, and why, is logged once when it changes and then at most every
``LOG_EVERY_S`` seconds per transaction (partition, broker, error), so a marker
stuck behind a dead broker is visible without flooding the log.

It gives up (False) only when ``still_owner()`` says this broker no longer
coordinates the id: the new coordinator reloads the Prepare* state and sends the
markers again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

TP = tuple[str, int]
MAX_BACKOFF_S = 1.0
LOG_EVERY_S = 5.0


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


class LeaderMoved(Exception):
    """The metadata names another leader for a partition of a request in flight."""


class MarkerChannel:
    def __init__(self, send: MarkerSend, leader_of: Callable[[TP], int | None],
                 topic_exists: Callable[[str], bool], *, backoff_s: float = 0.05,
                 leader_check_s: float = 0.2) -> None:
        self.send = send
        self.leader_of = leader_of
        self.topic_exists = topic_exists
        self.backoff_s = backoff_s
        self.leader_check_s = leader_check_s

    async def write(self, marker: TxnMarker, still_owner: Callable[[], bool]) -> bool:
        """True once every partition has its marker; False when ownership was lost."""
        remaining = set(marker.partitions)
        delay = self.backoff_s
        waits = _WaitLog(marker)
        while True:
            if not still_owner():
                return False
            remaining = {tp for tp in remaining if self.topic_exists(tp[0])}
            if not remaining:
                return True
            by_leader: dict[int, list[TP]] = {}
            reasons: dict[TP, str] = {}
            for tp in sorted(remaining):
                leader = self.leader_of(tp)
                if leader is not None and leader >= 0:
                    by_leader.setdefault(leader, []).append(tp)
                else:
                    reasons[tp] = "no leader known"
            answers = await asyncio.gather(
                *(self._send_to_leader(b, replace(marker, partitions=tuple(tps)), still_owner)
                  for b, tps in by_leader.items()), return_exceptions=True)
            for (broker, tps), answer in zip(by_leader.items(), answers):
                if isinstance(answer, BaseException):
                    why = f"{type(answer).__name__}: {answer}" if str(answer) \
                        else type(answer).__name__
                    reasons.update({tp: f"broker {broker}: {why}" for tp in tps})
                    continue
                for tp in tps:
                    error = answer.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)
                    if error in _DONE:
                        remaining.discard(tp)
                        if error != ErrorCode.NONE:
                            log.warning("marker for producer %d on %s-%d is stale: %s",
                                        marker.producer_id, tp[0], tp[1],
                                        ErrorCode.from_code(error).name)
                    else:
                        reasons[tp] = f"broker {broker}: {ErrorCode.from_code(error).name}"
            if not remaining:
                waits.done()
                return True
            waits.note(reasons)
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_S)

    async def _send_to_leader(self, broker: int, marker: TxnMarker,
                              still_owner: Callable[[], bool]) -> dict[TP, int]:
        """One WriteTxnMarkers to ``broker``, abandoned (LeaderMoved) when the metadata
        names another leader for one of its partitions, or when ownership is lost."""
        send = asyncio.ensure_future(self.send(broker, marker))
        try:
            while True:
                done, _ = await asyncio.wait({send}, timeout=self.leader_check_s)
                if done:
                    return send.result()
                moved = [tp for tp in marker.partitions if self.leader_of(tp) != broker]
                if moved:
                    raise LeaderMoved(f"{moved[0][0]}-{moved[0][1]} is now led by broker "
                                      f"{self.leader_of(moved[0])}; request abandoned")
                if not still_owner():
                    raise LeaderMoved("no longer the coordinator; request abandoned")
        finally:
            if not send.done():
                send.cancel()
                await asyncio.gather(send, return_exceptions=True)


class _WaitLog:
    """Logs why a transaction's markers wait: when the reasons change, else at most
    every LOG_EVERY_S seconds."""

    def __init__(self, marker: TxnMarker) -> None:
        self.marker = marker
        self.started = time.monotonic()
        self.last: dict[TP, str] = {}
        self.logged_at = 0.0

    def note(self, reasons: dict[TP, str]) -> None:
        now = time.monotonic()
        if reasons == self.last and now - self.logged_at < LOG_EVERY_S:
            return
        self.last, self.logged_at = dict(reasons), now
        m = self.marker
        log.info("%s markers for producer %d (epoch %d) waiting %.1f s: %s",
                 "COMMIT" if m.commit else "ABORT", m.producer_id, m.producer_epoch,
                 now - self.started,
                 "; ".join(f"{t}-{p} ({why})" for (t, p), why in sorted(reasons.items())))

    def done(self) -> None:
        if self.logged_at:
            m = self.marker
            log.info("%s markers for producer %d (epoch %d) written after %.1f s",
                     "COMMIT" if m.commit else "ABORT", m.producer_id, m.producer_epoch,
                     time.monotonic() - self.started)


__all__ = ["LeaderMoved", "MarkerChannel", "MarkerSend", "TxnMarker"]
