"""The broker's metric families under the names the common JMX-exporter rules give
Kafka's MBeans (prometheus/jmx_exporter ``example_configs/kafka-2_0_0.yml``,
``lowercaseOutputName: true``), and the consumer-group families as kafka-exporter
names them. Each function here is a collector: it reads the broker's state when
Prometheus scrapes and returns families; nothing runs between scrapes.

How the JMX rules name things (so dashboards written for Kafka work):

* ``kafka.<domain>:type=<T>,name=<N>PerSec[,k=v]`` (a meter's Count) ->
  ``kafka_<domain>_<t>_<n>_total{k="v"}`` (counter);
* ``kafka.<domain>:type=<T>,name=<N>[,k=v]`` (a gauge's Value) ->
  ``kafka_<domain>_<t>_<n>{k="v"}``;
* a timer/histogram ``name=<N>`` -> ``kafka_<domain>_<t>_<n>_count`` plus quantile
  gauges. Here such metrics are real Prometheus histograms under the same family
  name (``_bucket``/``_sum``/``_count``: the JMX ``_count`` series keeps its name;
  quantiles come from ``histogram_quantile`` instead of ``{quantile=...}``).

Ours, where Kafka has no MBean: ``kafka_log_log_highwatermark{topic,partition}``;
``kafka_server_socketservermetrics_connection_count{listener}`` (Kafka's
socket-server-metrics connection-count, per listener);
``kafka_server_sessionexpirelistener_sessionstate{state}`` (1 for the current
ZooKeeper session state: CONNECTED, SUSPENDED, EXPIRED, CLOSED).

Label names keep Kafka's case (``delayedOperation``, ``request``, ``topic``,
``partition``, ``listener``). Per-partition families are built in one pass over
the hosted partitions (``partition_families``), so a scrape of 10,000 partitions
stays well under a second.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from broker.metrics.group_metrics import committed_offsets_of, member_counts_of
from broker.metrics.registry import COUNTER, GAUGE, HISTOGRAM, SUMMARY, Labels, MetricFamily, \
    Sample, add_histogram
from broker.metrics.request_timing import LATENCY_BUCKETS_MS, STAGES, RequestMetrics
from broker.metrics.topic_stats import BrokerTopicStats

if TYPE_CHECKING:
    from broker.metrics.host import MetricsHost
    from coordinator.runtime.purgatory import Purgatory

_BTM = "kafka_server_brokertopicmetrics_"
# (family suffix, TopicCounters field, help, per topic?)
TOPIC_COUNTERS = (
    ("messagesin_total", "messages_in", "Messages appended as leader (MessagesInPerSec)", True),
    ("bytesin_total", "bytes_in", "Bytes appended as leader from producers (BytesInPerSec)",
     True),
    ("bytesout_total", "bytes_out", "Bytes fetched by consumers (BytesOutPerSec)", True),
    ("bytesrejected_total", "bytes_rejected",
     "Produce bytes refused as too large or invalid (BytesRejectedPerSec)", True),
    ("failedproducerequests_total", "failed_produce",
     "Produce partitions answered with an error (FailedProduceRequestsPerSec)", True),
    ("failedfetchrequests_total", "failed_fetch",
     "Fetch partitions answered with an error (FailedFetchRequestsPerSec)", True),
    ("totalproducerequests_total", "total_produce",
     "Produce partitions handled (TotalProduceRequestsPerSec)", True),
    ("totalfetchrequests_total", "total_fetch",
     "Fetch partitions answered (TotalFetchRequestsPerSec)", True),
    ("replicationbytesout_total", "replication_bytes_out",
     "Bytes fetched by followers (ReplicationBytesOutPerSec)", False),
)


def topic_families(stats: BrokerTopicStats) -> list[MetricFamily]:
    """BrokerTopicMetrics: one series per topic (``topic`` label) plus the
    broker-wide one without labels, as Kafka's MBeans with and without ``topic=``.
    (Sum one or the other: ``{topic=""}`` selects the broker-wide series.)"""
    totals = stats.totals()
    topics = sorted(stats.topics.items())
    out = []
    for suffix, attr, help, per_topic in TOPIC_COUNTERS:
        fam = MetricFamily(_BTM + suffix, COUNTER, help)
        fam.add(getattr(totals, attr))
        if per_topic:
            for topic, c in topics:
                fam.add(getattr(c, attr), (("topic", topic),))
        out.append(fam)
    return out


def request_families(rm: RequestMetrics) -> list[MetricFamily]:
    """RequestMetrics: RequestsPerSec{request,version} and one latency histogram per
    stage with a ``request`` label (Fetch also as FetchConsumer / FetchFollower)."""
    out = []
    fam = MetricFamily("kafka_network_requestmetrics_requests_total", COUNTER,
                       "Requests answered, per API and version (RequestsPerSec)")
    for (name, version), n in sorted(rm.requests.items()):
        fam.add(n, (("request", name), ("version", str(version))))
    out.append(fam)
    stages = sorted(rm.stages.items())
    for i, stage in enumerate(STAGES):
        fam = MetricFamily(f"kafka_network_requestmetrics_{stage}", HISTOGRAM,
                           f"Request {stage[:-2]} in ms, per API (RequestMetrics {stage})")
        for name, h in stages:
            add_histogram(fam, (("request", name),), LATENCY_BUCKETS_MS, h.counts[i], h.sums[i],
                          h.count)
        out.append(fam)
    return out


def partition_families(broker: MetricsHost) -> list[MetricFamily]:
    """ReplicaManager gauges, kafka.cluster Partition gauges (leaders only) and the
    kafka.log Log gauges, in one pass over the hosted partitions."""
    replicas = broker.replicas
    rm_fam = {n: MetricFamily(f"kafka_server_replicamanager_{n}", GAUGE, h) for n, h in (
        ("partitioncount", "Partitions hosted here"),
        ("leadercount", "Partitions led here"),
        ("underreplicatedpartitions", "Led partitions whose ISR is smaller than the replicas"),
        ("underminisrpartitioncount", "Led partitions whose ISR is below min.insync.replicas"),
        ("atminisrpartitioncount", "Led partitions whose ISR is exactly min.insync.replicas"),
        ("offlinereplicacount", "Partitions here whose log dir is offline"))}
    names = ("size", "numlogsegments", "logendoffset", "logstartoffset", "highwatermark")
    helps = ("Bytes of the partition's log", "Segments of the partition's log",
             "Log end offset", "Log start offset", "High watermark (ours: Kafka has no MBean)")
    log_fams = [MetricFamily(f"kafka_log_log_{n}", GAUGE, h) for n, h in zip(names, helps)]
    cl_under = MetricFamily("kafka_cluster_partition_underreplicated", GAUGE,
                            "1 if this led partition is under-replicated")
    cl_isr = MetricFamily("kafka_cluster_partition_insyncreplicascount", GAUGE,
                          "ISR size of this led partition")
    cl_replicas = MetricFamily("kafka_cluster_partition_replicascount", GAUGE,
                               "Replicas of this led partition")
    if replicas is None:
        return list(rm_fam.values()) + log_fams
    count = leaders = under = under_min = at_min = 0
    min_isr_of: dict[str, int] = {}
    s_size, s_segs, s_leo, s_lso, s_hw = (f.samples for f in log_fams)
    for (topic, index), p in list(replicas.partitions.items()):
        count += 1
        labels: Labels = (("topic", topic), ("partition", str(index)))
        plog = p.log
        if plog is not None:
            segments = plog.segments
            s_size.append(Sample("", labels, sum(s.size for s in segments)))
            s_segs.append(Sample("", labels, len(segments)))
            s_leo.append(Sample("", labels, segments[-1].next_offset if segments else 0))
            s_lso.append(Sample("", labels, plog.log_start_offset))
            s_hw.append(Sample("", labels, plog.high_watermark))
        if p.leader_id == p.local_broker_id and plog is not None:
            leaders += 1
            isr = len(p.isr)
            n_replicas = len(p.replicas)
            min_isr = min_isr_of.get(topic)
            if min_isr is None:
                min_isr = min_isr_of[topic] = int(replicas.min_insync_replicas(topic))
            if isr < n_replicas:
                under += 1
            if isr < min_isr:
                under_min += 1
            elif isr == min_isr:
                at_min += 1
            cl_under.samples.append(Sample("", labels, 1 if isr < n_replicas else 0))
            cl_isr.samples.append(Sample("", labels, isr))
            cl_replicas.samples.append(Sample("", labels, n_replicas))
    for name, value in (("partitioncount", count), ("leadercount", leaders),
                        ("underreplicatedpartitions", under),
                        ("underminisrpartitioncount", under_min),
                        ("atminisrpartitioncount", at_min),
                        ("offlinereplicacount", len(replicas.offline_partitions))):
        rm_fam[name].add(value)
    isr_counts = [MetricFamily("kafka_server_replicamanager_isrshrinks_total", COUNTER,
                               "ISR shrinks committed by the controller (IsrShrinksPerSec)"),
                  MetricFamily("kafka_server_replicamanager_isrexpands_total", COUNTER,
                               "ISR expansions committed by the controller (IsrExpandsPerSec)")]
    isr_counts[0].add(replicas.isr_shrinks)
    isr_counts[1].add(replicas.isr_expands)
    return list(rm_fam.values()) + isr_counts + log_fams + [cl_under, cl_isr, cl_replicas]


def purgatory_families(broker: MetricsHost) -> list[MetricFamily]:
    """DelayedOperationPurgatory PurgatorySize / NumDelayedOperations per purgatory."""
    size = MetricFamily("kafka_server_delayedoperationpurgatory_purgatorysize", GAUGE,
                        "Watch entries in the purgatory (completed ones not yet purged "
                        "included)")
    pending = MetricFamily("kafka_server_delayedoperationpurgatory_numdelayedoperations",
                           GAUGE, "Delayed operations waiting in the purgatory")
    for purgatory in _purgatories(broker):
        labels = (("delayedOperation", purgatory.name),)
        size.add(sum(len(ops) for ops in list(purgatory._watchers.values())), labels)
        pending.add(purgatory.pending, labels)
    return [size, pending]


def _purgatories(broker: MetricsHost) -> Iterator[Purgatory]:
    if broker.replicas is not None:
        yield broker.replicas.produce_purgatory
        yield broker.replicas.fetch_purgatory
    gc = broker.group_coordinator
    if gc is not None:
        yield gc.heartbeats
        yield gc.rebalances


def controller_families(broker: MetricsHost) -> list[MetricFamily]:
    """KafkaController gauges and ControllerStats counts of this broker's controller
    (non-zero only while it is the active controller, as in Kafka)."""
    c = broker.controller
    active = bool(c is not None and c.is_active)
    fams = []
    for name, help, value in (
            ("activecontrollercount", "1 on the active controller",
             1 if active else 0),
            ("offlinepartitionscount", "Partitions without a live leader (active controller)",
             c.offline_partition_count() if active and c is not None else 0),
            ("globalpartitioncount", "Partitions in the cluster (active controller)",
             sum(len(p) for p in c.ctx.assignments.values()) if active and c else 0),
            ("globaltopiccount", "Topics in the cluster (active controller)",
             len(c.ctx.assignments) if active and c else 0)):
        fam = MetricFamily(f"kafka_controller_kafkacontroller_{name}", GAUGE, help)
        fam.add(value)
        fams.append(fam)
    stats = c.stats if c is not None else None
    elections = MetricFamily("kafka_controller_controllerstats_leaderelectionrateandtimems",
                             SUMMARY, "Leader elections run by this broker's controller and "
                             "their time in ms (LeaderElectionRateAndTimeMs)")
    elections.add(stats.leader_election_ms if stats else 0.0, (), "_sum")
    elections.add(stats.leader_elections if stats else 0, (), "_count")
    unclean = MetricFamily("kafka_controller_controllerstats_uncleanleaderelections_total",
                           COUNTER, "Leaders elected from outside the ISR "
                           "(UncleanLeaderElectionsPerSec)")
    unclean.add(stats.unclean_leader_elections if stats else 0)
    return fams + [elections, unclean]


def group_families(broker: MetricsHost, remote_hw: Callable[[tuple[str, int]], int | None]
                   = lambda _tp: None) -> list[MetricFamily]:
    """kafka-exporter's consumer-group families, for the groups of both kinds
    (classic and KIP-848 consumer groups) this broker coordinates: committed
    offset, lag = the leader's HW - committed (0 when the commit is past the HW:
    partitions led here read their HW, the others ``remote_hw``,
    remote_offsets.py; none known: no lag sample), the per-topic lag sum and the
    member count (group_metrics.py says where each kind's offsets are)."""
    current = MetricFamily("kafka_consumergroup_current_offset", GAUGE,
                           "Committed offset of the group, per partition")
    lag = MetricFamily("kafka_consumergroup_lag", GAUGE,
                       "High watermark minus the committed offset, per partition")
    lag_sum = MetricFamily("kafka_consumergroup_lag_sum", GAUGE,
                           "Lag of the group summed over a topic's partitions")
    members = MetricFamily("kafka_consumergroup_members", GAUGE, "Members of the group")
    gc = broker.group_coordinator
    replicas = broker.replicas
    if gc is None or replicas is None:
        return [current, lag, lag_sum, members]
    hosted = replicas.partitions
    for group_id, n in member_counts_of(gc):
        members.add(n, (("consumergroup", group_id),))
    for group_id, offsets in committed_offsets_of(gc):
        sums: dict[str, int] = {}
        for (topic, index), committed in sorted(list(offsets.items())):
            labels = (("consumergroup", group_id), ("topic", topic), ("partition", str(index)))
            current.add(committed.offset, labels)
            p = hosted.get((topic, index))
            if p is not None and p.is_leader and p.log is not None:
                hw: int | None = p.log.high_watermark
            else:
                hw = remote_hw((topic, index))
            if hw is None:
                continue
            behind = max(0, hw - committed.offset)
            lag.add(behind, labels)
            sums[topic] = sums.get(topic, 0) + behind
        for topic, total in sorted(sums.items()):
            lag_sum.add(total, (("consumergroup", group_id), ("topic", topic)))
    return [current, lag, lag_sum, members]


def network_families(broker: MetricsHost, idle_fraction: float) -> list[MetricFamily]:
    idle = MetricFamily("kafka_network_socketserver_networkprocessoravgidlepercent", GAUGE,
                        "Idle fraction of the network event loop (1 - event-loop "
                        "utilisation over the last 10 s)")
    idle.add(round(idle_fraction, 4))
    conns = MetricFamily("kafka_server_socketservermetrics_connection_count", GAUGE,
                         "Open client connections, per listener")
    limits = broker.network_limits
    if limits is not None:
        per = limits.quotas.per_listener
        for server in broker.servers:
            name = server.endpoint.name
            conns.add(per.get(name, 0), (("listener", name),))
    return [idle, conns]
