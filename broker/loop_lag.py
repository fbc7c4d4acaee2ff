"""Event-loop stall monitor: how late a periodic timer fires, as a histogram.

Theory of operation:

1. A callback is scheduled with ``loop.call_at`` every ``interval`` seconds
   (10 ms). When it runs, ``lag = loop.time() - due`` is how long the loop was
   busy with something else (a long callback, a blocking call, a garbage
   collection) past the moment the timer became due. That lag is what any
   other ready callback - a client's response, a replica fetch - waited too.
2. The lag goes into a fixed histogram: 0.05 ms to ~100 s in geometric
   buckets (ratio 1.1, so a percentile is read within 10%); the exact maximum
   is kept beside it. Two histograms: one for the current window (reset after
   each periodic log line) and one since start.
3. Every ``window`` seconds (60) one INFO line summarises the window, and
   ``stop()`` logs the same for the whole run::

       event loop lag over 60 s: p50 0.05 p99 1.06 max 14.90 ms (6000 samples, 0 over 50 ms,
           0 of them on CPU, 0 on the loop thread); gc max 3.10 ms (2.95 ms CPU; ...)
       event loop lag since start (1234 s): p50 ... (123400 samples, 2 over 50 ms, 1 of them
           on CPU, 1 on the loop thread); gc max ...

   The fuzzer (tests/fuzz) parses the "since start" line at shutdown. Each line
   ends with the garbage collector's longest pause in its span (``GcPauses``,
   from ``gc.callbacks``): a collection stops the loop too, so this tells a GC
   stall from our code's.
4. Whose time: for a lag over 50 ms the process CPU time since the previous
   tick is compared with the wall time: a stall during which the process ran
   at least half the time is counted "on CPU" (the loop was busy: our code,
   GC); the rest were the OS's (descheduled on a busy machine, or a blocking
   syscall such as a page fault or fsync). On a shared 2-core machine the
   second kind is common; only the first is the broker's doing. Of the stalls
   on CPU, those during which the loop's own thread (``time.thread_time``; the
   tick runs on it) ran at least half the time are counted "on the loop
   thread": a long callback or a collection the loop ran. The others were
   other threads of the broker holding the GIL (a thread pool's work in
   Python) while the loop waited for it. Collections are timed both ways too:
   wall time and the collecting thread's CPU time, so a pause the OS stretched
   reads apart from one the collector spent.
5. Resolution: uvloop's timers have 1 ms granularity (libuv), so lags below
   1 ms read as 0.05 or ~1.06 ms; the percentiles above a few ms are exact
   within a bucket.
6. Bounds: a stall of length S is seen as a lag between S - interval and S
   (the timer may have been due just after the stall began), so the
   measured max is at most ``interval`` below the true one. Cost: one
   callback per interval (about 5 µs: 0.05% of a core at 10 ms), no task, no
   allocation beyond the two fixed lists; the next due time is the previous
   due time plus the interval (no drift), or now when the loop fell more
   than a whole interval behind.
"""

from __future__ import annotations

import asyncio
import bisect
import gc
import logging
import math
import time

log = logging.getLogger("pybroker.loop_lag")

INTERVAL_S = 0.010
WINDOW_S = 60.0
STALL_MS = 50.0          # the bound; lines count the samples above it

_FIRST_EDGE_MS = 0.05
_RATIO = 1.1
_EDGES_MS: list[float] = [_FIRST_EDGE_MS * _RATIO ** i for i in range(190)]  # to ~3.6e6 ms


class LagHistogram:
    """Counts of lags (ms) per geometric bucket, plus the exact maximum."""

    __slots__ = ("counts", "samples", "max_ms", "over_stall", "stalls_on_cpu",
                 "stalls_in_loop")

    def __init__(self) -> None:
        self.counts = [0] * (len(_EDGES_MS) + 1)
        self.samples = 0
        self.max_ms = 0.0
        self.over_stall = 0
        self.stalls_on_cpu = 0      # stalls during which the process mostly ran on a CPU
        self.stalls_in_loop = 0     # ... and the loop's own thread mostly ran

    def add(self, lag_ms: float, on_cpu: bool = True, in_loop: bool = True) -> None:
        self.counts[bisect.bisect_left(_EDGES_MS, lag_ms)] += 1
        self.samples += 1
        if lag_ms > self.max_ms:
            self.max_ms = lag_ms
        if lag_ms > STALL_MS:
            self.over_stall += 1
            if on_cpu:
                self.stalls_on_cpu += 1
                if in_loop:
                    self.stalls_in_loop += 1

    def percentile(self, p: float) -> float:
        """Upper edge (ms) of the bucket holding the p-th percentile (0 when empty),
        never above the exact maximum."""
        if self.samples == 0:
            return 0.0
        rank = max(1, math.ceil(self.samples * p / 100.0))
        seen = 0
        for i, n in enumerate(self.counts):
            seen += n
            if seen >= rank:
                edge = _EDGES_MS[i] if i < len(_EDGES_MS) else self.max_ms
                return min(edge, self.max_ms)
        return self.max_ms

    def summary(self) -> str:
        return (f"p50 {self.percentile(50):.2f} p99 {self.percentile(99):.2f} "
                f"max {self.max_ms:.2f} ms ({self.samples} samples, "
                f"{self.over_stall} over {STALL_MS:g} ms, {self.stalls_on_cpu} of them "
                f"on CPU, {self.stalls_in_loop} on the loop thread)")


class GcPauses:
    """How long Python's garbage collections take (``gc.callbacks``): a collection
    stops every thread, the loop's included, so a long one is a stall of its own
    kind; the lag lines name the longest beside the lag."""

    __slots__ = ("collections", "max_ms", "max_cpu_ms", "over_stall", "_began",
                 "_began_cpu")

    def __init__(self) -> None:
        self.collections = 0
        self.max_ms = 0.0           # wall time of the longest collection
        self.max_cpu_ms = 0.0       # CPU time the collecting thread spent, longest
        self.over_stall = 0
        self._began = 0.0
        self._began_cpu = 0.0

    def __call__(self, phase: str, _info: dict[str, int]) -> None:
        # The callbacks run on the collecting thread, so thread_time is the collector's.
        if phase == "start":
            self._began = time.perf_counter()
            self._began_cpu = time.thread_time()
            return
        took_ms = (time.perf_counter() - self._began) * 1000.0
        cpu_ms = (time.thread_time() - self._began_cpu) * 1000.0
        self.collections += 1
        if took_ms > self.max_ms:
            self.max_ms = took_ms
        if cpu_ms > self.max_cpu_ms:
            self.max_cpu_ms = cpu_ms
        if took_ms > STALL_MS:
            self.over_stall += 1

    def summary(self) -> str:
        return (f"gc max {self.max_ms:.2f} ms ({self.max_cpu_ms:.2f} ms CPU; "
                f"{self.collections} collections, {self.over_stall} over {STALL_MS:g} ms)")


class LoopLagMonitor:
    """Start with ``start()`` inside the running loop; ``stop()`` logs the total."""

    def __init__(self, interval: float = INTERVAL_S, window: float = WINDOW_S) -> None:
        self.interval = interval
        self.window = window
        self.total = LagHistogram()
        self.current = LagHistogram()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._started = 0.0
        self._window_start = 0.0
        self._last_wall = 0.0
        self._last_cpu = 0.0
        self._last_loop_cpu = 0.0
        self.gc_total = GcPauses()
        self.gc_current = GcPauses()

    def start(self) -> None:
        gc.callbacks.append(self.gc_total)
        gc.callbacks.append(self.gc_current)
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._started = self._window_start = loop.time()
        self._due = self._started + self.interval
        self._last_wall, self._last_cpu = self._started, time.process_time()
        self._last_loop_cpu = time.thread_time()
        self._handle = loop.call_at(self._due, self._tick)

    def _tick(self) -> None:
        loop = self._loop
        assert loop is not None
        now = loop.time()
        lag_ms = max(0.0, (now - self._due) * 1000.0)
        on_cpu = in_loop = True
        if lag_ms > STALL_MS:           # whose time was it: ours (CPU) or the OS's?
            half = 0.5 * (now - self._last_wall)
            on_cpu = time.process_time() - self._last_cpu >= half
            in_loop = time.thread_time() - self._last_loop_cpu >= half
        self.total.add(lag_ms, on_cpu, in_loop)
        self.current.add(lag_ms, on_cpu, in_loop)
        if now - self._window_start >= self.window:
            log.info("event loop lag over %.0f s: %s; %s", now - self._window_start,
                     self.current.summary(), self.gc_current.summary())
            self.current = LagHistogram()
            self._swap_gc_window()
            self._window_start = now
        self._last_wall = now
        self._last_cpu = time.process_time()
        self._last_loop_cpu = time.thread_time()
        self._due += self.interval
        if self._due < now:             # fell a whole interval behind: no catch-up burst
            self._due = now + self.interval
        self._handle = loop.call_at(self._due, self._tick)

    def _swap_gc_window(self) -> None:
        fresh = GcPauses()
        if self.gc_current in gc.callbacks:
            gc.callbacks.remove(self.gc_current)
        gc.callbacks.append(fresh)
        self.gc_current = fresh

    def stop(self) -> None:
        if self._handle is None or self._loop is None:
            return
        self._handle.cancel()
        self._handle = None
        for hook in (self.gc_total, self.gc_current):
            if hook in gc.callbacks:
                gc.callbacks.remove(hook)
        log.info("event loop lag since start (%.0f s): %s; %s",
                 self._loop.time() - self._started, self.total.summary(),
                 self.gc_total.summary())
