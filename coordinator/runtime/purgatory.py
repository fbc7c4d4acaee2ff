"""Delayed operations and the purgatory that holds them (Kafka ``DelayedOperation``),
shared by the coordinators (delayed joins, syncs, heartbeats) and the broker's data
path (``broker/replication/purgatory.py``: DelayedProduce, DelayedFetch).

Theory of operation (Kafka's verbs; asyncio replaces locks and reaper threads):

1. A request that cannot be answered yet (a JoinGroup until the rebalance ends;
   acks=all produce before the high watermark passes it; a fetch below min_bytes)
   becomes a DelayedOperation
   and goes to ``Purgatory.try_complete_else_watch(op, keys)``: if
   ``op.try_complete()`` succeeds at once nothing is watched; otherwise the op
   is watched under each key (a topic-partition) and its expiry is scheduled
   with the timer seam (``loop.call_later`` by default, a fake in tests).
2. Whoever changes a key (a partition's append, high-watermark move or
   leadership change; a group's member joining) calls ``check_and_complete(key)``;
   each op watched there runs ``try_complete_for(key)``, which calls
   ``force_complete`` when its condition holds. The two data-path ops re-check
   only that key (a Fetch or Produce over 1,000 partitions must not re-read all
   1,000 on every change: that made acks=all to many partitions quadratic); Kafka
   re-checks every partition of the op, which is cheap there because it compares
   offsets only.
3. ``force_complete`` is the single exit: it flips ``completed`` once, cancels
   the timer and runs ``on_complete`` (which resolves the future the handler
   awaits). A completed op leaves its watch lists lazily, as Kafka's: the next
   check of a key drops it, and a sweep of every list runs once completed
   entries pile up (a replica fetch watches all of its 1,000 partitions and
   completes on one; unwatching the other 999 each time was most of its
   cost). The sweep visits only the keys that completed ops were watched
   under. So that a stale entry costs next to nothing while it waits, a
   completed op drops what it holds (``release``: its closures, future and
   result): a follower's fetch op is also watched under partitions that never
   change, and before the release thousands of finished fetches, each with its
   read result, stayed alive until the sweep and made every full garbage
   collection of the broker take 50-130 ms. Expiry runs ``force_complete``
   then ``on_expiration``, as Kafka's ``DelayedOperation.run``.

Everything runs on the event loop thread, so a check never interleaves with
another; an op completes exactly once.

Metrics (broker/metrics/): ``pending`` counts the ops watched and not yet
completed (NumDelayedOperations); an op watched while a request's
``RequestClock`` is current (``CURRENT``: the connection sets it around the
handler) adds its time in the purgatory to that request's remote time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Protocol

import contextvars
import time

log = logging.getLogger(__name__)

perf_counter = time.perf_counter


class RequestClock:
    """The remote time of the request being handled: what its delayed operations
    spent in a purgatory (added here; read by broker/metrics/request_timing.py)."""

    __slots__ = ("remote",)

    def __init__(self) -> None:
        self.remote = 0.0


# the RequestClock of the request being handled (the connection sets it around the
# handler); an op watched while one is current adds its wait to it
CURRENT: contextvars.ContextVar[RequestClock | None] = contextvars.ContextVar(
    "pybroker_request_clock", default=None)


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Timer(Protocol):
    """The clock seam: ``call_later(seconds, callback)`` like ``asyncio``'s loop."""

    def call_later(self, delay: float, callback: Callable[[], Any]) -> TimerHandle: ...


class LoopTimer:
    """The running event loop as a Timer."""

    def call_later(self, delay: float, callback: Callable[[], Any]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(delay, callback)


class DelayedOperation:
    """An operation that completes when ``try_complete`` says so, or at ``delay_ms``."""

    # metrics: the request whose remote time this op's wait adds to, and since when
    _clock: RequestClock | None = None
    _watched_at = 0.0

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self.completed = False
        self.expired = False
        self._timer: TimerHandle | None = None
        self._purgatory: Purgatory | None = None
        self._keys: tuple[Hashable, ...] = ()

    # -- subclass hooks ----------------------------------------------------------------

    def try_complete(self) -> bool:
        """Check the condition; call ``force_complete`` and return its result when met."""
        raise NotImplementedError

    def try_complete_for(self, key: Hashable) -> bool:
        """``try_complete`` after a change under ``key`` alone; ops whose condition
        is per key override it to re-check just that key."""
        return self.try_complete()

    def on_complete(self) -> None:
        """Build the result (runs exactly once, on success or expiry)."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Extra work after an expiry (runs after ``on_complete``)."""

    def release(self) -> None:
        """Drop what the op holds once it is done (after ``on_complete``, and after
        ``on_expiration`` on expiry): a completed op may wait in watch lists until
        the next check of each key or a sweep, and should not keep its payload
        alive meanwhile."""

    # -- completion --------------------------------------------------------------------

    def force_complete(self) -> bool:
        """Complete now unless already done; True if this call completed it."""
        if self.completed:
            return False
        self.completed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._purgatory is not None:
            self._purgatory._completed(self)
        if self._clock is not None:
            self._clock.remote += perf_counter() - self._watched_at
            self._clock = None
        self.on_complete()
        if not self.expired:
            self.release()
        return True

    def _expire(self) -> None:
        self._timer = None
        self.expired = True
        if self.force_complete():
            self.on_expiration()
            self.release()
        else:
            self.expired = False


class Purgatory:
    """Ops watched by key; completes them on ``check_and_complete`` or expiry."""

    # sweep once this many watch entries belong to completed ops (Kafka sweeps
    # after *.purgatory.purge.interval.requests = 1,000 ops)
    PURGE_AFTER = 5_000

    def __init__(self, name: str, timer: Timer | None = None) -> None:
        self.name = name
        self.timer: Timer = timer or LoopTimer()
        # key -> ops watched there; a dict as an insertion-ordered set. May hold
        # completed ops (dropped lazily, see the module docstring).
        self._watchers: dict[Hashable, dict[DelayedOperation, None]] = {}
        self._stale = 0      # watch entries of completed ops not yet dropped
        self._dirty: set[Hashable] = set()   # keys that may hold such entries
        self.pending = 0     # ops watched, not completed (metrics: NumDelayedOperations)

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """Complete ``op`` now if possible; otherwise watch it and schedule its expiry.

        Returns True when it completed here (its result is already set).
        """
        if op.try_complete():
            return True
        self.watch(op, keys)
        return False

    def watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> None:
        """Watch ``op`` without trying it first: for a caller that has just found it
        cannot complete (on the loop thread, so nothing changed since)."""
        op._purgatory = self
        op._keys = tuple(keys)
        for key in op._keys:
            self._watchers.setdefault(key, {})[op] = None
        self.pending += 1
        clock = CURRENT.get()
        if clock is not None:
            op._clock, op._watched_at = clock, perf_counter()
        op._timer = self.timer.call_later(max(op.delay_ms, 0) / 1000, op._expire)

    def check_and_complete(self, key: Hashable) -> int:
        """Try every op watched under ``key``; how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        done = 0
        for op in list(ops):
            if op.completed:
                if ops.pop(op, 0) is None:   # (a sweep during this loop may have taken it)
                    self._stale = max(0, self._stale - 1)
            elif op.try_complete_for(key):
                done += 1
        if not ops and self._watchers.get(key) is ops:
            del self._watchers[key]
        return done

    def watched(self, key: Hashable | None = None) -> int:
        """Ops watched under ``key`` (or in total, counted once each), completed ones not
        counted."""
        if key is not None:
            return sum(1 for op in self._watchers.get(key, ()) if not op.completed)
        return len({op for ops in self._watchers.values() for op in ops if not op.completed})

    def complete_all(self) -> int:
        """Force every watched op to complete (shutdown)."""
        ops = {op for ops in self._watchers.values() for op in ops}
        return sum(1 for op in ops if op.force_complete())

    def _completed(self, op: DelayedOperation) -> None:
        self.pending -= 1
        self._stale += len(op._keys)
        self._dirty.update(op._keys)
        if self._stale >= self.PURGE_AFTER:
            self.purge_completed()

    def purge_completed(self) -> None:
        """Drop completed ops from the watch lists of every key one was watched under."""
        for key in self._dirty:
            ops = self._watchers.get(key)
            if ops is None:
                continue
            for op in [op for op in ops if op.completed]:
                del ops[op]
            if not ops:
                del self._watchers[key]
        self._dirty.clear()
        self._stale = 0
