"""Prometheus metrics of a real 3-broker cluster (real ZooKeeper, real broker
processes, stock clients: confluent-kafka), each broker with its own
``prometheus.listener``:

1. A scrape during a produce load shows the families (request rates and latency
   histograms, topic counters, replica manager, controller, purgatory, log, network,
   ZooKeeper); the scrape is valid text format 0.0.4 (every sample under a TYPE).
2. messages-in summed over the brokers equals what the producers sent (a leader
   counts what it appends; followers do not).
3. A group that consumed and committed shows kafka-exporter's lag on its
   coordinator: per partition, the partition's messages less the committed offset.
4. UnderReplicatedPartitions rises on the leader when a follower is paused
   (SIGSTOP of its pid) and falls back to 0 after SIGCONT; the ISR shrink and
   expand counters moved.
"""

from __future__ import annotations

import re
import threading
import time
import urllib.request

import pytest

from tests.integration.cluster import REPO, BrokerProcess, Cluster, MakeCluster
from tests.integration.multi import controller_id, paused, wait_until
from tests.integration.zookeeper import free_port

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.integration

TOPIC = "metrics-load"
PARTITIONS = 3
MESSAGES = 3000
CONSUMED = 1000
GROUP = "metrics-group"
LAG_MS = 2000
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    c = make_cluster("metrics", size=3, first_id=1, start=False, overrides={
        "replica.lag.time.max.ms": str(LAG_MS),
        "default.replication.factor": "3",
        "offsets.topic.replication.factor": "3",
    })
    for b in c.brokers:
        b.overrides = {**b.overrides, "prometheus.listener": f"127.0.0.1:{free_port()}"}
    c.start()
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)]).values():
        f.result(30)
    wait_until(lambda: _in_sync(c), 30, "every partition with a full ISR")
    return c


def _port(b: BrokerProcess) -> int:
    return int(b.overrides["prometheus.listener"].rsplit(":", 1)[1])


def scrape(b: BrokerProcess) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{_port(b)}/metrics", timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def parse(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Samples by (name, labels); asserts each family has HELP and TYPE first."""
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    typed: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"bad sample line {line!r}"
        name = m.group(1)
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in typed or base in typed, f"{name} has no TYPE line"
        labels = frozenset(LABEL.findall(m.group(3) or ""))
        out[(name, labels)] = float(m.group(4))
    return out


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: dict, name: str, **labels: str) -> float:
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def _in_sync(c: Cluster) -> bool:
    try:
        md = AdminClient({"bootstrap.servers": c.bootstrap}).list_topics(TOPIC, timeout=5)
    except Exception:
        return False
    t = md.topics.get(TOPIC)
    return (t is not None and t.error is None and len(t.partitions) == PARTITIONS
            and all(p.leader >= 0 and len(p.isrs) == 3 for p in t.partitions.values()))


def _copies_leo(c: Cluster) -> float:
    """The topic's log end offsets (kafka_log_log_logendoffset) summed over its partitions
    and every broker's copy, over the 3 copies. acks=all holds for the ISR, not for a
    follower that fell out of it during the load (replica.lag.time.max.ms is LAG_MS):
    that copy reaches the end only when it catches up, so the sum is waited for."""
    scrapes = [parse(scrape(b)) for b in c.brokers]
    return sum(value(s, "kafka_log_log_logendoffset", topic=TOPIC, partition=str(p))
               for s in scrapes for p in range(PARTITIONS)) / 3


def _urp(c: Cluster, brokers: list[BrokerProcess]) -> float:
    return sum(value(parse(scrape(b)), "kafka_server_replicamanager_underreplicatedpartitions")
               for b in brokers)


def test_scrape_during_load_and_messages_in(cluster: Cluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "linger.ms": 5, "enable.idempotence": True})
    scrapes: list[str] = []
    done = threading.Event()

    def scraper() -> None:
        while not done.is_set():
            scrapes.append(scrape(cluster.brokers[0]))
            time.sleep(0.2)
    t = threading.Thread(target=scraper)
    t.start()
    try:
        for i in range(MESSAGES):
            producer.produce(TOPIC, key=b"k%d" % i, value=b"v" * 100, partition=i % PARTITIONS)
            if i % 500 == 0:
                producer.poll(0)
        assert producer.flush(30) == 0
    finally:
        done.set()
        t.join()
    assert scrapes, "no scrape ran during the load"
    during = parse(scrapes[len(scrapes) // 2])
    names = {n for n, _ in during}
    for family in (
            "kafka_server_brokertopicmetrics_messagesin_total",
            "kafka_server_brokertopicmetrics_bytesin_total",
            "kafka_server_brokertopicmetrics_bytesout_total",
            "kafka_server_brokertopicmetrics_failedproducerequests_total",
            "kafka_network_requestmetrics_requests_total",
            "kafka_network_requestmetrics_totaltimems_bucket",
            "kafka_network_requestmetrics_requestqueuetimems_count",
            "kafka_network_requestmetrics_localtimems_sum",
            "kafka_network_requestmetrics_remotetimems_count",
            "kafka_network_requestmetrics_responsesendtimems_count",
            "kafka_server_replicamanager_partitioncount",
            "kafka_server_replicamanager_leadercount",
            "kafka_server_replicamanager_underreplicatedpartitions",
            "kafka_server_replicamanager_underminisrpartitioncount",
            "kafka_server_replicamanager_atminisrpartitioncount",
            "kafka_server_replicamanager_isrshrinks_total",
            "kafka_controller_kafkacontroller_activecontrollercount",
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            "kafka_controller_controllerstats_leaderelectionrateandtimems_count",
            "kafka_controller_controllerstats_uncleanleaderelections_total",
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            "kafka_log_log_size", "kafka_log_log_numlogsegments", "kafka_log_log_logendoffset",
            "kafka_log_log_logstartoffset", "kafka_log_log_highwatermark",
            "kafka_log_logflushstats_logflushrateandtimems_count",
            "kafka_network_socketserver_networkprocessoravgidlepercent",
            "kafka_server_socketservermetrics_connection_count",
            "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms_count",
            "kafka_server_sessionexpirelistener_sessionstate"):
        assert family in names, f"{family} missing from a scrape during the load"
    assert value(during, "kafka_server_delayedoperationpurgatory_purgatorysize",
                 delayedOperation="Produce") >= 0
    assert value(during, "kafka_server_sessionexpirelistener_sessionstate", state="CONNECTED") == 1
    assert total(during, "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms_count") > 0
    idle = value(during, "kafka_network_socketserver_networkprocessoravgidlepercent")
    assert 0.0 <= idle <= 1.0
    # after the load: every broker's messages-in for the topic adds up to what was sent
    after = [parse(scrape(b)) for b in cluster.brokers]
    sent_in = sum(value(s, "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC)
                  for s in after)
    assert sent_in == MESSAGES
    assert sum(value(s, "kafka_server_brokertopicmetrics_bytesin_total", topic=TOPIC)
               for s in after) > MESSAGES * 100
    assert sum(value(s, "kafka_controller_kafkacontroller_activecontrollercount")
               for s in after) == 1
    produce_reqs = sum(total(s, "kafka_network_requestmetrics_requests_total", request="Produce")
                       for s in after)
    assert produce_reqs > 0
    # every Produce request is in the totaltimems histogram (le="+Inf" = count)
    assert sum(value(s, "kafka_network_requestmetrics_totaltimems_bucket", request="Produce",
                     le="+Inf") for s in after) == produce_reqs
    # acks=all waited for the followers: remote time was recorded somewhere
    assert sum(value(s, "kafka_network_requestmetrics_remotetimems_sum", request="Produce")
               for s in after) > 0
    # log gauges: per partition, LEO summed over the three copies = messages
    wait_until(lambda: _copies_leo(cluster) == MESSAGES, 30,
               f"every copy's log end offsets summing to the {MESSAGES} messages sent")
    producer.flush(5)


def test_group_lag(cluster: Cluster) -> None:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    got = 0
    deadline = time.monotonic() + 30
    while got < CONSUMED and time.monotonic() < deadline:
        for m in consumer.consume(min(500, CONSUMED - got), timeout=1):
            assert m.error() is None
            got += 1
    assert got == CONSUMED
    # commit a position of our choosing per partition (a consumer may commit any offset)
    wanted = {p: 300 + 100 * p for p in range(PARTITIONS)}
    consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in wanted.items()],
                    asynchronous=False)
    committed = {tp.partition: tp.offset for tp in consumer.committed(
        [TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=10)}
    consumer.close()
    assert committed == wanted
    per_partition = MESSAGES // PARTITIONS
    expected_lag = sum(per_partition - o for o in wanted.values())

    def lag_on_coordinator() -> bool:
        for b in cluster.brokers:
            s = parse(scrape(b))
            if any(n == "kafka_consumergroup_lag" and ("consumergroup", GROUP) in ls
                   for n, ls in s):
                lags = {p: value(s, "kafka_consumergroup_lag", consumergroup=GROUP, topic=TOPIC,
                                 partition=str(p)) for p in range(PARTITIONS)}
                cur = total(s, "kafka_consumergroup_current_offset", consumergroup=GROUP)
                return (lags == {p: per_partition - o for p, o in wanted.items()}
                        and cur == sum(wanted.values())
                        and value(s, "kafka_consumergroup_lag_sum", consumergroup=GROUP,
                                  topic=TOPIC) == expected_lag)
        return False
    wait_until(lag_on_coordinator, 20, "the group's lag on its coordinator")
    # every family the Grafana dashboard charts is served by some broker
    served = {n for b in cluster.brokers for n, _ in parse(scrape(b))}
    served |= {re.sub(r"_(bucket|sum|count)$", "", n) for n in served}
    dashboard = (REPO / "config" / "grafana" / "pybroker.json").read_text()
    charted = set(re.findall(r"\b(kafka_[a-z_]+)", dashboard))
    assert charted and charted <= served, f"charted but not served: {charted - served}"


def test_under_replicated_when_a_follower_pauses(cluster: Cluster) -> None:
    controller = controller_id(cluster.brokers[0].port)
    follower = next(b for b in cluster.brokers if b.broker_id != controller)
    others = [b for b in cluster.brokers if b is not follower]
    before = sum(value(parse(scrape(b)), "kafka_server_replicamanager_isrshrinks_total")
                 for b in others)
    producer = Producer({"bootstrap.servers": ",".join(b.bootstrap for b in others),
                         "acks": "1"})
    with paused(follower):
        def urp_up() -> bool:
            producer.produce(TOPIC, value=b"while paused")
            producer.poll(0)
            return _urp(cluster, others) > 0
        wait_until(urp_up, 30, "UnderReplicatedPartitions > 0 with a follower paused",
                   interval=0.5)
    producer.flush(10)
    wait_until(lambda: _urp(cluster, cluster.brokers) == 0, 60,
               "UnderReplicatedPartitions back to 0 after SIGCONT", interval=0.5)
    after = [parse(scrape(b)) for b in cluster.brokers]
    assert sum(value(s, "kafka_server_replicamanager_isrshrinks_total") for s in after) > before
    assert sum(value(s, "kafka_server_replicamanager_isrexpands_total") for s in after) > 0
