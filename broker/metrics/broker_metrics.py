"""``BrokerMetrics``: a broker's metrics, wired to its services, and the endpoint
that serves them (started by ``Broker.start`` when ``prometheus.listener`` is set).

Start-up (``start``), after the replica manager, the coordinators and the
ZooKeeper session exist and before the listeners open:

1. hooks: ``ReplicaManager.topic_stats`` (produce/fetch counters), the ZooKeeper
   client's ``on_latency`` (controller/kazoo_zk.py), ``storage.log.flush_observer``
   (flush time; process-wide), the ZooKeeper session/connection listeners;
2. the loop-busy sampler (``loop_busy``);
3. the HTTP endpoint (``http_endpoint``); one that cannot bind is logged and
   skipped (the broker runs on).

The connection (broker/network/connection.py) finds ``broker.metrics.requests`` and
times each request. Every other family is a collector over the broker's state
(``kafka_families``). ``scrape()`` collects on the event loop (the state it
reads is the loop's) and renders the text in a worker thread (``asyncio.to_thread``):
rendering 10,000 partitions' lines would otherwise hold the loop for tens of ms.
"""

from __future__ import annotations

import asyncio
import logging
import time

from broker.metrics import group_metrics
from broker.metrics import kafka_families as kf
from broker.metrics.exposition import render
from broker.metrics.host import MetricsHost
from broker.metrics.http_endpoint import MetricsEndpoint, parse_listener
from broker.metrics.loop_busy import LoopBusy
from broker.metrics.registry import COUNTER, GAUGE, MetricFamily, Registry
from broker.metrics.remote_offsets import RemoteHighWatermarks
from broker.metrics.request_timing import LATENCY_BUCKETS_MS, RequestMetrics
from broker.metrics.topic_stats import BrokerTopicStats

log = logging.getLogger(__name__)

LISTENER_KEY = "prometheus.listener"
ZK_STATES = ("CONNECTED", "SUSPENDED", "EXPIRED", "CLOSED")


class BrokerMetrics:
    def __init__(self, broker: MetricsHost, host: str, port: int) -> None:
        self.broker = broker
        self.registry = Registry()
        self.topic_stats = BrokerTopicStats()
        self.requests = RequestMetrics()
        self.loop_busy = LoopBusy()
        self.zk_latency = self.registry.histogram(
            "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms",
            "ZooKeeper request latency in ms (ZooKeeperRequestLatencyMs)",
            buckets=LATENCY_BUCKETS_MS, thread_safe=True)
        self.flush_time = self.registry.histogram(
            "kafka_log_logflushstats_logflushrateandtimems",
            "Log flushes (fsync) and their time in ms (LogFlushRateAndTimeMs)",
            buckets=LATENCY_BUCKETS_MS, thread_safe=True)
        self.zk_expires = self.registry.counter(
            "kafka_server_sessionexpirelistener_zookeeperexpires",
            "ZooKeeper session expirations (ZooKeeperExpiresPerSec)")
        self.zk_disconnects = self.registry.counter(
            "kafka_server_sessionexpirelistener_zookeeperdisconnects",
            "ZooKeeper disconnections (ZooKeeperDisconnectsPerSec)")
        self.zk_state = "CONNECTED"
        self.remote_hw = RemoteHighWatermarks()     # group lag: HWs of partitions led elsewhere
        for collector in (self._topics, self._requests, self._partitions, self._purgatories,
                          self._controller, self._groups, self._group_coordinator,
                          self._network, self._zk_state):
            self.registry.add_collector(collector)
        self.endpoint = MetricsEndpoint(host, port, self.scrape)

    @classmethod
    def from_config(cls, broker: MetricsHost) -> BrokerMetrics | None:
        """None when ``prometheus.listener`` is not set (metrics off)."""
        value = broker.config.prometheus_listener
        if not value:
            return None
        host, port = parse_listener(LISTENER_KEY, value)
        return cls(broker, host, port)

    # -- life cycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Hooks, sampler and endpoint. A listener that cannot bind (port taken) is
        logged, naming the key and value, and the broker runs on without the
        endpoint: metrics never take the broker down."""
        self._install_hooks()
        self.loop_busy.start()
        try:
            await self.endpoint.start()
        except OSError as e:
            log.error("%s=%s:%d: cannot listen (%s); running without the metrics endpoint",
                      LISTENER_KEY, self.endpoint.host, self.endpoint.port, e)

    async def stop(self) -> None:
        self.loop_busy.stop()
        logs = self.broker.logs
        if logs is not None and logs.flush_observer == self._on_flush:
            logs.flush_observer = None
        zk = self.broker.cluster.zk
        if zk.on_latency == self._on_zk_latency:
            zk.on_latency = None
        await self.endpoint.stop()

    def _install_hooks(self) -> None:
        b = self.broker
        if b.replicas is not None:
            b.replicas.topic_stats = self.topic_stats
        b.cluster.zk.on_latency = self._on_zk_latency
        if b.logs is not None:
            b.logs.flush_observer = self._on_flush
        b.cluster.add_connection_listener(self._on_zk_connection)
        b.cluster.add_session_listener(self._on_zk_session)

    def _on_zk_latency(self, seconds: float) -> None:
        self.zk_latency.observe(seconds * 1000.0)

    def _on_flush(self, seconds: float) -> None:
        self.flush_time.observe(seconds * 1000.0)

    def _on_zk_connection(self, what: str) -> None:
        if what == "SUSPENDED":
            self.zk_state = "SUSPENDED"
            self.zk_disconnects.inc()
        else:
            self.zk_state = "CONNECTED"

    def _on_zk_session(self, what: str) -> None:
        if what == "LOST":
            self.zk_state = "EXPIRED"
            self.zk_expires.inc()
        else:
            self.zk_state = "CONNECTED"

    # -- scraping ------------------------------------------------------------------------

    def collect(self) -> list[MetricFamily]:
        return self.registry.collect()

    async def scrape(self) -> str:
        try:        # group lag of partitions led elsewhere: their leaders' HWs first
            await self.remote_hw.refresh(self.broker)
        except Exception as e:               # bounded; lag samples go missing, no more
            log.debug("group lag: refreshing remote high watermarks failed: %s", e)
        families = self.collect()
        return await asyncio.to_thread(render, families)

    def _topics(self) -> list[MetricFamily]:
        return kf.topic_families(self.topic_stats)

    def _requests(self) -> list[MetricFamily]:
        return kf.request_families(self.requests)

    def _partitions(self) -> list[MetricFamily]:
        return kf.partition_families(self.broker)

    def _purgatories(self) -> list[MetricFamily]:
        return kf.purgatory_families(self.broker)

    def _controller(self) -> list[MetricFamily]:
        return kf.controller_families(self.broker)

    def _groups(self) -> list[MetricFamily]:
        return kf.group_families(self.broker, self.remote_hw.get)

    def _group_coordinator(self) -> list[MetricFamily]:
        return group_metrics.group_coordinator_families(self.broker, int(time.time() * 1000))

    def _network(self) -> list[MetricFamily]:
        return kf.network_families(self.broker, self.loop_busy.idle_fraction())

    def _zk_state(self) -> list[MetricFamily]:
        state = "CLOSED" if self.broker.cluster.closed else self.zk_state
        fam = MetricFamily("kafka_server_sessionexpirelistener_sessionstate", GAUGE,
                           "1 for the current ZooKeeper session state (SessionState)")
        for s in ZK_STATES:
            fam.add(1 if s == state else 0, (("state", s),))
        return [fam]


__all__ = ["BrokerMetrics", "COUNTER", "LISTENER_KEY"]
