"""The broker's periodic work on its logs (Kafka's LogManager scheduler tasks): the
high-watermark and recovery-point checkpoints, retention, the flush of dirty logs and
the log cleaner's loop. ``Broker.start`` schedules each; nothing here is on a request
path.

The checkpoints run in a worker thread: each is a write, an fsync and a directory
fsync per log dir, which under disk load took the event loop for tens of ms
(LogManager serialises checkpoint writes across threads). The cleaner compacts one
``cleanup.policy=compact`` log per round in a worker thread, swapping segments under
each PartitionLog's lock; its backoff is read from the live config each round
(log.cleaner.backoff.ms is dynamic).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from broker.config import BrokerConfig
from storage.cleaner import CleanerConfig, LogCleaner
from storage.log_manager import LogManager

log = logging.getLogger("pybroker")

HW_CHECKPOINT_INTERVAL_S = 5.0        # replica.high.watermark.checkpoint.interval.ms
FLUSH_CHECK_INTERVAL_S = 1.0          # log.flush.scheduler.interval.ms (Kafka: effectively off)


class LogMaintenance:
    def __init__(self, logs: LogManager, config: Callable[[], BrokerConfig],
                 log_starts_moved: Callable[[], None]) -> None:
        self.logs = logs
        self._config = config                      # the effective config, read each time
        self._log_starts_moved = log_starts_moved  # retention moved log start offsets
        self.cleaner: LogCleaner | None = None     # once run_cleaner started

    async def checkpoint_high_watermarks(self) -> None:
        await asyncio.to_thread(self.logs.checkpoint_high_watermarks)

    async def checkpoint_recovery_points(self) -> None:
        await asyncio.to_thread(self._write_recovery_checkpoints)

    def _write_recovery_checkpoints(self) -> None:
        self.logs.checkpoint_recovery_points()
        self.logs.checkpoint_log_start_offsets()

    def retention(self) -> None:
        deleted = self.logs.cleanup_logs()
        if deleted:
            log.info("retention deleted %d segments", deleted)
            self._log_starts_moved()

    def flush(self) -> None:
        self.logs.flush_dirty_logs()

    async def run_cleaner(self) -> None:
        """Clean one log at a time for ever (cancelled at shutdown)."""
        cfg = self._config()
        cleaner = self.cleaner = LogCleaner(self.logs, CleanerConfig(
            enable=True, dedupe_buffer_size=cfg.log_cleaner_dedupe_buffer_size,
            dedupe_buffer_load_factor=cfg.log_cleaner_io_buffer_load_factor,
            backoff_ms=cfg.log_cleaner_backoff_ms), lock_for=lambda plog: plog.lock)
        while True:
            try:
                stats = await asyncio.to_thread(cleaner.clean_once)
            except Exception:
                log.exception("log cleaner failed; backing off")
                stats = None
            if stats is None:
                await asyncio.sleep(self._config().log_cleaner_backoff_ms / 1000)
            else:
                log.info("cleaned %s: %s", stats.topic_partition, stats)


__all__ = ["FLUSH_CHECK_INTERVAL_S", "HW_CHECKPOINT_INTERVAL_S", "LogMaintenance"]
