"""The collectors over a real ReplicaManager and real logs (tests' FakeBroker), the
Produce and Fetch handlers run in-process: topic counters, replica-manager and log
gauges, purgatory sizes, request timing with remote time from the purgatory, and a
scrape of 10,000 partitions within budget."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

from broker.metrics import kafka_families as kf
from broker.metrics.exposition import render
from broker.metrics.registry import MetricFamily
from broker.metrics.request_timing import RequestMetrics, request_name
from coordinator.runtime.purgatory import CURRENT, RequestClock
from broker.metrics.topic_stats import BrokerTopicStats
from broker.replication.purgatory import DelayedProduce
from coordinator.runtime.purgatory import Purgatory
from protocol.records import build_batch
from storage.config import LogConfig
from tests.unit.broker.test_data_handlers import fetch, produce
from tests.unit.broker.replication.fakes import FakeBroker


def samples(fams: list[MetricFamily]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(f.name + s.suffix, s.labels): s.value for f in fams for s in f.samples}


def _broker(tmp_path: Any, config: LogConfig | None = None) -> FakeBroker:
    b = FakeBroker(tmp_path, config=config)
    b.replicas.topic_stats = BrokerTopicStats()
    b.group_coordinator = None       # type: ignore[attr-defined]
    b.controller = None              # type: ignore[attr-defined]
    return b


def test_topic_counters_from_produce_and_fetch(tmp_path: Any) -> None:
    b = _broker(tmp_path, LogConfig(max_message_bytes=1000))
    b.lead("t", 2)
    batch = build_batch([(b"k", b"v" * 10, 1), (b"k", b"w" * 10, 2), (None, b"x", 3)])
    produce(b, 9, batch, acks=1)
    produce(b, 9, batch, acks=1, partition=1)
    produce(b, 9, batch, acks=1, topic="nope")      # unknown partition: not a failure (Kafka)
    big = build_batch([(None, b"z" * 2000, 1)])
    produce(b, 9, big, acks=1)                      # too large: rejected bytes, not failed
    fetch(b, 12, partitions=[(0, 0), (1, 0)])
    s = samples(kf.topic_families(b.replicas.topic_stats))
    t = (("topic", "t"),)
    name = "kafka_server_brokertopicmetrics_"
    assert s[(name + "messagesin_total", t)] == 6
    assert s[(name + "bytesin_total", t)] == 2 * len(batch)
    assert s[(name + "bytesout_total", t)] == 2 * len(batch)
    assert s[(name + "totalfetchrequests_total", t)] == 2
    assert s[(name + "messagesin_total", ())] == 6          # the broker-wide series
    assert s[(name + "bytesrejected_total", t)] == len(big)
    assert s[(name + "failedproducerequests_total", t)] == 0
    assert (name + "messagesin_total", (("topic", "nope"),)) not in s


def test_a_deleted_topic_loses_its_series_but_not_its_counts(tmp_path: Any) -> None:
    b = _broker(tmp_path)
    b.lead("t", 2)
    produce(b, 9, build_batch([(None, b"a", 1), (None, b"b", 2)]), acks=1)
    name = "kafka_server_brokertopicmetrics_messagesin_total"
    b.replicas.stop_replicas(1, [("t", 0, True)])      # one partition left: kept
    assert (name, (("topic", "t"),)) in samples(kf.topic_families(b.replicas.topic_stats))
    b.replicas.stop_replicas(1, [("t", 1, True)])
    s = samples(kf.topic_families(b.replicas.topic_stats))
    assert (name, (("topic", "t"),)) not in s and s[(name, ())] == 2


def test_partition_and_log_gauges(tmp_path: Any) -> None:
    b = _broker(tmp_path)
    b.lead("t", 1)                                            # leader, ISR = replicas
    b.lead("u", 1, replicas=(1, 2, 3), isr=(1, 2))            # under-replicated, ISR 2
    b.lead("f", 1, replicas=(1, 2), leader=2)                 # a follower here
    produce(b, 9, build_batch([(None, b"a", 1), (None, b"b", 2)]), acks=1)
    s = samples(kf.partition_families(b))
    rm = "kafka_server_replicamanager_"
    assert s[(rm + "partitioncount", ())] == 3
    assert s[(rm + "leadercount", ())] == 2
    assert s[(rm + "underreplicatedpartitions", ())] == 1
    assert s[(rm + "atminisrpartitioncount", ())] == 1    # t: ISR 1 = min.insync.replicas 1
    assert s[(rm + "underminisrpartitioncount", ())] == 0
    t0 = (("topic", "t"), ("partition", "0"))
    assert s[("kafka_log_log_logendoffset", t0)] == 2
    assert s[("kafka_log_log_highwatermark", t0)] == 2        # RF 1: HW = LEO at once
    assert s[("kafka_log_log_numlogsegments", t0)] == 1
    assert s[("kafka_log_log_size", t0)] > 0
    assert s[("kafka_cluster_partition_underreplicated", (("topic", "u"), ("partition", "0")))] == 1
    assert ("kafka_cluster_partition_underreplicated", (("topic", "f"), ("partition", "0"))) \
        not in s                                              # leaders only


def test_purgatory_pending_and_remote_time() -> None:
    async def run() -> None:
        purgatory = Purgatory("Produce")
        done = {"ok": False}
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        op = DelayedProduce(10_000, {("t", 0): 5},
                            lambda tp, req: (done["ok"], 0), future)
        clock = RequestClock()
        token = CURRENT.set(clock)
        try:
            purgatory.try_complete_else_watch(op, [("t", 0)])
        finally:
            CURRENT.reset(token)
        assert purgatory.pending == 1
        fams = kf.purgatory_families(SimpleNamespace(
            replicas=SimpleNamespace(produce_purgatory=purgatory, fetch_purgatory=Purgatory("Fetch")),
            group_coordinator=None))
        s = samples(fams)
        assert s[("kafka_server_delayedoperationpurgatory_numdelayedoperations",
                  (("delayedOperation", "Produce"),))] == 1
        await asyncio.sleep(0.05)
        done["ok"] = True
        purgatory.check_and_complete(("t", 0))
        assert future.done() and purgatory.pending == 0
        assert clock.remote >= 0.04
    asyncio.run(run())


def test_request_metrics_stages() -> None:
    rm = RequestMetrics()
    t = 100.0
    # received at t, dequeued +1 ms, handled +11 ms with 6 ms remote, written +13 ms
    rm.record(0, 9, None, t, t + 0.001, t + 0.011, 0.006, t + 0.012, t + 0.013)
    rm.record(1, 12, "Follower", t, t, t + 0.002, 0.0, t + 0.002, t + 0.003)
    assert request_name(0) == "Produce" and request_name(1) == "Fetch"
    s = samples(kf.request_families(rm))
    rq = (("request", "Produce"),)
    assert s[("kafka_network_requestmetrics_requests_total",
              (("request", "Produce"), ("version", "9")))] == 1
    assert abs(s[("kafka_network_requestmetrics_totaltimems_sum", rq)] - 13) < 1e-6
    assert abs(s[("kafka_network_requestmetrics_requestqueuetimems_sum", rq)] - 1) < 1e-6
    assert abs(s[("kafka_network_requestmetrics_localtimems_sum", rq)] - 4) < 1e-6
    assert abs(s[("kafka_network_requestmetrics_remotetimems_sum", rq)] - 6) < 1e-6
    assert abs(s[("kafka_network_requestmetrics_responsequeuetimems_sum", rq)] - 1) < 1e-6
    assert abs(s[("kafka_network_requestmetrics_responsesendtimems_sum", rq)] - 1) < 1e-6
    assert s[("kafka_network_requestmetrics_totaltimems_bucket",
              rq + (("le", "10.0"),))] == 0
    assert s[("kafka_network_requestmetrics_totaltimems_bucket",
              rq + (("le", "25.0"),))] == 1
    assert s[("kafka_network_requestmetrics_totaltimems_count", (("request", "FetchFollower"),))] == 1
    assert s[("kafka_network_requestmetrics_totaltimems_count", (("request", "Fetch"),))] == 1


def test_scrape_of_10000_partitions_is_fast() -> None:
    """The per-partition pass over stand-ins with the attributes the collector
    reads (the real-broker figure is bench/metrics_scrape.py's)."""
    seg = SimpleNamespace(size=1024, next_offset=10)
    parts = {}
    for i in range(10_000):
        plog = SimpleNamespace(segments=[seg], log_start_offset=0, high_watermark=10)
        parts[("big", i)] = SimpleNamespace(log=plog, leader_id=1, local_broker_id=1,
                                            isr=frozenset({1}), replicas=(1,))
    broker = SimpleNamespace(replicas=SimpleNamespace(
        partitions=parts, offline_partitions=set(), min_insync_replicas=lambda t: 1,
        isr_shrinks=0, isr_expands=0))
    start = time.perf_counter()
    text = render(kf.partition_families(broker))
    took = time.perf_counter() - start
    assert text.count('kafka_log_log_logendoffset{topic="big"') == 10_000
    assert took < 1.0, took
