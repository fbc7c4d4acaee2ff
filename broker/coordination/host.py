"""What of the Broker the coordinator adapters use, typed: ``GroupHost`` for the
group coordinator (the handlers' ``BrokerServices`` satisfies it too: they call
``coordinator_of``), ``TransactionHost`` for the transaction coordinator. The
attributes that are None before ``Broker.start`` are checked where they are used."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from broker.config import BrokerConfig
    from broker.metadata_cache import MetadataCache
    from broker.producer_ids import ProducerIdManager
    from broker.replication.replica_manager import ReplicaManager
    from client import BrokerPool
    from coordinator.group.classic import GroupCoordinator
    from coordinator.transaction import TransactionCoordinator
    from storage.log_manager import LogManager


class GroupHost(Protocol):
    broker_id: int
    config: BrokerConfig
    metadata: MetadataCache
    group_coordinator: GroupCoordinator | None

    @property
    def logs(self) -> LogManager | None: ...

    @property
    def replicas(self) -> ReplicaManager | None: ...


class TransactionHost(GroupHost, Protocol):
    transaction_coordinator: TransactionCoordinator | None
    pool: BrokerPool               # inter-broker requests (verification)
    marker_pool: BrokerPool        # WriteTxnMarkers, connections of their own

    @property
    def producer_ids(self) -> ProducerIdManager | None: ...
