"""LogDirFailureHandler: what a failed log dir means for this broker.

Kafka (ZooKeeper mode), ReplicaManager.handleLogDirFailure: stop the fetchers of
the dir's partitions, mark them Offline (every request for them then answers
KAFKA_STORAGE_ERROR), close the dir's logs (LogManager.handleLogDirFailure, which
halts the JVM when no live dir is left) and write
``/log_dir_event_notification/log_dir_event_<seq>`` so the controller moves their
leadership (KafkaZkClient.propagateLogDirEvent).

Here, for each dir the channel hands over, in order, with no await in between
(one writer, one dir at a time):

1. its partitions leave the follower fetchers and become offline in the
   ReplicaManager (``mark_partition_offline``): produces and fetches waiting on
   them complete with KAFKA_STORAGE_ERROR, later requests get it too; the group
   and transaction coordinators resign the ones they owned (``on_offline``);
2. its logs are closed without writing (``LogManager.take_dir_offline``);
3. no live dir left: "Shutdown broker because all log dirs in ... have failed"
   and ``halt`` (the broker shuts down and exits with 1; Kafka halts at once, we
   still deregister and hand leadership over through a controlled shutdown);
4. otherwise the controller is told: ``run_notifier`` writes one notification
   znode per batch of failures (the controller asks about all of this broker's
   partitions anyway), retrying while ZooKeeper cannot be reached.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

log = logging.getLogger("pybroker.log_dirs")

TopicPartition = tuple[str, int]
NOTIFY_RETRY_S = 1.0


class Logs(Protocol):
    """What the handler needs of the LogManager."""

    log_dirs: list[str]

    @property
    def live_log_dirs(self) -> list[str]: ...

    def dir_of(self, topic: str, partition: int) -> str | None: ...

    def take_dir_offline(self, log_dir: str) -> list[TopicPartition]: ...


class FetcherRemoval(Protocol):
    """What the handler needs of the follower fetchers."""

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None: ...


class Replicas(Protocol):
    """What the handler needs of the ReplicaManager."""

    @property
    def partitions(self) -> Mapping[TopicPartition, object]: ...

    @property
    def fetchers(self) -> FetcherRemoval: ...

    def mark_partition_offline(self, tp: TopicPartition) -> object: ...


class LogDirFailureHandler:
    def __init__(self, logs: Logs, replicas: Replicas, *,
                 notify_controller: Callable[[], Awaitable[Any]],
                 on_offline: Callable[[list[TopicPartition]], None] = lambda _tps: None,
                 halt: Callable[[str], None],
                 retry_s: float = NOTIFY_RETRY_S) -> None:
        self.logs = logs
        self.replicas = replicas
        self.notify_controller = notify_controller
        self.on_offline = on_offline
        self.halt = halt
        self.retry_s = retry_s
        self.handled: list[str] = []               # dirs taken offline, in order
        self._notify = asyncio.Event()
        self._halted = False

    def handle(self, log_dir: str) -> None:
        """Take ``log_dir`` offline (the module docstring's steps 1-3) and ask for the
        controller to be told (step 4)."""
        hosted = [tp for tp in self.replicas.partitions if self.logs.dir_of(*tp) == log_dir]
        self.replicas.fetchers.remove_partitions(hosted)
        for tp in hosted:
            self.replicas.mark_partition_offline(tp)
        closed = self.logs.take_dir_offline(log_dir)
        self.handled.append(log_dir)
        log.warning("Stopped serving replicas in dir %s: %d partitions offline (%s), %d logs "
                    "closed", log_dir, len(hosted), _names(hosted), len(closed))
        if hosted:
            self.on_offline(hosted)
        if not self.logs.live_log_dirs:
            if not self._halted:
                self._halted = True
                self.halt("Shutdown broker because all log dirs in "
                          f"{', '.join(self.logs.log_dirs)} have failed")
            return
        self._notify.set()

    async def run_notifier(self) -> None:
        """Tell the controller after each batch of failures (module docstring, step 4)."""
        while True:
            await self._notify.wait()
            self._notify.clear()
            while True:
                try:
                    await self.notify_controller()
                    log.info("log dir event notification written for the controller")
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as e:   # ZooKeeper unreachable, session moving: retry
                    log.warning("cannot write the log dir event notification: %s; retrying "
                                "in %.1f s", e, self.retry_s)
                    await asyncio.sleep(self.retry_s)


def _names(tps: list[TopicPartition], most: int = 10) -> str:
    shown = ", ".join(f"{t}-{p}" for t, p in tps[:most])
    return shown + (f" and {len(tps) - most} more" if len(tps) > most else "")
