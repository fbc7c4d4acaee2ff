"""client.verbs and client.producer against the in-test broker (FakeKafka) on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest

from client import KafkaAdmin, KafkaConnection, NoCommonVersion
from client.connection import our_versions
from client.producer import send_batches
from client.verbs import (EARLIEST_TIMESTAMP, FETCH_BY_NAME_MAX, LATEST_TIMESTAMP, FetchPosition,
                          fetch, list_offsets, produce)
from protocol import records
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api
from tests.unit.client.test_client import FakeKafka, run


def batch(*values: bytes) -> bytes:
    return bytes(records.build_batch([(None, v, 1_700_000_000_000) for v in values]))


def test_produce_fetch_and_list_offsets_round_trip() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.add_topic("t", 2)
        async with await KafkaConnection.open("127.0.0.1", fake.port, timeout=2) as conn:
            got = await produce(conn, {("t", 0): batch(b"a", b"b"), ("t", 1): batch(b"c")},
                                acks=-1, timeout_ms=1000)
            assert got is not None
            assert {tp: (r.error, r.base_offset) for tp, r in got.items()} == {
                ("t", 0): (0, 0), ("t", 1): (0, 0)}
            again = await produce(conn, {("t", 0): batch(b"d")}, acks=1, timeout_ms=1000)
            assert again is not None and again[("t", 0)].base_offset == 2

            latest = await list_offsets(conn, {("t", 0): LATEST_TIMESTAMP,
                                               ("t", 1): EARLIEST_TIMESTAMP})
            assert (latest[("t", 0)].offset, latest[("t", 1)].offset) == (3, 0)

            resp = await fetch(conn, {("t", 0): FetchPosition(1, 1 << 20)}, max_wait_ms=0,
                               min_bytes=0, max_bytes=1 << 20)
            assert resp.error == 0
            part = resp.partitions[("t", 0)]
            assert part.error == 0 and part.high_watermark == 3
            data = bytes(part.records)
            values = [r.value for at, h in records.iter_batches(data)
                      for r in records.iter_records(data[at:at + h.size])]
            assert values == [b"a", b"b", b"d"]   # whole batches: offset 1 sits in the first
    run(body)


def test_fetch_asks_by_topic_name_and_acks_zero_has_no_answer() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.add_topic("t", 1)
        async with await KafkaConnection.open("127.0.0.1", fake.port, timeout=2) as conn:
            assert await produce(conn, {("t", 0): batch(b"x")}, acks=0, timeout_ms=1000) is None
            resp = await fetch(conn, {("t", 0): FetchPosition(0, 1024)}, max_wait_ms=0,
                               min_bytes=0, max_bytes=1024)
            assert resp.partitions[("t", 0)].high_watermark == 1
        fetches = [h.api_version for h in fake.seen if h.api_key == ApiKey.FETCH]
        assert fetches == [FETCH_BY_NAME_MAX]      # our schema goes higher; names need <= 12
        assert our_versions()[ApiKey.FETCH][1] > FETCH_BY_NAME_MAX
    run(body)


def test_list_offsets_v0_reads_the_old_style_offsets() -> None:
    versions = dict(our_versions())
    versions[ApiKey.LIST_OFFSETS] = (0, 0)

    async def body(fake: FakeKafka) -> None:
        fake.add_topic("t", 1)
        async with await KafkaConnection.open("127.0.0.1", fake.port, timeout=2) as conn:
            await produce(conn, {("t", 0): batch(b"a", b"b")}, acks=1, timeout_ms=1000)
            got = await list_offsets(conn, {("t", 0): LATEST_TIMESTAMP})
            assert got[("t", 0)].offset == 2
            with pytest.raises(NoCommonVersion):
                await list_offsets(conn, {("t", 0): LATEST_TIMESTAMP}, min_version=1)
    run(body, versions=versions)


def test_produce_below_v3_is_refused_before_sending() -> None:
    versions = dict(our_versions())
    versions[ApiKey.PRODUCE] = (0, 2)

    async def body(fake: FakeKafka) -> None:
        fake.add_topic("t", 1)
        async with await KafkaConnection.open("127.0.0.1", fake.port, timeout=2) as conn:
            with pytest.raises(NoCommonVersion):
                await produce(conn, {("t", 0): batch(b"a")}, acks=1, timeout_ms=1000)
        assert not [h for h in fake.seen if h.api_key == ApiKey.PRODUCE]
    run(body, versions=versions)


def test_send_batches_retries_retriable_errors_and_reports_final_ones() -> None:
    """The first Produce answers NOT_LEADER for partition 0 (retried after a
    metadata refresh) and a non-retriable error for partition 1 (final)."""
    answered: list[int] = []

    def hook(header: RequestHeader, req: Struct) -> Struct | None:
        if header.api_key != ApiKey.PRODUCE or answered:
            return None
        answered.append(1)
        s = api(ApiKey.PRODUCE).response.structs
        return api(ApiKey.PRODUCE).response.new(responses=[s["TopicProduceResponse"].new(
            name="t", partition_responses=[
                s["PartitionProduceResponse"].new(index=0,
                                                  error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER),
                s["PartitionProduceResponse"].new(index=1,
                                                  error_code=ErrorCode.MESSAGE_TOO_LARGE)])])

    async def body(fake: FakeKafka) -> Any:
        fake.add_topic("t", 2)
        fake.hook = hook
        async with KafkaAdmin(fake.address, timeout=2) as admin:
            got = await send_batches(admin, {("t", 0): batch(b"a"), ("t", 1): batch(b"b")},
                                     retries=3, backoff=0.01)
        assert got[("t", 0)].error == ErrorCode.NONE
        assert got[("t", 1)].error == ErrorCode.MESSAGE_TOO_LARGE
        assert [r.value for r in fake.records("t", 0)] == [b"a"]
        assert fake.records("t", 1) == []
        produces = [h for h in fake.seen if h.api_key == ApiKey.PRODUCE]
        metadatas = [h for h in fake.seen if h.api_key == ApiKey.METADATA]
        assert len(produces) == 2 and len(metadatas) == 2
    run(body)


def test_send_batches_gives_up_after_its_retries_with_the_last_error() -> None:
    async def body(fake: FakeKafka) -> Any:
        fake.add_topic("t", 1)
        async with KafkaAdmin(fake.address, timeout=2) as admin:
            got = await send_batches(admin, {("t", 3): batch(b"a")}, retries=2, backoff=0.01)
        # partition 3 does not exist: no leader in any metadata, never sent
        assert got[("t", 3)].error == ErrorCode.LEADER_NOT_AVAILABLE
        assert not [h for h in fake.seen if h.api_key == ApiKey.PRODUCE]
        assert len([h for h in fake.seen if h.api_key == ApiKey.METADATA]) == 3
    run(body)
