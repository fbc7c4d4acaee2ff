"""Stand-ins for the Broker as the dynamic-config room sees it
(broker.dynamic_config.host.DynamicConfigHost): ``FakeHost`` declares every member of
the Protocol, built from a BrokerConfig as Broker.__init__ builds them; the components
Broker.start makes (logs, replicas, controller, cleaner) are None until a test sets one.
``FakeZk`` is ZooKeeper in memory (the ClusterStore calls the room makes)."""

from __future__ import annotations

import asyncio
import socket
from types import SimpleNamespace
from collections.abc import Callable
from typing import Any

from broker import topic_config
from broker.config import BrokerConfig
from broker.listeners import Endpoint, parse_listeners
from broker.network.limits import NetworkLimits
from broker.replication.throttle import ReplicationQuota
from broker.security.listeners import (ListenerSecurity, control_plane_listener,
                                       inter_broker_listener, listener_security)
from storage.config import LogConfig


class FakeZk:
    """The znodes as a dict; change notifications and registrations recorded."""

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[bytes, int]] = {}
        self.changes: list[bytes] = []
        self.registrations: list[list[str]] = []     # endpoints of each rewrite, as strings

    async def get_data(self, path: str) -> tuple[bytes, int] | None:
        return self.nodes.get(path)

    async def set_data(self, path: str, data: bytes, version: int) -> int | None:
        self.nodes[path] = (data, version + 1)
        return version + 1

    async def create(self, path: str, data: bytes) -> bool:
        self.nodes[path] = (data, 0)
        return True

    async def create_sequential(self, prefix: str, data: bytes) -> None:
        self.changes.append(data)

    async def update_broker_registration(self, broker_id: int, endpoints: Any,
                                         rack: str | None = None) -> None:
        self.registrations.append([e.connection_string() for e in endpoints])

    def watch_config_entity_changes(self, fn: Callable[[str], None]) -> Callable[[], None]:
        return lambda: None


class FakeLogs:
    """A LogManager's partition logs (iterated as ((topic, partition), log)) and default."""

    def __init__(self, logs: dict[tuple[str, int], Any]) -> None:
        self.logs = logs
        self.config = LogConfig()

    def __iter__(self) -> Any:
        return iter(self.logs.items())


class FakeController:
    """What refresh pushes to the controller: unclean.leader.election.enable."""

    def __init__(self) -> None:
        self.unclean = False

    def set_unclean_leader_election(self, enabled: bool) -> None:
        self.unclean = enabled


class FakeHost:
    """Every DynamicConfigHost member, as Broker.__init__ sets it from ``config``."""

    def __init__(self, config: BrokerConfig | None = None) -> None:
        config = config or BrokerConfig(broker_id=0)
        self.config = config
        self.static_config = config
        self.broker_id = config.broker_id
        self.cluster: Any = FakeZk()
        self.dynamic_configs: dict[str, str] = {}
        self.dynamic_default_configs: dict[str, str] = {}
        self.replication_quotas: dict[str, ReplicationQuota] = {}
        self.topic_overrides: dict[str, dict[str, str]] = {}
        self.listeners = parse_listeners("listeners", config.listeners)
        self.advertised = [Endpoint(e.name, e.host or socket.getfqdn(), e.port)
                           for e in self.listeners]
        self.listener_security: dict[str, ListenerSecurity] = {
            e.name: listener_security(config, e.name) for e in self.listeners}
        self.inter_broker_listener = inter_broker_listener(config, self.advertised)
        self.control_plane_listener = control_plane_listener(config, self.advertised,
                                                             self.inter_broker_listener)
        self.static_listener_overrides = dict(config.listener_overrides)
        self.servers: list[Any] = []
        self.network_limits = NetworkLimits.from_config(config)
        self.logs: Any = None
        self.replicas: Any = None
        self.controller: Any = None
        self.cleaner: Any = None
        self.background: set[asyncio.Future[None]] = set()

    def default_log_config(self) -> LogConfig:
        return topic_config.log_config(self.config)

    def spawn(self, coro: Any) -> None:
        self.background.add(task := asyncio.ensure_future(coro))
        task.add_done_callback(self.background.discard)

    def log_config_for(self, topic: str) -> LogConfig:
        return topic_config.log_config(self.config, self.topic_overrides.get(topic))

    def open_listener(self, endpoint: Endpoint, security: ListenerSecurity) -> Any:
        from broker.server import KafkaServer
        return KafkaServer(self, endpoint, security, self.network_limits)


class FakeBroker(FakeHost):
    """A broker with two partition logs (one topic with its own retention.ms) and a
    controller: what refresh pushes the effective config to."""

    def __init__(self) -> None:
        super().__init__(BrokerConfig(broker_id=0))
        self.topic_overrides = {"own": {"retention.ms": "42"}}
        self.logs = FakeLogs({("plain", 0): SimpleNamespace(config=LogConfig()),
                              ("own", 0): SimpleNamespace(config=LogConfig())})
        self.controller = FakeController()
