"""Waiting in unit tests for what a background task does, without a fixed sleep.

A fixed ``asyncio.sleep`` before an assertion races on a slow or loaded machine (one
scheduling stall longer than the sleep and the assertion runs too early); ``until``
polls for the condition instead. Its bound only turns a hang into a failure: a passing
run takes as long as the work, however slow the machine."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(cond: Callable[[], bool], what: str, bound_s: float = 10.0) -> None:
    """Poll ``cond`` every 2 ms until it holds; AssertionError naming ``what`` after
    ``bound_s``."""
    loop = asyncio.get_running_loop()
    end = loop.time() + bound_s
    while not cond():
        if loop.time() > end:
            raise AssertionError(f"not within {bound_s} s: {what}")
        await asyncio.sleep(0.002)
