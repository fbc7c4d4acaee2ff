"""What a handler sees of the broker: the request, its connection, the services.

``BrokerServices`` and ``ConnectionInfo`` list exactly what handlers (and the
helpers they call: ``broker.handler_support``, ``broker.topic_creation``,
``coordinator.group.classic.coordinator_of``) use. ``broker.broker.Broker`` and
``broker.network.connection.Connection`` provide them; unit tests pass small fakes with
the same attributes. An attribute that may legitimately be absent is declared
``... | None`` rather than probed with ``getattr``.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from protocol.headers import RequestHeader

if TYPE_CHECKING:
    from broker.acl.authorizer import AclAuthorizer
    from broker.config import BrokerConfig
    from broker.dynamic_config.host import DynamicConfigHost
    from broker.replication.fetch_sessions import FetchSessionCache
    from broker.metrics.broker_metrics import BrokerMetrics
    from coordinator.group.classic import GroupCoordinator
    from broker.metadata_cache import MetadataCache
    from broker.producer_ids import ProducerIdManager
    from broker.quotas.client_quotas import ClientQuotas
    from broker.replication.alter_partition_manager import AlterPartitionRelay
    from broker.replication.partition_state import PartitionState
    from broker.replication.replica_manager import ReplicaManager
    from broker.security.sasl_server import SaslAuthenticator
    from broker.security.scram_credentials import ScramCredentialStore
    from coordinator.transaction import TransactionCoordinator
    from broker.why.broker_status import ZkSessionWatch
    from controller import ClusterStore, Controller
    from storage.log_manager import LogManager


class BrokerServices(Protocol):
    """The services of a broker process that handlers reach through ``ctx.broker``.

    ``logs``, ``replicas``, ``producer_ids``, ``group_coordinator`` and
    ``transaction_coordinator`` are built
    in ``Broker.start()`` before any listener opens, so a request always sees
    them (``Broker`` declares them Optional only for the time before that). The
    controller starts after the listeners: it may be None, and ``authorizer`` is
    None unless ``authorizer.class.name`` is set.
    """

    broker_id: int
    config: BrokerConfig
    metadata: MetadataCache           # what the controller's UpdateMetadata said
    cluster: ClusterStore             # ZooKeeper: topics, configs, cluster id
    cluster_id: str                   # /cluster/id, read once at start-up
    fetch_sessions: FetchSessionCache   # the Fetch handler's KIP-227 sessions
    authorizer: AclAuthorizer | None
    controller: Controller | None
    group_coordinator: GroupCoordinator | None
    transaction_coordinator: TransactionCoordinator | None
    scram_credentials: ScramCredentialStore   # SCRAM logins and the credential admin APIs
    quotas: ClientQuotas | None       # client quotas (broker/quotas/); None: not enforced
    metrics: BrokerMetrics | None     # broker/metrics/; None: prometheus.listener not set
    zk_session: ZkSessionWatch        # the ZooKeeper session's state and this run's uptime
    # a leader's AlterPartition forwarded to the controller (None: answered NOT_CONTROLLER)
    alter_partition_relay: AlterPartitionRelay | None

    @property
    def logs(self) -> LogManager: ...

    @property
    def replicas(self) -> ReplicaManager: ...

    @property
    def producer_ids(self) -> ProducerIdManager: ...

    @property
    def dynamic_config_host(self) -> DynamicConfigHost: ...   # the broker as the dynamic
    #   configs see it (broker/dynamic_config/): DescribeConfigs / AlterConfigs of BROKER

    def ensure_topic_configs(self, topics: set[str]) -> Awaitable[None]: ...

    def on_leader_and_isr(self, states: list[PartitionState], errors: dict[Any, int]) -> None: ...

    def on_stop_replica(self, partitions: list[tuple[str, int]]) -> None: ...


class ConnectionInfo(Protocol):
    """What handlers know of the client connection; they never write to it (a
    handler returns a ``dispatch.Outcome`` to ask for no response or a close)."""

    peer: str                                      # "host:port", for logs
    client_software: tuple[str, str] | None        # ApiVersions v3+: (name, version)
    listener: str                                  # the listener's name, e.g. PLAINTEXT
    principal: str | None                          # User:...; None until SASL completes
    sasl: SaslAuthenticator | None                 # on SASL listeners
    close_after_response: bool                     # set: close once the response is out

    def authentication_failed(self, message: str) -> None: ...

    def authenticated(self) -> None: ...


@dataclass
class RequestContext:
    header: RequestHeader
    connection: ConnectionInfo
    broker: BrokerServices
    # Produce: called once the records are appended, before the wait for acks; the
    # connection then reads its next request (see broker.network.connection)
    appended: Callable[[], None] | None = None
    # KIP-219 channel muting: set (ms) by the quota layer (broker/quotas/) when the
    # client is over a quota; the connection reads nothing more from this client
    # until that long after the response is written (broker/network/)
    throttle_ms: int = 0

    @property
    def version(self) -> int:
        return self.header.api_version
