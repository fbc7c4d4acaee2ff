"""The controller's single event loop: one asyncio.Queue, one consumer task.

``put`` is safe from any callback on the event loop (watches arrive through
ClusterStore's loop bridge). ``process`` runs one event at a time to
completion, so state changes never interleave.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from controller.events import Event

log = logging.getLogger("pybroker.controller")


class EventManager:
    def __init__(self, process: Callable[[Event], Awaitable[None]],
                 drop: Callable[[Event], None] | None = None) -> None:
        """``drop`` is called for each event still queued at ``stop`` (to answer it)."""
        self._process = process
        self._drop = drop
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.processed = 0
        self._in_flight = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="controller-events")

    def put(self, event: Event) -> None:
        self._queue.put_nowait(event)

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            if event is None:
                return
            self._in_flight = True
            try:
                await self._process(event)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("controller event %s failed", type(event).__name__)
            finally:
                self._in_flight = False
            self.processed += 1

    async def idle(self) -> None:
        """Wait until every event queued so far has been processed (tests)."""
        while not self._queue.empty() or self._in_flight:
            await asyncio.sleep(0.005)

    async def stop(self, timeout: float = 5.0) -> None:
        """Drop the queued events (as Kafka's ControllerEventManager.close clears its
        queue: a stopping controller has no business electing leaders for a backlog),
        let the event in progress finish for up to ``timeout`` seconds, then cancel
        it. Bounded even if that event ignores cancellation."""
        task, self._task = self._task, None
        if task is None:
            return
        while not self._queue.empty():
            event = self._queue.get_nowait()
            if event is not None and self._drop is not None:
                self._drop(event)
        self._queue.put_nowait(None)
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            log.warning("controller event in progress did not finish within %.0f s; "
                        "cancelling it", timeout)
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)
