"""The two delayed operations of the broker's data path, on the shared purgatory
(``coordinator/runtime/purgatory.py``: DelayedOperation, Purgatory, the timer seam):
``DelayedProduce`` (acks=all until the high watermark passes the batch) and
``DelayedFetch`` (until min_bytes are there). Both re-check only the key that
changed (see the purgatory's theory of operation, point 2)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Any

from coordinator.runtime.purgatory import DelayedOperation

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
        for tp in list(self.pending):
            self._check(tp)
        return not self.pending and self.force_complete()

    def try_complete_for(self, key: Hashable) -> bool:
        if key in self.pending:
            self._check(key)
        return not self.pending and self.force_complete()

    def _check(self, tp: TopicPartition) -> None:
        done, error = self.check(tp, self.pending[tp])
        if done:
            self.errors[tp] = error
            del self.pending[tp]

    def on_complete(self) -> None:
        if not self.future.done():
            self.future.set_result(self.errors)

    def release(self) -> None:
        del self.check, self.future, self.errors
        self.pending = {}


class DelayedFetch(DelayedOperation):
    """A fetch waiting for ``min_bytes`` (or any error/divergence) until max wait.

    ``probe(tp) -> (bytes available, must_answer)`` measures one partition
    without building a response (Kafka ``DelayedFetch.tryComplete``); the op
    keeps each partition's last measure, so a change re-measures only the
    partition it names. ``complete()`` reads them for real once, when the op
    completes.
    """

    def __init__(self, delay_ms: int, min_bytes: int, available: dict[Hashable, int],
                 probe: Callable[[Any], tuple[int, bool]],
                 complete: Callable[[], Any], future: asyncio.Future[Any]) -> None:
        """``available``: each partition's bytes as last measured (0 if not yet)."""
        super().__init__(delay_ms)
        self.min_bytes = min_bytes
        self.probe = probe
        self.complete = complete
        self.future = future
        self._available = dict(available)
        self._total = sum(self._available.values())

    def try_complete(self) -> bool:
        for key in self._available:
            if self._measure(key):
                return self.force_complete()
        return self._total >= self.min_bytes and self.force_complete()

    def try_complete_for(self, key: Hashable) -> bool:
        if key in self._available and self._measure(key):
            return self.force_complete()
        return self._total >= self.min_bytes and self.force_complete()

    def _measure(self, key: Hashable) -> bool:
        """Re-measure one partition; True when it must be answered now."""
        available, must_answer = self.probe(key)
        self._total += available - self._available[key]
        self._available[key] = available
        return must_answer

    def on_complete(self) -> None:
        if self.future.done():
            return
        try:
            self.future.set_result(self.complete())
        except Exception as e:  # surface read errors to the awaiting handler
            self.future.set_exception(e)

    def release(self) -> None:
        del self.probe, self.complete, self.future
        self._available = {}


__all__ = ["DelayedFetch", "DelayedProduce"]
