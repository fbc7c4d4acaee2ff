"""Controller events: frozen values put on the controller's one queue.

ZooKeeper watch callbacks and request handlers only create these; the single
consumer (event_manager.EventManager -> Controller.process) is the only code
that changes ControllerContext (Kafka's ControllerEventManager).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

TopicPartition = tuple[str, int]
ErrorResult = tuple[int, str | None]          # (error code, message)


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
class BrokerModification:
    """/brokers/ids/<id>'s data changed (a live broker's new endpoints)."""
    broker_id: int


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


@dataclass(frozen=True)
class AlterPartitionReceived:
    """An AlterPartition request (the decoded body and its version) from a partition
    leader; the future gets the response body."""
    request: Any
    version: int
    result: asyncio.Future[Any] = field(compare=False)


@dataclass(frozen=True)
class ElectLeaders:
    """ElectLeaders (admin) or the auto-rebalance task: ``partitions`` None = all;
    election_type 0 preferred, 1 unclean. The future gets per-partition results."""
    partitions: tuple[TopicPartition, ...] | None
    election_type: int
    result: asyncio.Future[dict[TopicPartition, ErrorResult]] | None = field(compare=False)


@dataclass(frozen=True)
class AutoLeaderRebalance:
    """leader.imbalance.check.interval.seconds elapsed (auto.leader.rebalance.enable)."""


@dataclass(frozen=True)
class ApiPartitionReassignment:
    """AlterPartitionReassignments: target replicas per partition, None = cancel."""
    targets: tuple[tuple[TopicPartition, tuple[int, ...] | None], ...]
    result: asyncio.Future[dict[TopicPartition, ErrorResult]] = field(compare=False)


@dataclass(frozen=True)
class ListPartitionReassignments:
    """ListPartitionReassignments: ``partitions`` None = every ongoing one. The future
    gets tp -> (replicas, adding, removing)."""
    partitions: tuple[TopicPartition, ...] | None
    result: asyncio.Future[dict[TopicPartition, tuple[list[int], list[int], list[int]]]] = \
        field(compare=False)


@dataclass(frozen=True)
class ZkPartitionReassignment:
    """/admin/reassign_partitions was created or changed (the pre-KIP-455 API)."""


@dataclass(frozen=True)
class LogDirEventNotification:
    """/log_dir_event_notification children changed: a broker's log dir failed
    (controller/log_dir_events.py)."""


@dataclass(frozen=True)
class LeaderAndIsrResponseReceived:
    """A broker answered a LeaderAndIsr (sent to it at ``broker_epoch``) with
    KAFKA_STORAGE_ERROR for some partitions, or while replicas of it are recorded
    offline: its per-partition errors."""
    broker_id: int
    broker_epoch: int
    errors: tuple[tuple[TopicPartition, int], ...]


@dataclass(frozen=True)
class UncleanLeaderElectionEnable:
    """The broker default unclean.leader.election.enable was turned on at run time
    (a dynamic broker config; Kafka's UncleanLeaderElectionEnable): the offline
    partitions get an election now, not at the next broker change."""


Event = (Startup | ControllerChange | BrokerChange | BrokerModification | TopicChange | PartitionModifications
         | TopicDeletion | StopReplicaResult | ControlledShutdown | SessionExpired
         | SessionRenewed | AlterPartitionReceived | ElectLeaders | AutoLeaderRebalance
         | ApiPartitionReassignment | ListPartitionReassignments | ZkPartitionReassignment
         | LogDirEventNotification | LeaderAndIsrResponseReceived
         | UncleanLeaderElectionEnable)
