"""``ControllerOps``: what the controller's event-handler modules (alter_partition,
broker_modifications, controlled_shutdown, deletion, leader_election,
log_dir_events, reassignment) use of the Controller, as a Protocol: they import this
leaf, not controller.py (which imports them), so there is no import circle.

Members: the controller's state (context, the partition and replica state machines),
its ZooKeeper store, channel, event queue and stats; the steps several handlers
share (a new request batch, moving a partition's state, bringing partitions online,
dropping replicas from ISRs, the topics allowing unclean election, a topic's
watch); the broker watches broker_modifications keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from controller.channel import ControllerChannel, RequestBatch
    from controller.context import ControllerContext, TopicPartition
    from controller.event_manager import EventManager
    from controller.partition_state_machine import PartitionState, PartitionStates
    from controller.replica_state_machine import ReplicaStates
    from controller.stats import ControllerStats
    from controller.zk import ClusterStore


class ControllerOps(Protocol):
    broker_id: int
    store: ClusterStore
    ctx: ControllerContext
    channel: ControllerChannel
    events: EventManager
    stats: ControllerStats
    partition_states: PartitionStates
    replica_states: ReplicaStates
    broker_watches: dict[int, Callable[[], None]]

    @property
    def is_active(self) -> bool: ...

    def new_batch(self) -> RequestBatch: ...

    def set_partition_state(self, tp: TopicPartition, target: PartitionState) -> None: ...

    async def bring_partitions_online(self, parts: list[TopicPartition], batch: RequestBatch,
                                      resend_all: bool = False) -> None: ...

    async def remove_from_isr(self, parts: list[TopicPartition], gone: set[int],
                              batch: RequestBatch) -> None: ...

    async def unclean_topics(self, parts: list[TopicPartition]) -> set[str]: ...

    def drop_topic_watch(self, topic: str) -> None: ...
