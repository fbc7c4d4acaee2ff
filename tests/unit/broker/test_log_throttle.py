"""broker/network/log_throttle.py: bad-input warnings bounded per window, the
dropped ones counted into the next line let through."""

from __future__ import annotations

import logging

import pytest

from broker.network.log_throttle import LogThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_suppressed_then_counted(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    throttle = LogThrottle(logging.getLogger("t.throttle"), burst=3, window_s=10.0, clock=clock)
    with caplog.at_level(logging.WARNING, logger="t.throttle"):
        passed = [throttle.log("bad frame %d", i) for i in range(10)]
        assert passed == [True] * 3 + [False] * 7
        assert [r.getMessage() for r in caplog.records] == [f"bad frame {i}" for i in range(3)]
        clock.now += 9.9                       # same window: still suppressed
        assert not throttle.log("bad frame %d", 10)
        clock.now += 0.2                       # a new window: the count rides along
        assert throttle.log("bad frame %d", 11)
        assert caplog.records[-1].getMessage() == (
            "bad frame 11 (8 similar lines suppressed since the previous one)")
        assert caplog.records[-1].levelno == logging.WARNING
        assert throttle.log("bad frame %d", 12)
        assert caplog.records[-1].getMessage() == "bad frame 12"
