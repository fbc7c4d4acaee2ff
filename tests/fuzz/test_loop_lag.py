"""broker/loop_lag.py: the histogram's percentiles and a stall seen by the monitor."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time

import pytest

from broker.loop_lag import GcPauses, LagHistogram, LoopLagMonitor


def test_percentiles_within_a_bucket_and_exact_max() -> None:
    h = LagHistogram()
    for _ in range(990):
        h.add(0.2)
    for _ in range(10):
        h.add(30.0)
    h.add(75.0)
    assert 0.2 <= h.percentile(50) <= 0.2 * 1.1
    assert 30.0 <= h.percentile(99.5) <= 33.0
    assert h.max_ms == 75.0 and h.over_stall == 1
    assert "max 75.00 ms" in h.summary()


def test_a_blocking_call_shows_as_lag(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> LoopLagMonitor:
        monitor = LoopLagMonitor(interval=0.005, window=3600)
        monitor.start()
        await asyncio.sleep(0.05)
        time.sleep(0.08)                  # a stall of 80 ms
        await asyncio.sleep(0.05)
        monitor.stop()
        return monitor
    with caplog.at_level(logging.INFO, logger="pybroker.loop_lag"):
        monitor = asyncio.run(main())
    assert 70.0 <= monitor.total.max_ms < 200.0
    assert monitor.total.stalls_on_cpu == 0          # asleep: the OS's time, not ours
    assert monitor.total.stalls_in_loop == 0
    assert any("event loop lag since start" in r.getMessage() for r in caplog.records)


def test_a_busy_loop_counts_as_a_stall_on_cpu() -> None:
    async def main() -> LoopLagMonitor:
        monitor = LoopLagMonitor(interval=0.005, window=3600)
        monitor.start()
        await asyncio.sleep(0.05)
        end = time.process_time() + 0.08
        while time.process_time() < end:  # 80 ms of our own CPU
            pass
        await asyncio.sleep(0.05)
        monitor.stop()
        return monitor
    monitor = asyncio.run(main())
    assert monitor.total.over_stall >= 1 and monitor.total.stalls_on_cpu >= 1
    assert monitor.total.stalls_in_loop >= 1         # the loop's own thread ran it


def test_a_loop_waiting_on_another_busy_thread_is_on_cpu_but_not_the_loop_thread() -> None:
    def spin() -> None:
        end = time.thread_time() + 0.08
        while time.thread_time() < end:   # 80 ms of another thread's CPU
            pass

    async def main() -> LoopLagMonitor:
        monitor = LoopLagMonitor(interval=0.005, window=3600)
        monitor.start()
        await asyncio.sleep(0.05)
        worker = threading.Thread(target=spin)
        worker.start()
        worker.join()                     # the loop blocked on it (as on a GIL it holds)
        await asyncio.sleep(0.05)
        monitor.stop()
        return monitor
    monitor = asyncio.run(main())
    assert monitor.total.over_stall >= 1 and monitor.total.stalls_on_cpu >= 1
    assert monitor.total.stalls_in_loop == 0
    assert "0 on the loop thread)" in monitor.total.summary()


def test_gc_pauses_are_timed_and_named_in_the_lines() -> None:
    pauses = GcPauses()
    gc.callbacks.append(pauses)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(pauses)
    assert pauses.collections >= 1 and pauses.max_ms > 0.0
    assert 0.0 < pauses.max_cpu_ms <= pauses.max_ms * 1.5 + 1.0
    assert pauses.summary().startswith("gc max ") and " ms CPU; " in pauses.summary()
