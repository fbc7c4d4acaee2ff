"""How busy the event loop is: the network threads' idle fraction of Kafka
(``NetworkProcessorAvgIdlePercent``) for a broker whose network work is one
event loop.

Theory of operation: once a second (``INTERVAL_S``) a timer on the loop reads
the loop thread's CPU time (``time.thread_time``, CLOCK_THREAD_CPUTIME_ID) and the
wall clock; busy fraction = CPU time used / wall time elapsed over the last
``WINDOW`` samples (10 s). Time the loop spends waiting in its poller costs no
CPU, so this is the event-loop utilisation; a blocking syscall inside a callback
(an fsync) is counted as idle, a known limit (broker/loop_lag.py sees those as
lag). The idle fraction is 1 - busy, clamped to [0, 1]. Cost: one callback a
second.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

INTERVAL_S = 1.0
WINDOW = 10


class LoopBusy:
    def __init__(self, interval: float = INTERVAL_S, window: int = WINDOW) -> None:
        self.interval = interval
        self._samples: deque[tuple[float, float]] = deque(maxlen=window + 1)
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._tick()

    def _tick(self) -> None:
        assert self._loop is not None
        self._samples.append((time.monotonic(), time.thread_time()))
        self._handle = self._loop.call_later(self.interval, self._tick)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def busy_fraction(self) -> float:
        """CPU / wall over the window, up to now (call on the loop thread)."""
        if not self._samples:
            return 0.0
        wall0, cpu0 = self._samples[0]
        wall, cpu = time.monotonic(), time.thread_time()
        if wall - wall0 <= 0:
            return 0.0
        return min(1.0, max(0.0, (cpu - cpu0) / (wall - wall0)))

    def idle_fraction(self) -> float:
        return 1.0 - self.busy_fraction()
