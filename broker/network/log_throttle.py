"""A bound on how many lines hostile input can make the broker log.

Every malformed frame closes its connection with a WARNING that names the peer and
the fault: the operator's trail. Under a flood of bad frames (the fuzzer sends a few
thousand a second) those lines became ~8% of the event loop's time (py-spy:
``StreamHandler.emit``, synchronous writes to the log file) and a way to fill the
disk. ``LogThrottle`` lets ``BURST`` lines through per ``WINDOW_S`` seconds, counts
the rest, and says how many it dropped with the next line it lets through::

    closing connection 127.0.0.1:5555: malformed Produce v9: ... (37 similar lines
    suppressed since the previous one)

One instance per kind of line, shared by all connections (the bound is the
broker's, not a connection's: a flood comes over many connections). Event-loop
only, so no lock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

BURST = 20            # lines per window before suppression starts
WINDOW_S = 10.0


class LogThrottle:
    def __init__(self, logger: logging.Logger, level: int = logging.WARNING, *,
                 burst: int = BURST, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.level = level
        self.burst = burst
        self.window_s = window_s
        self.clock = clock
        self._window_start = float("-inf")
        self._in_window = 0           # lines let through in the current window
        self.suppressed = 0           # lines dropped since the last one let through

    def log(self, msg: str, *args: object) -> bool:
        """Log ``msg % args`` unless this window's burst is spent; -> whether it was."""
        now = self.clock()
        if now - self._window_start >= self.window_s:
            self._window_start = now
            self._in_window = 0
        if self._in_window >= self.burst:
            self.suppressed += 1
            return False
        self._in_window += 1
        if self.suppressed:
            msg += " (%d similar lines suppressed since the previous one)"
            args = (*args, self.suppressed)
            self.suppressed = 0
        self.logger.log(self.level, msg, *args)
        return True
