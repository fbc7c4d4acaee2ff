"""client.consumer: visible_records over built batches, and Consumer against the
in-test broker (FakeKafka): positions by ListOffsets, records of every partition
in order, a partition reset on OFFSET_OUT_OF_RANGE, a fetch size doubled for a
batch bigger than it, a missing topic refused."""

from __future__ import annotations


import pytest

from client import KafkaAdmin
from client.consumer import EARLIEST, LATEST, PARTITION_MAX_BYTES, Consumer, visible_records
from client.errors import ConsumerError
from protocol import records
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api
from tests.unit.client.test_client import FakeKafka, run


def fill(fake: FakeKafka, topic: str, partitions: int, per_partition: int,
         value_size: int = 0) -> None:
    """``per_partition`` records per partition, three to a batch: values 'p<P>-<i>'
    (padded to ``value_size`` bytes)."""
    t = fake.add_topic(topic, partitions)
    for p in range(partitions):
        for i in range(0, per_partition, 3):
            batch = records.build_batch(
                [(None, f"p{p}-{j}".encode().ljust(value_size, b"."), 1000 + j)
                 for j in range(i, min(i + 3, per_partition))], base_offset=t.next_offset(p))
            t.logs[p].append(bytes(batch))


async def drain(consumer: Consumer, polls: int = 10) -> list[tuple[int, int, bytes]]:
    got = []
    for _ in range(polls):
        got += [(p, r.offset, bytes(r.value)) for p, r, _ in await consumer.poll(0)]
    return got


def test_reads_every_partition_in_order_from_earliest_and_nothing_from_latest() -> None:
    async def body(fake: FakeKafka) -> None:
        fill(fake, "t", 2, 5)
        async with KafkaAdmin(fake.address) as admin:
            consumer = Consumer(admin, "t")
            await consumer.refresh()
            await consumer.seek([0, 1], EARLIEST)
            got = await drain(consumer)
            for p in range(2):
                assert [(o, v) for q, o, v in got if q == p] == \
                    [(j, f"p{p}-{j}".encode()) for j in range(5)]
            assert consumer.positions == {0: 5, 1: 5}
            await consumer.seek([0, 1], LATEST)
            await consumer.seek([1], 3)
            assert [(p, o) for p, o, _ in await drain(consumer)] == [(1, 3), (1, 4)]
    run(body)


def test_out_of_range_resets_to_the_reset_point() -> None:
    out_of_range = {"left": 1}

    def hook(header: RequestHeader, req: Struct) -> Struct | None:
        if header.api_key != 1 or not out_of_range["left"]:
            return None
        out_of_range["left"] -= 1
        s = api(1).response.structs
        return api(1).response.new(responses=[s["FetchableTopicResponse"].new(
            topic="t", partitions=[s["PartitionData"].new(
                partition_index=0, error_code=ErrorCode.OFFSET_OUT_OF_RANGE)])])

    async def body(fake: FakeKafka) -> None:
        fill(fake, "t", 1, 4)
        fake.hook = hook
        async with KafkaAdmin(fake.address) as admin:
            consumer = Consumer(admin, "t", reset_to=EARLIEST)
            await consumer.refresh()
            await consumer.seek([0], 99)
            assert await consumer.poll(0) == []
            assert consumer.positions == {0: 0}
            assert [o for _, o, _ in await drain(consumer)] == [0, 1, 2, 3]
    run(body)


def test_a_batch_bigger_than_the_fetch_size_doubles_it() -> None:
    async def body(fake: FakeKafka) -> None:
        fill(fake, "t", 1, 3, value_size=PARTITION_MAX_BYTES // 2)   # one batch of ~1.5 MiB
        async with KafkaAdmin(fake.address) as admin:
            consumer = Consumer(admin, "t")
            await consumer.refresh()
            await consumer.seek([0], EARLIEST)
            assert await consumer.poll(0) == []          # a partial batch: nothing yet
            assert consumer.max_bytes == {0: 2 * PARTITION_MAX_BYTES}
            assert [o for _, o, _ in await drain(consumer, 1)] == [0, 1, 2]
    run(body)


def test_a_missing_topic_is_a_consumer_error() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.auto_create = False
        async with KafkaAdmin(fake.address) as admin:
            with pytest.raises(ConsumerError, match="ghost"):
                await Consumer(admin, "ghost").refresh(attempts=2)
    run(body)


def test_visible_records_read_committed_skips_aborted_and_control() -> None:
    pid = 77
    aborted_batch = records.build_batch([(None, b"aborted", 1)], producer_id=pid,
                                        producer_epoch=0, base_sequence=0, transactional=True,
                                        base_offset=1)
    marker = records.build_control_batch(commit=False, producer_id=pid, producer_epoch=0,
                                         coordinator_epoch=0, timestamp=2)
    records.patch_base_offset(marker, 0, 2)
    plain = records.build_batch([(None, b"a", 1)], base_offset=0)
    after = records.build_batch([(None, b"b", 3)], base_offset=3)
    data = bytes(plain + aborted_batch + marker + after)

    def values(read_committed: bool, aborted: list[tuple[int, int]]) -> list[bytes]:
        return [r.value for _, r, _ in visible_records(
            data, 0, read_committed, aborted) if r is not None]

    assert values(True, [(pid, 1)]) == [b"a", b"b"]
    assert values(False, [(pid, 1)]) == [b"a", b"aborted", b"b"]
    nxt = [n for n, _, _ in visible_records(data, 0, False, [])]
    assert max(nxt) == 4
    # a compressed batch starting before the position yields only what follows it
    assert [r.value for _, r, _ in visible_records(
        records.build_batch([(None, b"x", 1), (None, b"y", 1)], codec=1), 1, False, [])
        if r is not None] == [b"y"]


