"""What the metrics read of the broker (``broker.broker.Broker``), typed: ``MetricsHost``
is handed to ``BrokerMetrics`` and, through it, to the collectors (kafka_families,
group_metrics) and the remote high watermarks (remote_offsets). A leaf module, so the
collectors name the broker's services without importing the modules that use them.

The attributes that are None before ``Broker.start`` (or without a controller) are
declared ``... | None`` and checked where they are read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from broker.config import BrokerConfig
    from broker.listeners import Endpoint
    from broker.metadata_cache import MetadataCache
    from broker.network.limits import NetworkLimits
    from broker.replication.replica_manager import ReplicaManager
    from client import BrokerPool
    from controller import ClusterStore, Controller
    from coordinator.group.classic import GroupCoordinator
    from storage.log_manager import LogManager


class ListenerServer(Protocol):
    """One listener's server (``broker.server.KafkaServer``): its endpoint's name labels
    the connection-count family."""

    @property
    def endpoint(self) -> Endpoint: ...


class MetricsHost(Protocol):
    """What the metrics read of the broker themselves (``broker.broker.Broker``); the
    family builders (kafka_families, group_metrics) and the remote high watermarks
    (remote_offsets) are handed the same object."""

    config: BrokerConfig
    cluster: ClusterStore
    replicas: ReplicaManager | None
    broker_id: int
    metadata: MetadataCache                  # leaders of the partitions led elsewhere
    pool: BrokerPool                         # ListOffsets to those leaders (group lag)
    group_coordinator: GroupCoordinator | None
    controller: Controller | None            # None until it starts (after the listeners)
    logs: LogManager | None                  # flush times (LogFlushRateAndTimeMs)

    @property
    def network_limits(self) -> NetworkLimits | None: ...

    @property
    def servers(self) -> Sequence[ListenerServer]: ...
