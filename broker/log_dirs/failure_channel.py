"""LogDirFailureChannel: the one queue of log dirs that failed (Kafka's class).

Writers: the LogManager's ``report_failure`` (storage's write-path guard, the
checkpoint and marker writes, log creation, start-up), on the event loop or in a
worker thread (log loading at start-up, the log cleaner, shutdown's flush).
``maybe_add_offline_log_dir`` queues a dir the first time it is reported and
ignores it afterwards; it never blocks and never awaits.

Reader: ``run(handle)``, one task on the event loop, hands each queued dir once
to ``handle`` (the LogDirFailureHandler) -- the single writer of what a failed
dir changes in the broker. Dirs reported before ``run`` starts (at start-up)
wait in the queue.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable

log = logging.getLogger("pybroker.log_dirs")


class LogDirFailureChannel:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offline: dict[str, str] = {}          # dir -> what failed first
        self._queue: deque[str] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    def has_offline_log_dir(self, log_dir: str) -> bool:
        return log_dir in self._offline

    @property
    def offline_log_dirs(self) -> dict[str, str]:
        """dir -> what failed there first, for every dir reported so far."""
        with self._lock:
            return dict(self._offline)

    def maybe_add_offline_log_dir(self, log_dir: str, what: str, error: OSError) -> bool:
        """Report a failed dir (any thread); True when it is new and was queued."""
        with self._lock:
            if log_dir in self._offline:
                return False
            self._offline[log_dir] = f"{what}: {error}"
            self._queue.append(log_dir)
        log.error("Error while %s in dir %s: %s; the dir goes offline", what, log_dir, error)
        self._wake_reader()
        return True

    def _wake_reader(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is None or wake is None or loop.is_closed():
            return                       # run() drains the queue when it starts
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            wake.set()
        else:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:         # the loop is closing
                pass

    def _next(self) -> str | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    async def run(self, handle: Callable[[str], Awaitable[None] | None]) -> None:
        """Consume the queue for ever: ``handle(dir)`` once per failed dir, in order.
        A handler error is logged and the next dir still handled."""
        self._loop = asyncio.get_running_loop()
        self._wake = wake = asyncio.Event()
        while True:
            wake.clear()
            while (log_dir := self._next()) is not None:
                try:
                    result = handle(log_dir)
                    if inspect.isawaitable(result):
                        await result
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("handling the failure of log dir %s failed", log_dir)
            await wake.wait()
