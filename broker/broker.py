"""The Broker: one object holding a broker process's services.

Start-up, in order (as Kafka's KafkaServer.startup):

1. connect to ZooKeeper; read or create the cluster id;
2. settle the broker id: ``broker.id``, else the one kept in meta.properties,
   else a new one from /brokers/seqid;
3. load the logs (LogManager.startup: recovery after a crash, none after a
   clean shutdown) and the topic configs they need; a log dir that cannot be
   used is offline from the start (KIP-112, broker/log_dirs/), none usable is
   fatal (BrokerFatalError, exit code 1);
4. build the metadata cache, replica manager and producer-id allocator;
5. open the listeners, then register in /brokers/ids (clients and the
   controller can reach us as soon as we are visible); after a kill -9 the dead
   session's registration, naming the endpoints we have just bound, is replaced
   at once (the controller sees a restarted broker) unless that session was the
   controller's; otherwise, or naming other endpoints, it is waited out until
   ZooKeeper expires it, and a stop signal meanwhile ends start-up there
   (StartupStopped);
6. start the controller (it campaigns for /controller) and the periodic work.

Shutdown reverses it after a controlled shutdown (the controller moves our
leaderships away first), and ends with LogManager.shutdown, which flushes,
checkpoints and writes the clean-shutdown marker.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from broker import topic_config
from broker.coordination import groups, transactions
from coordinator.group.classic import GroupCoordinator
from coordinator.runtime.runtime import PartitionOwner
from coordinator.transaction import TransactionCoordinator
from protocol.topic_names import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from broker.acl.authorizer import AclAuthorizer, build_authorizer
from broker.broker_id import settle_broker_id
from client import BrokerPool
from client.inter_broker import controlled_shutdown
from broker.config import BrokerConfig
from broker.replication.fetch_sessions import FetchSessionCache
from broker.listeners import Endpoint, parse_listeners
from broker.metrics.broker_metrics import BrokerMetrics
from broker.log_dirs import LogDirFailureChannel, LogDirFailureHandler
from broker.log_maintenance import FLUSH_CHECK_INTERVAL_S, HW_CHECKPOINT_INTERVAL_S, \
    LogMaintenance
from broker.metadata_cache import MetadataCache
from broker.producer_ids import ProducerIdManager
from broker.quotas.client_quotas import ClientQuotas
from broker.replication.alter_partition_manager import RELAY_CLIENT_ID, \
    AlterPartitionManager, AlterPartitionRelay, metadata_controller, metadata_relays
from broker.replication.fetcher import ReplicaFetcherManager
from broker.replication.leader_endpoint import metadata_resolver, remote_endpoint_factory
from broker.replication.partition_state import PartitionState
from broker.replication.replica_manager import ReplicaManager
from broker.replication.throttle import ReplicationQuota
from broker.security.scram_credentials import ScramCredentialStore
from broker.security import reconfigure
from broker import dynamic_broker_configs
from broker.security.listeners import (client_security, control_plane_listener,
                                       inter_broker_listener, listener_security, protocol_of)
from broker.server import KafkaServer
from broker.network.limits import NetworkLimits
from broker.tasks import bounded_step
from broker.why.broker_status import ZkSessionWatch
from controller import ClusterStore, Controller
from controller import Endpoint as ZkEndpoint
from protocol.errors import ErrorCode
from storage.cleaner import LogCleaner
from storage.config import LogConfig
from storage.log_manager import LogManager, NoLiveLogDirError

if TYPE_CHECKING:
    from broker.context import BrokerServices
    from broker.dynamic_config.host import DynamicConfigHost, ServedListener
    from broker.security.listeners import ListenerSecurity

log = logging.getLogger("pybroker")

PRODUCER_EXPIRY_CHECK_INTERVAL_S = 600.0  # producer.id.expiration.check.interval.ms
CONTROLLED_SHUTDOWN_RETRIES = 3       # controlled.shutdown.max.retries
SHUTDOWN_STEP_TIMEOUT_S = 15.0        # per component, see Broker._shutdown_step


class StartupStopped(Exception):
    """A stop signal came before start-up registered the broker in ZooKeeper (it
    was waiting for another session's registration of our id to expire): shut down."""


class BrokerFatalError(Exception):
    """The broker cannot go on (no usable log dir): shut down, exit code 1."""


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.listeners = parse_listeners("listeners", config.listeners)
        advertised = config.advertised_listeners or config.listeners
        self.advertised = [
            Endpoint(e.name, e.host or socket.getfqdn(), e.port)
            for e in parse_listeners("advertised.listeners", advertised)]
        # security per listener, built (and so checked) before anything starts
        self.listener_security = {e.name: listener_security(config, e.name)
                                  for e in self.listeners}
        self.inter_broker_listener = inter_broker_listener(config, self.advertised)
        self.control_plane_listener = control_plane_listener(config, self.advertised,
                                                             self.inter_broker_listener)
        self.inter_broker_security = client_security(config, self.inter_broker_listener)
        # dynamic configs (/config/brokers/<id>: TLS stores, broker/security/reconfigure.py)
        # over the static listener.name.* keys they may shadow
        self.static_listener_overrides = dict(config.listener_overrides)
        self.dynamic_configs: dict[str, str] = {}
        # the layers under the effective ``config`` (broker/dynamic_config/): what
        # server.properties made, and the cluster default entry /config/brokers/<default>
        self.static_config = config
        self.dynamic_default_configs: dict[str, str] = {}
        # leader/follower replication throttles: empty until start() installs them
        self.replication_quotas: dict[str, ReplicationQuota] = {}
        self.broker_id = config.broker_id
        self.cluster_id = ""
        self.fetch_sessions = FetchSessionCache()   # the Fetch handler's (KIP-227)
        self.cluster = ClusterStore(config.zookeeper_connect, config.zookeeper_session_timeout_ms,
                                    config.zk_connection_timeout_ms)
        # BrokerMeta.host/port: the inter-broker endpoint; clients get their own
        # listener's (MetadataCache.address)
        self.metadata = MetadataCache(listener=self.inter_broker_listener)
        self.authorizer: AclAuthorizer | None = build_authorizer(config, self.cluster)
        self.scram_credentials = ScramCredentialStore(self.cluster)
        # ---- client quotas (broker/quotas/, issue 17)
        self.quotas: ClientQuotas | None = ClientQuotas(config, self.cluster)
        self.topic_overrides: dict[str, dict[str, str]] = {}
        self._log_configs = topic_config.LogConfigs()    # log_config_for's memo
        self.logs: LogManager | None = None
        # failed log dirs (broker/log_dirs/): the LogManager reports, one task handles
        self.log_dir_failures = LogDirFailureChannel()
        self.exit_code = 0                  # what the process exits with (halt sets 1)
        self._stop: asyncio.Event | None = None
        self.replicas: ReplicaManager | None = None
        self.producer_ids: ProducerIdManager | None = None
        self.controller: Controller | None = None
        # checkpoints, retention, flushes, the cleaner (broker/log_maintenance.py): start()
        self.maintenance: LogMaintenance | None = None
        self.group_coordinator: GroupCoordinator | None = None
        self.transaction_coordinator: TransactionCoordinator | None = None
        self.pool = BrokerPool(client_id="pybroker-controller",
                               timeout=config.request_timeout_ms / 1000,
                               security=self.inter_broker_security)
        # The controller's requests (LeaderAndIsr, UpdateMetadata, StopReplica) get
        # connections of their own, as Kafka's ControllerChannelManager: a broker answers
        # one connection's requests in order, and a WriteTxnMarkers waiting for the HW
        # on a shared connection held the LeaderAndIsr the HW needed behind it (a
        # deadlock seen in test_txn_failover when a broker became controller).
        self.controller_pool = BrokerPool(
            client_id="pybroker-controller", timeout=config.request_timeout_ms / 1000,
            security=(client_security(config, self.control_plane_listener)
                      if self.control_plane_listener != self.inter_broker_listener
                      else self.inter_broker_security))
        # The transaction markers too (Kafka's TransactionMarkerChannelManager has its own
        # NetworkClient): a WriteTxnMarkers the leader holds until its HW moves must not
        # queue an AlterPartition or a KIP-890 verification behind it.
        self.marker_pool = BrokerPool(client_id="pybroker-txn-markers",
                                      timeout=config.request_timeout_ms / 1000,
                                      security=self.inter_broker_security)
        # AlterPartition forwarded for a leader that cannot reach the controller: its own
        # connections, whose client id tells the controller side not to forward again
        self.relay_pool = BrokerPool(client_id=RELAY_CLIENT_ID,
                                     timeout=config.request_timeout_ms / 1000,
                                     security=self.inter_broker_security)
        self.alter_partition_relay = AlterPartitionRelay(
            self.broker_id, self.relay_pool, metadata_controller(self.metadata),
            lambda: self.metadata.controller_id)
        self.servers: list[ServedListener] = []
        # what every listener shares: connection quotas, request queue and memory
        self.network_limits = NetworkLimits.from_config(config)
        # ---- Prometheus metrics (broker/metrics/): None unless prometheus.listener is set
        self.metrics: BrokerMetrics | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._cancel_watches: list[Callable[[], None]] = []
        # broker/why: ZooKeeper session state and uptime for DescribeWhy's BrokerStatus
        self.zk_session = ZkSessionWatch()

    @property
    def broker_epoch(self) -> int:
        """The czxid of our /brokers/ids/<id> znode. It changes when ZooKeeper
        expires our session and ClusterStore re-registers us, so it is read from
        the store each time (AlterPartition and ControlledShutdown carry it)."""
        return self.cluster.broker_epoch

    # -- start-up ------------------------------------------------------------------------

    async def start(self, stop: asyncio.Event | None = None) -> None:
        """Start everything (the module docstring's steps). ``stop`` is the
        process's stop signal: set before we are registered, start-up ends with
        StartupStopped and the caller shuts down what did start."""
        from broker.dispatch import load_handlers
        load_handlers()
        self._stop = stop
        await self.cluster.connect()
        self.zk_session.attach(self.cluster)
        self.cluster_id = await self.cluster.cluster_id()
        if self.authorizer is not None:
            await self.authorizer.start()
        self.broker_id = await settle_broker_id(
            self.config.broker_id, self.config.log_dir_list, self.cluster.allocate_broker_id)
        await self._load_dynamic_configs()
        await self._load_topic_overrides()
        # ---- client quotas (issue 17): loaded, and kept current from /config/changes,
        # before the listeners open
        if self.quotas is not None:
            self._cancel_watches.append(await self.quotas.start(self.cluster))
        self.logs = LogManager(self.config.log_dir_list, self.default_log_config(),
                               topic_config=self.log_config_for,
                               on_dir_failure=self.log_dir_failures.maybe_add_offline_log_dir)
        try:
            await asyncio.to_thread(self.logs.startup, self.broker_id, self.cluster_id)
        except NoLiveLogDirError as e:
            raise BrokerFatalError(f"Shutdown broker because none of the specified log dirs "
                                   f"can be used: {e}") from None
        for offline_dir, why in self.logs.offline_dirs.items():
            log.error("log dir %s is offline from the start (%s); serving the other dirs",
                      offline_dir, why)
        if all(self.logs.had_clean_shutdown.values()):
            log.info("recovery skipped: clean shutdown (%d logs loaded)", len(self.logs.logs))
        else:
            log.info("loaded %d logs after an unclean shutdown (recovered past the "
                     "recovery points)", len(self.logs.logs))
        timeout_s = self.config.request_timeout_ms / 1000
        self.replicas = ReplicaManager(
            self.broker_id, self.logs, min_insync_replicas=self.min_insync_replicas,
            producer_id_expiration_ms=self.config.producer_id_expiration_ms,
            fetchers=ReplicaFetcherManager(self.broker_id, remote_endpoint_factory(
                self.broker_id, metadata_resolver(self.metadata), timeout=timeout_s,
                security=self.inter_broker_security)),
            alter_partitions=AlterPartitionManager(
                self.broker_id, lambda: self.broker_epoch, self.pool,
                metadata_controller(self.metadata),
                relays=metadata_relays(self.metadata, self.broker_id)),
            replica_lag_time_max_ms=self.config.replica_lag_time_max_ms)
        # issue 17: replication quotas (rates from the dynamic configs loaded above)
        dynamic_broker_configs.install_replication_quotas(self)
        self._start_log_dir_failure_handling()
        self.producer_ids = ProducerIdManager(self.broker_id, self.cluster)
        # the leader fence follows our ZooKeeper connection and session
        self.replicas.fence.quiet_ms = max(1000, self.config.zookeeper_session_timeout_ms // 6)
        self.cluster.add_connection_listener(self._on_zk_connection)
        self.cluster.add_session_listener(self._on_zk_session)
        self.group_coordinator = groups.build(self)
        self.group_coordinator.start()
        self.transaction_coordinator = transactions.build(self)
        if self.config.transaction_partition_verification_enable:
            self.replicas.verifier = transactions.verifier(self)
        # ---- Prometheus metrics (broker/metrics/): hooks in, endpoint up, before clients
        self.metrics = BrokerMetrics.from_config(self)
        if self.metrics is not None:
            await self.metrics.start()
        for endpoint in self.listeners:
            server = self.open_listener(endpoint, self.listener_security[endpoint.name])
            await server.start()
            self.servers.append(server)
        bound = {s.endpoint.name: s.port for s in self.servers}   # port 0: the one taken
        self.advertised = [
            Endpoint(a.name, a.host, bound.get(a.name, a.port) if a.port == 0 else a.port)
            for a in self.advertised]
        await self._register(stop)
        self._cancel_watches.append(self.cluster.watch_config_changes(self._on_topic_config))
        # issue 18: /config/brokers/<id> and <default> changes, applied without a restart
        self._cancel_watches.append(dynamic_broker_configs.watch(self))
        self.controller = Controller(
            self.broker_id, self.cluster, self.controller_pool,
            listener=self.control_plane_listener,
            unclean_leader_election=self.config.unclean_leader_election_enable,
            request_timeout=timeout_s,
            auto_leader_rebalance=self.config.auto_leader_rebalance_enable,
            leader_imbalance_check_interval_s=self.config.leader_imbalance_check_interval_seconds,
            leader_imbalance_per_broker_percentage=(
                self.config.leader_imbalance_per_broker_percentage))
        await self.controller.start()
        self._every(self.config.replica_lag_time_max_ms / 2000, self.replicas.maybe_shrink_isr)
        self._every(self.replicas.fence.quiet_ms / 2000, self.replicas.sweep_fenced)
        upkeep = self.maintenance = LogMaintenance(
            self.logs, lambda: self.config, self.replicas.log_starts_moved)
        self._every(HW_CHECKPOINT_INTERVAL_S, upkeep.checkpoint_high_watermarks)
        self._every(self.config.log_flush_offset_checkpoint_interval_ms / 1000,
                    upkeep.checkpoint_recovery_points)
        self._every(self.config.log_retention_check_interval_ms / 1000, upkeep.retention)
        self._every(FLUSH_CHECK_INTERVAL_S, upkeep.flush)
        self._every(PRODUCER_EXPIRY_CHECK_INTERVAL_S, self._expire_producers)
        self._every(self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms
                    / 1000, self._abort_timed_out_transactions)
        self._every(self.config.transaction_remove_expired_transaction_cleanup_interval_ms
                    / 1000, self._expire_transactional_ids)
        if self.config.log_cleaner_enable:
            self._tasks.append(asyncio.create_task(upkeep.run_cleaner(), name="log-cleaner"))
        log.info("[KafkaServer id=%d] started (cluster %s)", self.broker_id, self.cluster_id)

    def _start_log_dir_failure_handling(self) -> None:
        """The consumer of the failure channel and the controller notifier
        (broker/log_dirs/); dirs offline since start-up are handled first."""
        assert self.logs is not None and self.replicas is not None
        handler = LogDirFailureHandler(
            self.logs, self.replicas,
            notify_controller=lambda: self.cluster.propagate_log_dir_event(self.broker_id),
            on_offline=self.on_stop_replica, halt=self.halt)
        self._tasks.append(asyncio.create_task(self.log_dir_failures.run(handler.handle),
                                               name="log-dir-failures"))
        self._tasks.append(asyncio.create_task(handler.run_notifier(),
                                               name="log-dir-event-notifier"))

    def halt(self, reason: str) -> None:
        """Fatal (every log dir failed, as Kafka's Exit.halt): log ``reason`` and stop
        the broker, exit code 1. Shutdown still deregisters the broker at once and
        asks the controller to move its leaderships."""
        log.error("%s", reason)
        self.exit_code = 1
        if self._stop is not None:
            self._stop.set()

    def _on_zk_connection(self, what: str) -> None:
        """ZooKeeper connection lost / back within the session: the leader fence
        (broker/replication/leader_fence.py) goes up / down."""
        if self.replicas is None:
            return
        if what == "SUSPENDED":
            self.replicas.fence.connection_lost()
        else:
            self.replicas.fence.connection_back()

    def _on_zk_session(self, what: str) -> None:
        """Session expired: the partitions we led wait for the controller's word;
        registered again on a new session: the broker-wide fence drops."""
        if self.replicas is None:
            return
        if what == "LOST":
            self.replicas.fence.session_expired(p.tp for p in self.replicas.leader_partitions())
        else:
            self.replicas.fence.connection_back()

    async def _register(self, stop: asyncio.Event | None) -> None:
        """Register in /brokers/ids. Right after a kill -9 our dead session still
        holds the znode: naming our endpoints, whose listeners this process has
        bound, it is ours and ClusterStore.register_broker replaces it at once
        (unless that session was the controller's); else it waits, up to the
        session timeout, for ZooKeeper to
        expire it; ``stop`` set meanwhile cancels that wait (StartupStopped). A
        different live broker with our id makes it raise NodeExistsError."""
        registering = asyncio.ensure_future(self.cluster.register_broker(
            self.broker_id, [ZkEndpoint(e.name, e.host, e.port, protocol_of(self.config, e.name))
                             for e in self.advertised],
            self.config.broker_rack, replace_own=True))
        if stop is None:
            await registering
            return
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait((registering, stopping), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            stopped = registering.cancel()     # False once registered (or failed)
        if stopped:
            await asyncio.wait((registering,))  # let it unwind (its watch cancelled)
            raise StartupStopped("stopped before registering in ZooKeeper")
        registering.result()

    async def _load_dynamic_configs(self) -> None:
        """Apply this broker's stored dynamic configs before the listeners open; a
        store that no longer loads is reported and the static one kept."""
        stored = await dynamic_broker_configs.load(self)   # TLS stores, throttle rates
        if not stored:
            return
        try:
            dynamic_broker_configs.apply(self, dict(stored), validate_only=False)
            self.dynamic_configs = stored
        except reconfigure.ReconfigureError as e:
            log.error("dynamic broker configs in /config/brokers/%d not applied: %s",
                      self.broker_id, e)

    # -- topic configs -------------------------------------------------------------------

    def default_log_config(self) -> LogConfig:
        return topic_config.log_config(self.config)

    def log_config_for(self, topic: str) -> LogConfig:
        return self._log_configs.get(self.config, topic, self.topic_overrides.get(topic))

    def min_insync_replicas(self, topic: str) -> int:
        raw = self.topic_overrides.get(topic, {}).get("min.insync.replicas")
        return int(raw) if raw is not None else self.config.min_insync_replicas

    async def ensure_topic_configs(self, topics: set[str]) -> None:
        """Read the overrides of topics we have not seen yet (before their logs
        are created: a new topic's creation configs apply from its first segment,
        as Kafka reads /config/topics/<t> when it creates a log)."""
        for topic in topics - self.topic_overrides.keys():
            self.topic_overrides[topic] = await self.cluster.topic_configs(topic)

    async def _load_topic_overrides(self) -> None:
        for topic in await self.cluster.topic_assignments():
            self.topic_overrides[topic] = await self.cluster.topic_configs(topic)

    def _on_topic_config(self, topic: str) -> None:
        """A /config/changes notification: reload the topic's overrides and apply
        them to its live logs."""
        async def reload() -> None:
            self.topic_overrides[topic] = await self.cluster.topic_configs(topic)
            if self.logs is None:
                return
            config = self.log_config_for(topic)
            for (t, _p), plog in self.logs:
                if t == topic:
                    plog.config = config
            log.info("applied config change for topic %s", topic)
        self.spawn(reload())

    # -- leadership changes (called by the LeaderAndIsr / StopReplica handlers) ------------

    def on_leader_and_isr(self, states: list[PartitionState], errors: dict[Any, int]) -> None:
        """Route __consumer_offsets leadership to the group coordinator and
        __transaction_state leadership to the transaction coordinator."""
        for s in states:
            if errors.get(s.tp):
                continue
            owner = self._coordinator_of(s.topic)
            if owner is None:
                continue
            if s.leader == self.broker_id:
                owner.on_become_leader(s.partition, s.leader_epoch)
            else:
                owner.on_resign(s.partition, s.leader_epoch)

    def on_stop_replica(self, partitions: list[tuple[str, int]]) -> None:
        for topic, partition in partitions:
            owner = self._coordinator_of(topic)
            if owner is not None:
                owner.on_resign(partition, None)

    def _coordinator_of(self, topic: str) -> PartitionOwner | None:
        """The coordinator whose state lives in ``topic`` (None for other topics)."""
        if topic == GROUP_METADATA_TOPIC:
            return self.group_coordinator.ownership if self.group_coordinator else None
        if topic == TRANSACTION_STATE_TOPIC and self.transaction_coordinator:
            return self.transaction_coordinator.state
        return None

    # -- periodic work -------------------------------------------------------------------

    def _every(self, seconds: float, fn: Callable[[], Any]) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(seconds)
                try:
                    result = fn()
                    if isinstance(result, Awaitable):
                        await result
                except Exception:
                    log.exception("periodic task %s failed", fn.__name__)
        self._tasks.append(asyncio.create_task(loop(), name=fn.__name__))

    def spawn(self, coro: Awaitable[None]) -> None:
        """Run ``coro`` in the background: a failure is logged, shutdown cancels it,
        and once done it is forgotten."""
        async def guarded() -> None:
            try:
                await coro
            except Exception:
                log.exception("background task failed")
        task = asyncio.create_task(guarded())
        self._tasks.append(task)
        task.add_done_callback(self._forget)

    def open_listener(self, endpoint: Endpoint, security: ListenerSecurity) -> ServedListener:
        """A listener on ``endpoint`` serving requests with this broker's services (not
        started; start() and dynamic listener configs open them)."""
        return KafkaServer(self.request_services(), endpoint, security, self.network_limits)

    def request_services(self) -> BrokerServices:
        """This broker as its request handlers see it (broker/context.py). The Broker
        declares the logs, the replica manager and the producer ids Optional for the time
        before start() builds them; handlers run only after that, which is checked here,
        where the Broker is handed out as BrokerServices."""
        if self.logs is None or self.replicas is None or self.producer_ids is None:
            raise RuntimeError("request handlers need a started broker: start() builds "
                               "the logs, the replica manager and the producer ids first")
        return cast("BrokerServices", self)

    @property
    def cleaner(self) -> LogCleaner | None:
        """The log cleaner, once started (log.cleaner.enable)."""
        return self.maintenance.cleaner if self.maintenance is not None else None

    @property
    def dynamic_config_host(self) -> DynamicConfigHost:
        """This broker as the dynamic configs see it (broker/dynamic_config/host.py)."""
        return self

    def _forget(self, task: asyncio.Task[None]) -> None:
        if task in self._tasks:
            self._tasks.remove(task)

    def _expire_producers(self) -> None:
        assert self.replicas is not None
        self.replicas.remove_expired_producers()

    async def _abort_timed_out_transactions(self) -> None:
        assert self.transaction_coordinator is not None
        await self.transaction_coordinator.abort_timed_out()

    async def _expire_transactional_ids(self) -> None:
        assert self.transaction_coordinator is not None
        await self.transaction_coordinator.expire_ids(self.config.transactional_id_expiration_ms)

    # -- shutdown ------------------------------------------------------------------------

    async def shutdown(self) -> None:
        log.info("[KafkaServer id=%d] shutting down", self.broker_id)
        if self.config.controlled_shutdown_enable and self.controller is not None:
            await self._controlled_shutdown()
        for cancel in self._cancel_watches:
            cancel()
        for task in self._tasks:
            task.cancel()
        await self._shutdown_step("background tasks",
                                  asyncio.gather(*self._tasks, return_exceptions=True))
        if self.replicas is not None:
            await self._shutdown_step("replica fetchers", self.replicas.stop_replication())
        if self.group_coordinator is not None:
            await self._shutdown_step("group coordinator", self.group_coordinator.shutdown())
        if self.transaction_coordinator is not None:
            await self._shutdown_step("transaction coordinator",
                                      self.transaction_coordinator.shutdown())
        if self.controller is not None:
            await self._shutdown_step("controller", self.controller.stop())
        if self.authorizer is not None:
            self.authorizer.close()
        await self._shutdown_step("ZooKeeper session", self.cluster.close())
        for server in self.servers:
            await self._shutdown_step("listener", server.stop())
        if self.metrics is not None:                  # ---- Prometheus metrics
            await self._shutdown_step("metrics endpoint", self.metrics.stop())
        await self._shutdown_step("broker connections", self.pool.close())
        await self._shutdown_step("transaction marker connections", self.marker_pool.close())
        await self._shutdown_step("AlterPartition relay connections", self.relay_pool.close())
        if self.controller_pool is not self.pool:
            await self._shutdown_step("controller connections", self.controller_pool.close())
        if self.replicas is not None:
            self.replicas.shutdown()
        if self.logs is not None:
            await asyncio.to_thread(self.logs.shutdown)
        log.info("[KafkaServer id=%d] shut down completed", self.broker_id)

    async def _shutdown_step(self, what: str, step: Awaitable[Any]) -> None:
        """One shutdown step, bounded: the flush, the checkpoints and the clean-shutdown
        marker still happen after a step that hangs (Kafka's shutdown swallows each
        component's failure the same way)."""
        await bounded_step(what, step, SHUTDOWN_STEP_TIMEOUT_S)

    async def _controlled_shutdown(self) -> None:
        """Ask the active controller to move our leaderships away (ControlledShutdown)."""
        # ZooKeeper may be down (a request to it waits for a connection for ever): as
        # Kafka's ZooKeeperClient, wait zookeeper.connection.timeout.ms at most
        zk_wait_s = self.config.zk_connection_timeout_ms / 1000.0
        for attempt in range(1, CONTROLLED_SHUTDOWN_RETRIES + 1):
            try:
                controller_id = await asyncio.wait_for(self.cluster.controller_id(), zk_wait_s)
            except asyncio.TimeoutError:
                log.warning("controlled shutdown: ZooKeeper did not answer within %.0f ms "
                            "(zookeeper.connection.timeout.ms); stopping without it",
                            zk_wait_s * 1000)
                return
            target = self.metadata.broker(controller_id) if controller_id is not None else None
            if target is None:
                log.info("controlled shutdown: no controller known; stopping anyway")
                return
            try:
                conn = await self.pool.get(target.host, target.port)
                error, remaining = await controlled_shutdown(conn, self.broker_id,
                                                             self.broker_epoch)
            except (ConnectionError, OSError) as e:
                log.warning("controlled shutdown attempt %d failed: %s", attempt, e)
                await asyncio.sleep(0.5)
                continue
            if error == ErrorCode.NONE and not remaining:
                log.info("controlled shutdown succeeded")
                return
            log.info("controlled shutdown attempt %d: error %d, %d partitions remaining",
                     attempt, error, len(remaining))
            await asyncio.sleep(0.5)
        log.warning("controlled shutdown did not complete; proceeding with a clean shutdown")

