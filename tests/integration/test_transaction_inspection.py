"""DescribeProducers, DescribeTransactions and ListTransactions on a real broker with
a confluent-kafka transactional producer: an open transaction is listed as Ongoing
with its partitions, its producer shows the transaction's first offset on the
partition, and after the commit the id is CompleteCommit with no open offset. And
``pybroker transactions``: list / describe / describe-producers print them; a hanging
transaction (written with KIP-890 verification off by a producer no coordinator
knows) is found by find-hanging and aborted by abort, after which the LSO moves on."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.integration.cluster import Cluster, MakeCluster, WireClient
from tests.integration.multi import SINGLE_BROKER_TXN_OVERRIDES, create_topic

pytestmark = pytest.mark.integration

# verification off, so that the last test can make a hanging transaction
OVERRIDES = {**SINGLE_BROKER_TXN_OVERRIDES, "transaction.partition.verification.enable": "false"}


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("inspect", overrides=OVERRIDES)


def ask(cluster: Cluster, api_key: int, version: int, **fields: Any) -> Any:
    with WireClient(cluster.brokers[0].port) as c:
        return c.request(api_key, version, **fields)


def producers(cluster: Cluster, topic: str) -> list[Any]:
    from protocol.spec import api
    req = api(ApiKey.DESCRIBE_PRODUCERS).request
    r = ask(cluster, ApiKey.DESCRIBE_PRODUCERS, 0, topics=[
        req.structs["TopicRequest"].new(name=topic, partition_indexes=[0])])
    part = r.topics[0].partitions[0]
    assert part.error_code == ErrorCode.NONE
    return list(part.active_producers)


def test_an_open_transaction_is_listed_described_and_its_producer_shown(cluster: Cluster
                                                                        ) -> None:
    from confluent_kafka import Producer
    topic = "inspect"
    assert create_topic(cluster.brokers[0].port, topic, 1, 1) == 0
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "inspect-me"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"a", partition=0)
    p.flush(30)

    listed = ask(cluster, ApiKey.LIST_TRANSACTIONS, 1, state_filters=["Ongoing", "Bogus"],
                 producer_id_filters=[], duration_filter=-1)
    assert listed.error_code == ErrorCode.NONE and list(listed.unknown_state_filters) == ["Bogus"]
    assert [(s.transactional_id, s.transaction_state) for s in listed.transaction_states] == \
        [("inspect-me", "Ongoing")]
    pid = listed.transaction_states[0].producer_id
    described = ask(cluster, ApiKey.DESCRIBE_TRANSACTIONS, 0,
                    transactional_ids=["inspect-me", "nobody"]).transaction_states
    assert described[0].error_code == ErrorCode.NONE
    assert (described[0].transaction_state, described[0].producer_id) == ("Ongoing", pid)
    assert [(t.topic, list(t.partitions)) for t in described[0].topics] == [(topic, [0])]
    assert described[0].transaction_start_time_ms > 0
    assert described[1].error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    [state] = producers(cluster, topic)
    assert (state.producer_id, state.current_txn_start_offset, state.last_sequence) == (pid, 0, 0)

    p.commit_transaction(30)
    after = ask(cluster, ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=["inspect-me"])
    assert after.transaction_states[0].transaction_state in ("PrepareCommit", "CompleteCommit")
    none_open = ask(cluster, ApiKey.LIST_TRANSACTIONS, 1, state_filters=["Ongoing"],
                    producer_id_filters=[pid], duration_filter=-1)
    assert list(none_open.transaction_states) == []
    deadline = time.monotonic() + 10                  # the COMMIT marker lands just after
    while producers(cluster, topic)[0].current_txn_start_offset != -1:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def tool(cluster: Cluster, *argv: str) -> tuple[int, str]:
    from tools.transactions import main
    out, err = io.StringIO(), io.StringIO()
    code = main(["--bootstrap-server", cluster.bootstrap, *argv], stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue()


def lso_and_hw(cluster: Cluster, topic: str) -> tuple[int, int]:
    with WireClient(cluster.brokers[0].port) as c:
        from protocol.spec import api
        req = api(ApiKey.LIST_OFFSETS).request
        got = []
        for isolation in (1, 0):
            lt = req.structs["ListOffsetsTopic"].new(name=topic, partitions=[
                req.structs["ListOffsetsPartition"].new(partition_index=0, timestamp=-1)])
            r = c.request(ApiKey.LIST_OFFSETS, 5, req.new(replica_id=-1, topics=[lt],
                                                           isolation_level=isolation))
            got.append(int(r.topics[0].partitions[0].offset))
    return got[0], got[1]


def test_the_tool_lists_describes_and_aborts_a_hanging_transaction(cluster: Cluster) -> None:
    from confluent_kafka import Producer
    topic = "hanging"
    assert create_topic(cluster.brokers[0].port, topic, 1, 1) == 0
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tool-me"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"x", partition=0)
    p.flush(30)
    code, text = tool(cluster, "list", "--state", "Ongoing")
    assert code == 0 and "tool-me" in text and "Ongoing" in text, text
    code, text = tool(cluster, "describe", "--transactional-id", "tool-me")
    assert code == 0 and f"{topic}-0" in text and "Ongoing" in text, text
    code, text = tool(cluster, "describe-producers", "--topic", topic, "--partition", "0")
    assert code == 0 and text.splitlines()[1].split()[-1] == "0", text   # open at offset 0
    p.commit_transaction(30)

    # a transaction no coordinator knows: producer id 777001, verification off
    with WireClient(cluster.brokers[0].port) as c:
        batch = build_batch([(None, b"zombie", int(time.time() * 1000))], producer_id=777001,
                            producer_epoch=3, base_sequence=0, transactional=True)
        assert c.produce(topic, 0, batch, acks=-1).error_code == ErrorCode.NONE
    lso, hw = lso_and_hw(cluster, topic)
    assert lso < hw                                      # it holds the LSO back
    code, text = tool(cluster, "find-hanging", "--topic", topic,
                      "--max-transaction-timeout", "0")
    rows = text.splitlines()[1:]
    assert code == 0 and len(rows) == 1 and rows[0].split()[2] == "777001", text
    start = int(rows[0].split()[5])
    code, text = tool(cluster, "abort", "--topic", topic, "--partition", "0",
                      "--start-offset", str(start))
    assert code == 0 and "777001" in text, text
    lso, hw = lso_and_hw(cluster, topic)
    assert lso == hw
    code, text = tool(cluster, "find-hanging", "--topic", topic,
                      "--max-transaction-timeout", "0")
    assert code == 0 and len(text.splitlines()) == 1, text     # the header only
    code, text = tool(cluster, "abort", "--topic", topic, "--partition", "0",
                      "--start-offset", str(start))
    assert code == 1 and "no transaction open" in text, text
