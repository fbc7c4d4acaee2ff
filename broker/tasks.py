"""Stopping asyncio tasks for certain.

Python 3.11's ``asyncio.wait_for`` returns the inner result and drops a cancel
that lands as the inner await completes (fixed in 3.12), so a loop built on it
can survive one ``task.cancel()``; ``await task`` after a single cancel then
waits for ever. That made a broker's shutdown hang in "replica fetchers" about
one time in three under the fault campaign.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

log = logging.getLogger(__name__)


async def cancel_and_wait(task: asyncio.Task[object], retry_s: float = 0.5) -> None:
    """Cancel ``task`` and wait until it is done, cancelling again every
    ``retry_s`` seconds while it lives on. The task's own outcome is not raised."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=retry_s)
        if not task.done():
            log.debug("task %s survived a cancel; cancelling again", task.get_name())


async def bounded_step(what: str, step: Awaitable[object], timeout: float) -> None:
    """Await ``step`` for at most ``timeout`` seconds; a step that hangs (a peer that
    never answers, a task that ignores cancellation) is cancelled, logged by name and
    left behind, and a failure is logged, never raised (a shutdown goes on)."""
    task = asyncio.ensure_future(step)
    # asyncio.wait, not wait_for: wait_for awaits the cancelled step, which a step
    # that swallows cancellation would make endless
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        log.warning("shutdown: %s did not stop within %.0f s; going on", what, timeout)
    elif not task.cancelled() and task.exception() is not None:
        log.error("shutdown: stopping %s failed: %r; going on", what, task.exception())
