"""Our client's TransactionalProducer (client/transactional.py) against a real broker
and ZooKeeper: commits and aborts read back by our read_committed and
read_uncommitted consumers (client/consumer.py), fencing by a second producer of the
same transactional id, and offsets sent to the transaction visible only on commit."""

from __future__ import annotations

import asyncio
import time

import pytest

from client.admin import KafkaAdmin
from client.consumer import EARLIEST, READ_COMMITTED, READ_UNCOMMITTED, Consumer
from client.errors import ProducerFenced, TransactionError
from client.groups import GROUP_KEY, find_coordinator, offset_fetch
from client.transactional import State, TransactionalProducer
from protocol.errors import ErrorCode
from tests.integration.cluster import Cluster, MakeCluster
from tests.integration.multi import SINGLE_BROKER_TXN_OVERRIDES, create_topic

pytestmark = pytest.mark.integration

OVERRIDES = SINGLE_BROKER_TXN_OVERRIDES


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("ctxn", overrides=OVERRIDES)


def topic(cluster: Cluster, name: str, partitions: int = 2) -> str:
    assert create_topic(cluster.brokers[0].port, name, partitions, 1) == 0
    return name


async def read_all(admin: KafkaAdmin, name: str, isolation: int, partitions: int = 2,
                   timeout: float = 20.0) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record up to the end our consumer sees
    (the LSO under read_committed), in each partition's offset order."""
    consumer = Consumer(admin, name, isolation=isolation, reset_to=EARLIEST)
    await consumer.refresh()
    parts = list(range(partitions))
    ends = await admin.list_offsets({(name, p): -1 for p in parts}, isolation_level=isolation)
    await consumer.seek(parts, EARLIEST)
    got: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + timeout
    while any(consumer.positions[p] < ends[(name, p)].offset for p in parts):
        assert time.monotonic() < deadline, (consumer.positions, ends)
        for p, rec, _ in await consumer.poll(200):
            got.append((p, rec.offset, bytes(rec.value)))
    return got


def records(label: str, n: int) -> list[tuple[bytes, bytes, int]]:
    now = int(time.time() * 1000)
    return [(f"k{i}".encode(), f"{label}-{i}".encode(), now) for i in range(n)]


def test_commits_and_aborts_read_back(cluster: Cluster) -> None:
    name = topic(cluster, "ctxn-commit-abort")

    async def run() -> None:
        admin = KafkaAdmin(cluster.bootstrap)
        try:
            producer = TransactionalProducer(admin, "ctxn-1", transaction_timeout_ms=20000)
            await producer.init_transactions()
            assert producer.producer_id >= 0 and producer.state is State.READY
            plan = [("c1", True), ("a1", False), ("c2", True), ("a2", False), ("c3", True)]
            for label, commit in plan:
                producer.begin_transaction()
                await producer.send({(name, 0): records(f"{label}p0", 5),
                                     (name, 1): records(f"{label}p1", 3)})
                await producer.send({(name, 0): records(f"{label}p0b", 2)})
                if commit:
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
            committed = await read_all(admin, name, READ_COMMITTED)
            want = sorted(f"{lab}{suffix}-{i}" for lab, c in plan if c
                          for suffix, n in (("p0", 5), ("p1", 3), ("p0b", 2)) for i in range(n))
            assert sorted(v.decode() for _, _, v in committed) == want
            for p in (0, 1):
                offs = [o for pa, o, _ in committed if pa == p]
                assert offs == sorted(offs)
            everything = await read_all(admin, name, READ_UNCOMMITTED)
            assert len(everything) == 5 * 10           # data records only, no markers
            # an empty transaction ends without a request and leaves the producer ready
            producer.begin_transaction()
            await producer.commit_transaction()
            assert producer.state is State.READY
        finally:
            await admin.close()

    asyncio.run(run())


def test_a_second_producer_fences_the_first(cluster: Cluster) -> None:
    name = topic(cluster, "ctxn-fence")

    async def run() -> None:
        admin = KafkaAdmin(cluster.bootstrap)
        try:
            old = TransactionalProducer(admin, "ctxn-fence", transaction_timeout_ms=20000)
            await old.init_transactions()
            old.begin_transaction()
            await old.send({(name, 0): records("old", 4)})
            new = TransactionalProducer(admin, "ctxn-fence", transaction_timeout_ms=20000)
            await new.init_transactions()             # aborts old's open transaction
            assert new.producer_epoch > old.producer_epoch
            with pytest.raises(ProducerFenced):
                await old.send({(name, 1): records("old-late", 2)})
            assert old.state is State.FATAL
            with pytest.raises(ProducerFenced):
                await old.commit_transaction()
            new.begin_transaction()
            await new.send({(name, 0): records("new", 3)})
            await new.commit_transaction()
            committed = await read_all(admin, name, READ_COMMITTED)
            assert sorted(v.decode() for _, _, v in committed) == [f"new-{i}" for i in range(3)]
        finally:
            await admin.close()

    asyncio.run(run())


def test_offsets_sent_to_the_transaction_appear_on_commit_only(cluster: Cluster) -> None:
    name = topic(cluster, "ctxn-offsets")
    group = "ctxn-offsets-group"

    async def committed_offset(admin: KafkaAdmin, stable: bool) -> tuple[int, int]:
        found = await find_coordinator(await admin.any_connection(), group, key_type=GROUP_KEY)
        conn = await admin.pool.get(found.host, found.port)
        got = await offset_fetch(conn, group, [(name, 0)], require_stable=stable)
        answer = got.partitions[(name, 0)]
        return (got.error or answer.error), answer.offset

    async def run() -> None:
        admin = KafkaAdmin(cluster.bootstrap)
        try:
            producer = TransactionalProducer(admin, "ctxn-offsets", transaction_timeout_ms=20000)
            await producer.init_transactions()
            producer.begin_transaction()
            await producer.send({(name, 0): records("x", 1)})
            await producer.send_offsets_to_transaction({(name, 0): 7}, group)
            assert await committed_offset(admin, stable=True) == (
                ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
            await producer.abort_transaction()
            assert (await committed_offset(admin, stable=False))[1] == -1
            producer.begin_transaction()
            await producer.send_offsets_to_transaction({(name, 0): 9}, group)
            await producer.commit_transaction()
            # EndTxn answers once the commit is decided; the markers (and with them the
            # offsets) land just after, so UNSTABLE_OFFSET_COMMIT may answer meanwhile
            deadline = time.monotonic() + 15
            while (answer := await committed_offset(admin, stable=True))[0] == \
                    ErrorCode.UNSTABLE_OFFSET_COMMIT and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert answer == (ErrorCode.NONE, 9)
        finally:
            await admin.close()

    asyncio.run(run())


def test_calls_out_of_order_are_refused_without_a_request(cluster: Cluster) -> None:
    async def run() -> None:
        admin = KafkaAdmin(cluster.bootstrap)
        try:
            producer = TransactionalProducer(admin, "ctxn-order")
            with pytest.raises(TransactionError):
                producer.begin_transaction()          # before init_transactions
            await producer.init_transactions()
            with pytest.raises(TransactionError):
                await producer.send({("ctxn-order", 0): records("y", 1)})   # not begun
            with pytest.raises(TransactionError):
                await producer.commit_transaction()
            producer.begin_transaction()
            with pytest.raises(TransactionError):
                producer.begin_transaction()          # already in one
        finally:
            await admin.close()

    asyncio.run(run())


def test_a_resumed_producer_ends_a_transaction_another_began(cluster: Cluster) -> None:
    """TransactionalProducer.resume (the Spark sink's driver commit): a second producer
    object, given only the transactional id, producer id and epoch, commits the
    first one's open transaction, which read_committed then sees; it may not send
    records itself; a stale epoch (the id fenced since) is refused as fenced."""
    name = topic(cluster, "ctxn-resume")

    async def run() -> None:
        admin = KafkaAdmin(cluster.bootstrap)
        try:
            writer = TransactionalProducer(admin, "ctxn-resume-1", transaction_timeout_ms=20000)
            await writer.init_transactions()
            writer.begin_transaction()
            await writer.send({(name, 0): records("open", 4)})
            assert await read_all(admin, name, READ_COMMITTED) == []    # open: LSO at 0
            ender = TransactionalProducer.resume(admin, "ctxn-resume-1", writer.producer_id,
                                                 writer.producer_epoch)
            with pytest.raises(TransactionError, match="resumed"):
                await ender.send({(name, 0): records("not-allowed", 1)})
            await ender.commit_transaction()
            assert ender.state is State.READY
            assert [v for _, _, v in await read_all(admin, name, READ_COMMITTED)] == \
                [f"open-{i}".encode() for i in range(4)]

            second = TransactionalProducer(admin, "ctxn-resume-1", transaction_timeout_ms=20000)
            await second.init_transactions()
            second.begin_transaction()
            await second.send({(name, 1): records("fenced", 2)})
            stale = (second.producer_id, second.producer_epoch)
            newer = TransactionalProducer(admin, "ctxn-resume-1", transaction_timeout_ms=20000)
            await newer.init_transactions()    # aborts the open one, bumps the epoch
            late = TransactionalProducer.resume(admin, "ctxn-resume-1", *stale)
            with pytest.raises(ProducerFenced):
                await late.commit_transaction()
            assert [v for _, _, v in await read_all(admin, name, READ_COMMITTED)] == \
                [f"open-{i}".encode() for i in range(4)]
        finally:
            await admin.close()

    asyncio.run(run())
