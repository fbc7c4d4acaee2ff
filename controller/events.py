"""Controller events: frozen values put on the controller's one queue.

ZooKeeper watch callbacks and request handlers only create these; the single
consumer (event_manager.EventManager -> Controller.process) is the only code
that changes ControllerContext (Kafka's ControllerEventManager).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Startup:
    """Run the first election."""


@dataclass(frozen=True)
class ControllerChange:
    """/controller was created, changed or deleted: resign if it is not ours any
    more; run an election if it is gone."""


@dataclass(frozen=True)
class BrokerChange:
    """/brokers/ids children changed."""


@dataclass(frozen=True)
class TopicChange:
    """/brokers/topics children changed."""


@dataclass(frozen=True)
class PartitionModifications:
    """/brokers/topics/<topic> data changed (partitions added)."""
    topic: str


@dataclass(frozen=True)
class TopicDeletion:
    """/admin/delete_topics children changed."""


@dataclass(frozen=True)
class StopReplicaResult:
    """A broker answered (or could not be sent) a StopReplica(delete=true)."""
    topic: str
    partition: int
    broker_id: int
    error: int


@dataclass(frozen=True)
class ControlledShutdown:
    """A broker asks to shut down; the future gets the partitions it still leads."""
    broker_id: int
    broker_epoch: int
    result: asyncio.Future[list[tuple[str, int]]] = field(compare=False)


@dataclass(frozen=True)
class SessionExpired:
    """Our ZooKeeper session expired: our ephemerals are gone."""


@dataclass(frozen=True)
class SessionRenewed:
    """A new session is up and this broker is registered again: re-elect."""


Event = (Startup | ControllerChange | BrokerChange | TopicChange | PartitionModifications
         | TopicDeletion | StopReplicaResult | ControlledShutdown | SessionExpired
         | SessionRenewed)
