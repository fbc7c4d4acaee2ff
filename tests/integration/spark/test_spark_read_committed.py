"""The ``pybroker`` source with ``kafka.isolation.level=read_committed`` against real
transactions (confluent-kafka producers): committed records only, never past a
partition's last stable offset (an open transaction holds it back), aborted records
and control batches skipped; read_uncommitted sees every data record; once the open
transaction commits, read_committed reads it and what waited behind it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.cluster import Cluster, MakeCluster
from tests.integration.multi import SINGLE_BROKER_TXN_OVERRIDES, create_topic

pytestmark = pytest.mark.integration

OVERRIDES = {**SINGLE_BROKER_TXN_OVERRIDES,
             "log.level": "WARNING"}


@pytest.fixture(scope="module")
def txn_broker(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("rc", overrides=OVERRIDES)


def producer(boot: str, tid: str) -> Any:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": boot, "transactional.id": tid,
                  "transaction.timeout.ms": 60000})
    p.init_transactions(30)
    return p


def txn(p: Any, topic: str, label: str, commit: bool) -> None:
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, value=f"{label}-{i}".encode(), partition=i % 2)
    if commit:
        p.commit_transaction(30)
    else:
        p.flush(30)
        p.abort_transaction(30)


def read(spark: Any, boot: str, topic: str, isolation: str) -> list[tuple[int, str]]:
    rows = (spark.read.format("pybroker").option("kafka.bootstrap.servers", boot)
            .option("subscribe", topic).option("startingOffsets", "earliest")
            .option("endingOffsets", "latest").option("kafka.isolation.level", isolation)
            .load().select("partition", "value").collect())
    return sorted((r.partition, bytes(r.value).decode()) for r in rows)


def test_read_committed_stops_at_the_lso_and_skips_aborts(spark: Any,
                                                          txn_broker: Cluster) -> None:
    boot, topic = txn_broker.bootstrap, "spark-rc"
    assert create_topic(txn_broker.brokers[0].port, topic, 2, 1) == 0
    a, b = producer(boot, "rc-a"), producer(boot, "rc-b")
    txn(a, topic, "c1", True)
    txn(a, topic, "ab", False)
    b.begin_transaction()
    b.produce(topic, value=b"open-0", partition=0)      # holds partition 0's LSO back
    b.flush(30)
    txn(a, topic, "c2", True)                           # behind it on partition 0

    def labelled(label: str, parts: tuple[int, ...] = (0, 1)) -> list[tuple[int, str]]:
        return [(i % 2, f"{label}-{i}") for i in range(6) if i % 2 in parts]

    committed = read(spark, boot, topic, "read_committed")
    assert committed == sorted(labelled("c1") + labelled("c2", (1,)))
    everything = read(spark, boot, topic, "read_uncommitted")
    assert everything == sorted(labelled("c1") + labelled("ab") + labelled("c2")
                                + [(0, "open-0")])
    b.commit_transaction(30)
    after = read(spark, boot, topic, "read_committed")
    assert after == sorted(labelled("c1") + labelled("c2") + [(0, "open-0")])
