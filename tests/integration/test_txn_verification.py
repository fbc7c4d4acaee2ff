"""KIP-890 produce-side verification on a real broker: a transactional batch for a
partition the producer never added to its transaction is refused (nothing appended,
the last stable offset does not hang), while ordinary transactions go through; with
``transaction.partition.verification.enable=false`` the same write is appended and
leaves a hanging transaction behind — what verification exists to prevent."""

from __future__ import annotations

import asyncio
import time

import pytest

from client.admin import KafkaAdmin
from client.groups import TRANSACTION_KEY, find_coordinator
from client.transactional import TransactionalProducer
from client.verbs import produce
from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.integration.cluster import Cluster, MakeCluster
from tests.integration.multi import SINGLE_BROKER_TXN_OVERRIDES, create_topic

pytestmark = pytest.mark.integration

OVERRIDES = SINGLE_BROKER_TXN_OVERRIDES


def start(make_cluster: MakeCluster, name: str, verify: bool) -> Cluster:
    return make_cluster(name, overrides={
        **OVERRIDES, "transaction.partition.verification.enable": str(verify).lower()})


@pytest.fixture(scope="module")
def verifying(make_cluster: MakeCluster) -> Cluster:
    return start(make_cluster, "verify-on", True)


async def unadded_write(boot: str, topic: str) -> tuple[int, int, int]:
    """A producer with a transactional id writes to partition 1 without adding it
    (its transaction holds partition 0 only). -> (produce error, HW, LSO) of partition 1."""
    admin = KafkaAdmin(boot)
    try:
        good = TransactionalProducer(admin, "verify-me", transaction_timeout_ms=60000)
        await good.init_transactions()
        good.begin_transaction()
        await good.send({(topic, 0): [(b"k", b"in", int(time.time() * 1000))]})
        batch = build_batch([(b"k", b"sneaky", int(time.time() * 1000))],
                            producer_id=good.producer_id, producer_epoch=good.producer_epoch,
                            base_sequence=0, transactional=True)
        conn = await admin.leader_connection(topic, 1)
        answer = (await produce(conn, {(topic, 1): batch}, acks=-1, timeout_ms=5000,
                                transactional_id="verify-me"))[(topic, 1)]  # type: ignore[index]
        await good.commit_transaction()
        await asyncio.sleep(0.5)                 # the markers land
        hw = (await admin.list_offsets({(topic, 1): -1}, isolation_level=0))[(topic, 1)].offset
        lso = (await admin.list_offsets({(topic, 1): -1}, isolation_level=1))[(topic, 1)].offset
        return answer.error, hw, lso
    finally:
        await admin.close()


def test_a_partition_not_in_the_transaction_is_refused(verifying: Cluster) -> None:
    assert create_topic(verifying.brokers[0].port, "verified", 2, 1) == 0
    error, hw, lso = asyncio.run(unadded_write(verifying.bootstrap, "verified"))
    assert error == ErrorCode.INVALID_TXN_STATE
    assert hw == 0 and lso == 0                  # nothing appended, nothing hanging


def test_an_unknown_producer_cannot_open_a_transaction(verifying: Cluster) -> None:
    assert create_topic(verifying.brokers[0].port, "verified-unknown", 1, 1) == 0

    async def run() -> int:
        admin = KafkaAdmin(verifying.bootstrap)
        try:
            conn = await admin.leader_connection("verified-unknown", 0)
            batch = build_batch([(None, b"x", int(time.time() * 1000))], producer_id=424242,
                                producer_epoch=0, base_sequence=0, transactional=True)
            answer = (await produce(conn, {("verified-unknown", 0): batch}, acks=-1,
                                    timeout_ms=5000, transactional_id="never-initialised"))
            return answer[("verified-unknown", 0)].error  # type: ignore[index]
        finally:
            await admin.close()

    assert asyncio.run(run()) in (ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                                  ErrorCode.INVALID_TXN_STATE)


def test_without_verification_the_write_hangs_the_partition(make_cluster: MakeCluster) -> None:
    c = start(make_cluster, "verify-off", False)
    try:
        assert create_topic(c.brokers[0].port, "unverified", 2, 1) == 0
        error, hw, lso = asyncio.run(unadded_write(c.bootstrap, "unverified"))
        assert error == ErrorCode.NONE and hw == 1 and lso == 0    # a hanging transaction
    finally:
        c.stop()


def test_the_coordinator_answers_verify_only_requests(verifying: Cluster) -> None:
    """The coordinator side a leader on another broker would ask (v4 VerifyOnly)."""
    from client.inter_broker import verify_txn_partitions

    assert create_topic(verifying.brokers[0].port, "verified-remote", 2, 1) == 0

    async def run() -> dict:
        admin = KafkaAdmin(verifying.bootstrap)
        try:
            producer = TransactionalProducer(admin, "verify-remote")
            await producer.init_transactions()
            producer.begin_transaction()
            await producer.send({("verified-remote", 0): [(None, b"x", 1)]})
            found = await find_coordinator(await admin.any_connection(), "verify-remote",
                                           key_type=TRANSACTION_KEY)
            conn = await admin.pool.get(found.host, found.port)
            top, answers = await verify_txn_partitions(
                conn, "verify-remote", producer.producer_id, producer.producer_epoch,
                [("verified-remote", 0), ("verified-remote", 1)])
            await producer.abort_transaction()
            assert top == ErrorCode.NONE
            return answers
        finally:
            await admin.close()

    assert asyncio.run(run()) == {("verified-remote", 0): ErrorCode.NONE,
                                  ("verified-remote", 1): ErrorCode.INVALID_TXN_STATE}

