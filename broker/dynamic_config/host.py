"""What of the Broker the dynamic-config room uses (this package,
broker/dynamic_broker_configs.py and broker/security/reconfigure.py), typed.

``broker.broker.Broker`` provides it; unit tests pass small fakes with the same
attributes. Plain attributes are the ones the room assigns; what it only reads is a
read-only property, so an implementation may hold a narrower type (e.g. ``LogManager``
where the Broker holds ``LogManager | None``). The components built in
``Broker.start`` (logs, replicas, controller, cleaner) are None before that, and each
use checks.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from broker.config import BrokerConfig
    from broker.listeners import Endpoint
    from broker.network.limits import NetworkLimits
    from broker.replication.replica_manager import ReplicaManager
    from broker.replication.throttle import ReplicationQuota
    from broker.security.listeners import ListenerSecurity
    from controller import ClusterStore, Controller
    from storage.cleaner import LogCleaner
    from storage.config import LogConfig
    from storage.log_manager import LogManager


class ServedListener(Protocol):
    """A listener open on this broker (``broker.server.KafkaServer``) as the room
    handles it: it opens and closes listeners (listeners.py) and hands a running one
    reloaded TLS stores (broker/security/reconfigure.py)."""

    endpoint: Endpoint
    security: ListenerSecurity             # read for each new connection

    @property
    def port(self) -> int: ...             # the bound port (an endpoint's port 0: the one taken)

    def serves_current_task(self) -> bool: ...   # the caller runs on one of its connections

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class DynamicConfigHost(Protocol):
    """The broker as the dynamic configs see it: the layers, the components they are
    pushed to, the listeners they open and close, and ZooKeeper where they are kept."""

    # ---- the layers (broker/dynamic_config/layers.py) and their result
    config: BrokerConfig                      # the effective config every reader uses
    dynamic_configs: dict[str, str]           # /config/brokers/<id>, raw strings
    dynamic_default_configs: dict[str, str]   # /config/brokers/<default>, raw strings
    # leader and follower quotas (rates.py); empty until Broker.start installs them
    replication_quotas: dict[str, ReplicationQuota]
    # ---- the listeners (listeners.py; TLS stores: broker/security/reconfigure.py)
    listeners: list[Endpoint]                 # as configured
    advertised: list[Endpoint]                # as registered in /brokers/ids/<id>
    listener_security: dict[str, ListenerSecurity]

    @property
    def broker_id(self) -> int: ...

    @property
    def static_config(self) -> BrokerConfig: ...     # what server.properties made

    @property
    def static_listener_overrides(self) -> dict[str, str]: ...   # a deleted TLS key's

    @property
    def cluster(self) -> ClusterStore: ...

    @property
    def topic_overrides(self) -> dict[str, dict[str, str]]: ...

    @property
    def inter_broker_listener(self) -> str: ...

    @property
    def control_plane_listener(self) -> str: ...

    @property
    def servers(self) -> list[ServedListener]: ...   # empty until start-up opens them

    @property
    def network_limits(self) -> NetworkLimits: ...

    @property
    def logs(self) -> LogManager | None: ...

    @property
    def replicas(self) -> ReplicaManager | None: ...

    @property
    def controller(self) -> Controller | None: ...

    @property
    def cleaner(self) -> LogCleaner | None: ...

    def default_log_config(self) -> LogConfig: ...

    def log_config_for(self, topic: str) -> LogConfig: ...

    def spawn(self, coro: Awaitable[None]) -> None: ...   # a background task the broker owns

    def open_listener(self, endpoint: Endpoint, security: ListenerSecurity) -> ServedListener:
        """A listener for ``endpoint``, not started (its ``start`` binds the socket)."""
        ...
