"""Delayed operations and the purgatory that holds them (Kafka ``DelayedOperation``).

Theory of operation (Kafka's verbs; asyncio replaces locks and reaper threads):

1. A request that cannot be answered yet (acks=all produce before the high
   watermark passes it; a fetch below min_bytes) becomes a DelayedOperation
   and goes to ``Purgatory.try_complete_else_watch(op, keys)``: if
   ``op.try_complete()`` succeeds at once nothing is watched; otherwise the op
   is watched under each key (a topic-partition) and its expiry is scheduled
   with the timer seam (``loop.call_later`` by default, a fake in tests).
2. Whoever changes a partition (append, high-watermark move, leadership
   change) calls ``check_and_complete(key)``; each op watched there runs
   ``try_complete``, which calls ``force_complete`` when its condition holds.
3. ``force_complete`` is the single exit: it flips ``completed`` once, cancels
   the timer, unwatches the op everywhere and runs ``on_complete`` (which
   resolves the future the handler awaits). Expiry runs ``force_complete``
   then ``on_expiration``, as Kafka's ``DelayedOperation.run``.

Everything runs on the event loop thread, so a check never interleaves with
another; an op completes exactly once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Protocol

log = logging.getLogger(__name__)


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

    def on_complete(self) -> None:
        """Build the result (runs exactly once, on success or expiry)."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Extra work after an expiry (runs after ``on_complete``)."""

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
            self._purgatory._unwatch(self)
        self.on_complete()
        return True

    def _expire(self) -> None:
        self._timer = None
        self.expired = True
        if self.force_complete():
            self.on_expiration()
        else:
            self.expired = False


class Purgatory:
    """Ops watched by key; completes them on ``check_and_complete`` or expiry."""

    def __init__(self, name: str, timer: Timer | None = None) -> None:
        self.name = name
        self.timer: Timer = timer or LoopTimer()
        # key -> ops watched there; a dict as an insertion-ordered set
        self._watchers: dict[Hashable, dict[DelayedOperation, None]] = {}

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """Complete ``op`` now if possible; otherwise watch it and schedule its expiry.

        Returns True when it completed here (its result is already set).
        """
        if op.try_complete():
            return True
        op._purgatory = self
        op._keys = tuple(keys)
        for key in op._keys:
            self._watchers.setdefault(key, {})[op] = None
        op._timer = self.timer.call_later(max(op.delay_ms, 0) / 1000, op._expire)
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Try every op watched under ``key``; how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        done = 0
        for op in list(ops):
            if not op.completed and op.try_complete():
                done += 1
        return done

    def watched(self, key: Hashable | None = None) -> int:
        """Ops watched under ``key`` (or in total, counted once each)."""
        if key is not None:
            return len(self._watchers.get(key, ()))
        return len({op for ops in self._watchers.values() for op in ops})

    def complete_all(self) -> int:
        """Force every watched op to complete (shutdown)."""
        ops = {op for ops in self._watchers.values() for op in ops}
        return sum(1 for op in ops if op.force_complete())

    def _unwatch(self, op: DelayedOperation) -> None:
        for key in op._keys:
            ops = self._watchers.get(key)
            if ops is not None:
                ops.pop(op, None)
                if not ops:
                    del self._watchers[key]


# -- the two delayed operations of the data path ----------------------------------------

TopicPartition = tuple[str, int]


class DelayedProduce(DelayedOperation):
    """acks=all: waits until every partition's high watermark reaches its required offset.

    ``pending``: tp -> the offset the high watermark must reach (last offset
    + 1). ``check(tp, required) -> (done, error)`` asks the partition
    (Kafka ``Partition.checkEnoughReplicasReachOffset``). On expiry the
    partitions still pending get REQUEST_TIMED_OUT. ``future`` receives
    tp -> error code for the pending partitions.
    """

    def __init__(self, delay_ms: int, pending: dict[TopicPartition, int],
                 check: Callable[[TopicPartition, int], tuple[bool, int]],
                 future: asyncio.Future[dict[TopicPartition, int]]) -> None:
        super().__init__(delay_ms)
        from protocol.errors import ErrorCode
        self.pending = dict(pending)
        self.check = check
        self.future = future
        self.errors: dict[TopicPartition, int] = {tp: ErrorCode.REQUEST_TIMED_OUT for tp in pending}

    def try_complete(self) -> bool:
        for tp, required in list(self.pending.items()):
            done, error = self.check(tp, required)
            if done:
                self.errors[tp] = error
                del self.pending[tp]
        return not self.pending and self.force_complete()

    def on_complete(self) -> None:
        if not self.future.done():
            self.future.set_result(self.errors)


class DelayedFetch(DelayedOperation):
    """A fetch waiting for ``min_bytes`` (or any error/divergence) until max wait.

    ``probe() -> (bytes available, must_answer)`` measures the partitions
    without building a response (Kafka ``DelayedFetch.tryComplete``);
    ``complete()`` reads them for real once, when the op completes.
    """

    def __init__(self, delay_ms: int, min_bytes: int, probe: Callable[[], tuple[int, bool]],
                 complete: Callable[[], Any], future: asyncio.Future[Any]) -> None:
        super().__init__(delay_ms)
        self.min_bytes = min_bytes
        self.probe = probe
        self.complete = complete
        self.future = future

    def try_complete(self) -> bool:
        available, must_answer = self.probe()
        if must_answer or available >= self.min_bytes:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if self.future.done():
            return
        try:
            self.future.set_result(self.complete())
        except Exception as e:  # surface read errors to the awaiting handler
            self.future.set_exception(e)
