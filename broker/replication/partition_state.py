"""PartitionState: what the controller decided for one partition (LeaderAndIsr).

The LeaderAndIsr handler turns each ``LeaderAndIsrPartitionState`` of the
request (every version: v0-1 ungrouped with TopicName, v2+ grouped under
TopicStates, v5+ with a TopicId) into one of these frozen values and hands the
list to ``ReplicaManager.become_leader_or_follower``. Nothing here talks to
the network or to ZooKeeper.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

NO_TOPIC_ID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class PartitionState:
    topic: str
    partition: int
    topic_id: uuid.UUID = NO_TOPIC_ID   # zero UUID: the request carried none (LeaderAndIsr < v5)
    controller_epoch: int = 0
    leader: int = -1
    leader_epoch: int = 0
    isr: tuple[int, ...] = ()
    partition_epoch: int = 0            # ZooKeeper znode version of the partition state
    replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    is_new: bool = False

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @classmethod
    def from_request(cls, topic: str, topic_id: uuid.UUID | None, state: object) -> PartitionState:
        """From a decoded ``LeaderAndIsrPartitionState`` struct (any version)."""
        get = state.__getattribute__
        return cls(topic=topic, partition=get("partition_index"),
                   topic_id=topic_id or NO_TOPIC_ID,
                   controller_epoch=get("controller_epoch"), leader=get("leader"),
                   leader_epoch=get("leader_epoch"), isr=tuple(get("isr")),
                   partition_epoch=get("partition_epoch"), replicas=tuple(get("replicas")),
                   adding_replicas=tuple(get("adding_replicas")),
                   removing_replicas=tuple(get("removing_replicas")), is_new=bool(get("is_new")))
