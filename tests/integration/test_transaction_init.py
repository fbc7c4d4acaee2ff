"""The transaction coordinator's first part against a real broker (real ZooKeeper):
FindCoordinator for a transactional id creates __transaction_state and names its
leader; confluent-kafka's ``init_transactions()`` completes; every later
InitProducerId for the id bumps the epoch (fencing the older producer); the state
survives a kill -9 (reloaded from __transaction_state). Transactions themselves are
tested in test_transactions.py."""

from __future__ import annotations

import asyncio

import pytest

from client import KafkaConnection
from client.groups import TRANSACTION_KEY, find_coordinator
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.spec import api
from tests.integration.cluster import HOST, Cluster, MakeCluster

pytestmark = pytest.mark.integration

OVERRIDES = {"transaction.state.log.replication.factor": "1",
             "transaction.state.log.min.isr": "1",
             "transaction.state.log.num.partitions": "3"}


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("txn-init", overrides=OVERRIDES)


async def init_producer_id(port: int, tid: str) -> tuple[int, int, int]:
    """FindCoordinator (key type 1) until it answers, then InitProducerId there;
    -> (error, producer id, epoch)."""
    async with await KafkaConnection.open(HOST, port, timeout=10) as conn:
        for _ in range(200):
            c = await find_coordinator(conn, tid, key_type=TRANSACTION_KEY)
            if c.error == 0:
                break
            assert c.error == ErrorCode.COORDINATOR_NOT_AVAILABLE, c
            await asyncio.sleep(0.05)
        assert c.error == 0 and c.port == port
    async with await KafkaConnection.open(c.host, c.port, timeout=10) as conn:
        for _ in range(200):
            r = await conn.request(ApiKey.INIT_PRODUCER_ID, api(ApiKey.INIT_PRODUCER_ID)
                                   .request.new(transactional_id=tid,
                                                transaction_timeout_ms=10000,
                                                producer_id=-1, producer_epoch=-1))
            assert r is not None
            if r.error_code not in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                    ErrorCode.NOT_COORDINATOR):
                return r.error_code, r.producer_id, r.producer_epoch
            await asyncio.sleep(0.05)
    raise AssertionError("the coordinator never loaded")


def test_init_transactions_and_fencing_epochs_survive_a_restart(cluster: Cluster) -> None:
    from confluent_kafka import Producer

    broker = cluster.brokers[0]
    error, pid, epoch = asyncio.run(init_producer_id(broker.port, "tx-a"))
    assert (error, epoch) == (0, 0) and pid >= 0
    for _ in range(2):
        p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tx-a",
                      "transaction.timeout.ms": 10000})
        p.init_transactions(30)                          # completes: no exception
        p.flush(1)
    assert asyncio.run(init_producer_id(broker.port, "tx-a")) == (0, pid, 3)
    other = asyncio.run(init_producer_id(broker.port, "tx-b"))
    assert other[0] == 0 and other[1] != pid and other[2] == 0

    cluster.kill9(broker)
    cluster.restart(broker)
    assert asyncio.run(init_producer_id(broker.port, "tx-a")) == (0, pid, 4)
