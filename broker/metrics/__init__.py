"""Prometheus metrics: a registry, the text exposition format 0.0.4 and an HTTP
endpoint (``GET /metrics``) on the broker's event loop, enabled by the broker key
``prometheus.listener=HOST:PORT`` (off when unset). The families carry the names
the common JMX-exporter rules give Kafka's MBeans (and kafka-exporter's for
consumer-group lag), so Kafka dashboards and alerts work; config/grafana/ has one.

Map:

    registry.py        counters, gauges (set, or computed at scrape time), histograms
                       with fixed buckets, labels; collectors that build families at
                       scrape time
    exposition.py      families -> Prometheus text 0.0.4 (HELP/TYPE, escaping,
                       histogram _bucket/_sum/_count with le="+Inf"); sans-I/O
    http_endpoint.py   the asyncio HTTP server: GET /metrics, 404/405/400/431, never
                       raises into the broker; prometheus.listener parsing
    topic_stats.py     per-topic produce/fetch counters (BrokerTopicMetrics), plain ints
                       on the hot path
    request_timing.py  per-API request stages (RequestMetrics); remote time is what the
                       purgatory (coordinator/runtime/purgatory.py) adds to the
                       request's RequestClock
    loop_busy.py       event-loop utilisation (NetworkProcessorAvgIdlePercent)
    kafka_families.py  the collectors: Kafka's families from the broker's state
    group_metrics.py   the group coordinator's families for classic and KIP-848 consumer
                       groups (group-count by protocol, consumer-group-count by state,
                       rebalance count/rate, NumGroups*) and where each kind's
                       committed offsets are (for the lag families)
    remote_offsets.py  the leaders' high watermarks of partitions led elsewhere, asked
                       before each scrape, for consumer-group lag
    broker_metrics.py  BrokerMetrics: hooks into the broker, collectors, the endpoint
    host.py            MetricsHost: what of the Broker the collectors read (a Protocol)

This package's __init__ imports nothing: importing one collector must not pull in
the rest.

Instrumented elsewhere (small blocks, each saying "metrics"): the connection
(request timing), the purgatory (remote time, NumDelayedOperations), the leader
appends and the Fetch handler (topic counters), the replica manager (ISR shrinks
and expands), the controller (ControllerStats, controller/stats.py), the ZooKeeper
client (latency hook, controller/kazoo_zk.py), storage (flush-time hook,
storage/log.py).
"""
