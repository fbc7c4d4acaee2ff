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

log = logging.getLogger(__name__)


async def cancel_and_wait(task: asyncio.Task[object], retry_s: float = 0.5) -> None:
    """Cancel ``task`` and wait until it is done, cancelling again every
    ``retry_s`` seconds while it lives on. The task's own outcome is not raised."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=retry_s)
        if not task.done():
            log.debug("task %s survived a cancel; cancelling again", task.get_name())
