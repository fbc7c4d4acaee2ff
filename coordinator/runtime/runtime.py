"""``CoordinatorRuntime``: what one coordinator stands on for its internal topic
(__consumer_offsets for the group coordinator, __transaction_state for the
transaction coordinator) -- one instance each, the same class.

It holds:

* the log seam (``log``: append a batch through the replica manager, read a
  partition back, our leader epoch) and the clock;
* partition ownership (``partitions``: served / loading / coordinator epochs) and
  the key -> partition hash over the topic's current partition count
  (``partition_for``);
* the coordinator's tasks (``spawn``: loads, marker sending, writes started from a
  timer), cancelled and awaited by ``cancel_tasks`` at shutdown; a task that fails
  is logged, never lost silently;
* ``reconcile``: the owner's status check asks the log seam who leads a partition,
  so a missed LeaderAndIsr heals itself;
* ``become_leader``: a LeaderAndIsr (or a missed one, found by ``reconcile``) makes
  this broker the partition's leader at an epoch: when
  ``CoordinatorPartitions`` says a load must start, the owner's ``load`` coroutine
  runs as a task (it installs with ``partitions.loaded`` once replayed).

The state each coordinator keeps (groups, transactional ids) and how it replays its
records stay with that coordinator; this is the part they share.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from coordinator.runtime.log_seam import OffsetsLog
from coordinator.runtime.partitions import CoordinatorPartitions, partition_for_group

log = logging.getLogger(__name__)

Load = Callable[[int, int], Coroutine[Any, Any, None]]    # (partition, leader epoch)


class PartitionOwner(Protocol):
    """Who follows a coordinator topic's leadership (the broker routes LeaderAndIsr
    and StopReplica of __consumer_offsets / __transaction_state to it)."""

    def on_become_leader(self, partition: int, leader_epoch: int) -> None: ...

    def on_resign(self, partition: int, leader_epoch: int | None) -> None: ...


class CoordinatorRuntime:
    def __init__(self, topic: str, log_seam: OffsetsLog, num_partitions: Callable[[], int],
                 clock: Callable[[], int]) -> None:
        self.topic = topic
        self.log = log_seam
        self.clock = clock
        self._num_partitions = num_partitions
        self.partitions = CoordinatorPartitions(topic)
        self.tasks: set[asyncio.Task[Any]] = set()

    def partition_for(self, key: str) -> int:
        """The partition of ``key`` (a group id, a transactional id)."""
        return partition_for_group(key, max(1, self._num_partitions()))

    def become_leader(self, partition: int, leader_epoch: int, load: Load) -> None:
        """We lead ``partition`` from ``leader_epoch``: start ``load`` if it must run."""
        if self.partitions.become_leader(partition, leader_epoch):
            self.spawn(load(partition, leader_epoch))

    def reconcile(self, partition: int, become_leader: Callable[[int, int], None],
                  resign: Callable[[int, int | None], None]) -> None:
        """Follow the log's leadership of ``partition`` when a LeaderAndIsr
        notification was missed: the log seam says whether (and at which epoch) we
        lead it; ownership that disagrees is moved by the owner's own steps."""
        epoch = self.log.leader_epoch(partition)
        owned, loading = self.partitions.owned, self.partitions.loading
        if epoch is None:
            if partition in owned or partition in loading:
                resign(partition, None)
        elif (partition not in owned and partition not in loading) or (
                partition in owned and epoch > owned[partition]):
            become_leader(partition, epoch)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` as one of the coordinator's tasks (``cancel_tasks`` ends them)."""
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s coordinator task failed", self.topic, exc_info=task.exception())

    async def cancel_tasks(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


__all__ = ["CoordinatorRuntime", "Load", "PartitionOwner"]
