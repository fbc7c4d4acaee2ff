"""A pytest plugin that stalls the asyncio event loop at random: it finds the tests that
depend on timing, as a loaded CI machine does now and then (a fixed sleep before an
assertion that needs the work done, a short timer the test assumes has not fired yet).

    make test-stalls                          # tests/unit under it
    .venv/bin/python -m pytest -p tests.unit.loop_stalls tests/unit/...

Before an iteration of the loop (``BaseEventLoop._run_once``: the default loop that
``asyncio.run`` makes; uvloop's is not stalled), with probability ``LOOP_STALL_P``
(0.05) the thread sleeps a uniform 0..``LOOP_STALL_MS`` (40) ms. The draws come from
``LOOP_STALL_SEED`` (printed in the header and at the end; a random one unless set), so a failure's
run can be repeated -- as far as the test itself is deterministic.

Every unit test passes under it; a failure is a race to fix (tests/unit/polling.until
instead of a fixed sleep, a long timer for a phase that must not see it fire), never a
reason to lengthen a sleep.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any

import pytest

PROBABILITY = float(os.environ.get("LOOP_STALL_P", "0.05"))
MAX_STALL_S = float(os.environ.get("LOOP_STALL_MS", "40")) / 1000
SEED = int(os.environ.get("LOOP_STALL_SEED") or random.SystemRandom().randrange(1 << 32))

_draws = random.Random(SEED)
_run_once = asyncio.base_events.BaseEventLoop._run_once  # type: ignore[attr-defined]


def _stalled_run_once(self: asyncio.base_events.BaseEventLoop) -> Any:
    if _draws.random() < PROBABILITY:
        time.sleep(_draws.uniform(0, MAX_STALL_S))
    return _run_once(self)


def pytest_configure(config: pytest.Config) -> None:
    asyncio.base_events.BaseEventLoop._run_once = _stalled_run_once  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    asyncio.base_events.BaseEventLoop._run_once = _run_once  # type: ignore[attr-defined]


def _settings() -> str:
    return (f"loop stalls: p={PROBABILITY:g}, up to {MAX_STALL_S * 1000:g} ms, "
            f"LOOP_STALL_SEED={SEED}")


def pytest_report_header(config: pytest.Config) -> str:
    return _settings()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    # the header is not shown under -q: the seed is repeated at the end
    terminalreporter.write_line(_settings())
