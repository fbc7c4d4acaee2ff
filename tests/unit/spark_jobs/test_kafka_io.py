"""spark_jobs.kafka_io / kafka_requests against the in-test broker (FakeKafka): the
blocking bridge over client.verbs, its leader routing, retries and error messages.

KafkaIO runs its own event loop in a thread; the fake serves on the test's loop,
so every blocking call goes through ``asyncio.to_thread``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from protocol import records
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api
from spark_jobs.kafka_io import ClientConfig, KafkaIO, KafkaIOError, TopicGone
from tests.unit.client.test_client import FakeKafka, run


def batch(*values: bytes) -> bytes:
    return bytes(records.build_batch([(None, v, 1_700_000_000_000) for v in values]))


def kafka_io(fake: FakeKafka, **kwargs: Any) -> KafkaIO:
    return KafkaIO(ClientConfig(fake.address, request_timeout_s=kwargs.pop("timeout", 2.0),
                                retry_backoff_s=0.01, **kwargs))


def values_of(chunks: list[tuple[bytes, int]], end: int) -> list[bytes | None]:
    return [r.value for buf, pos in chunks for at, h in records.iter_batches(buf)
            for r in records.iter_records(buf[at:at + h.size]) if pos <= r.offset < end]


def test_produce_offsets_fetch_range_and_metadata() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.add_topic("t", 2)
        fake.add_topic("__internal", 1)
        with kafka_io(fake) as io:
            sent = await asyncio.to_thread(io.produce, {("t", 0): batch(b"a", b"b"),
                                                        ("t", 1): batch(b"c")})
            assert sent == {("t", 0): 0, ("t", 1): 0}
            assert await asyncio.to_thread(io.produce, {("t", 0): batch(b"d")}, acks=1) == {
                ("t", 0): 2}
            assert await asyncio.to_thread(io.latest, [("t", 0), ("t", 1)]) == {
                ("t", 0): 3, ("t", 1): 1}
            assert await asyncio.to_thread(io.earliest, [("t", 0)]) == {("t", 0): 0}
            got = await asyncio.to_thread(lambda: list(io.fetch_range("t", 0, 1, 3)))
            assert values_of(got, 3) == [b"b", b"d"]
            res = await asyncio.to_thread(io.fetch, "t", 1, 0)
            assert (res.error, res.high_watermark) == (0, 1)
            assert await asyncio.to_thread(io.partitions, ["t", "nope"]) == {"t": [0, 1]}
            assert await asyncio.to_thread(io.all_topics) == {"t": [0, 1]}
            assert await asyncio.to_thread(io.partition_counts, ["auto"]) == {"auto": 2}
            assert io.cluster is not None and "auto" in io.cluster.topics
    run(body)


def test_retriable_errors_are_retried_until_they_clear() -> None:
    failures = {ApiKey.PRODUCE: 2, ApiKey.LIST_OFFSETS: 2}

    def hook(header: RequestHeader, req: Struct) -> Struct | None:
        if failures.get(header.api_key, 0) <= 0:
            return None
        failures[header.api_key] -= 1
        spec = api(header.api_key).response
        s = spec.structs
        if header.api_key == ApiKey.PRODUCE:
            return spec.new(responses=[s["TopicProduceResponse"].new(
                name="t", partition_responses=[s["PartitionProduceResponse"].new(
                    index=0, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)])])
        return spec.new(topics=[s["ListOffsetsTopicResponse"].new(name="t", partitions=[
            s["ListOffsetsPartitionResponse"].new(
                partition_index=0, error_code=ErrorCode.LEADER_NOT_AVAILABLE)])])

    async def body(fake: FakeKafka) -> None:
        fake.add_topic("t", 1)
        fake.hook = hook
        with kafka_io(fake) as io:
            assert await asyncio.to_thread(io.produce, {("t", 0): batch(b"x")}) == {("t", 0): 0}
            assert await asyncio.to_thread(io.latest, [("t", 0)]) == {("t", 0): 1}
        assert failures == {ApiKey.PRODUCE: 0, ApiKey.LIST_OFFSETS: 0}
        metadata = sum(1 for h in fake.seen if h.api_key == ApiKey.METADATA)
        assert metadata >= 3          # the first look-up, then a refresh before each retry
    run(body)


def test_final_errors_and_deadlines_keep_their_messages() -> None:
    def hook(header: RequestHeader, req: Struct) -> Struct | None:
        spec = api(header.api_key).response
        s = spec.structs
        if header.api_key == ApiKey.PRODUCE:
            error = ErrorCode.RECORD_LIST_TOO_LARGE if req.topic_data[0].name == "big" \
                else ErrorCode.NOT_ENOUGH_REPLICAS
            return spec.new(responses=[s["TopicProduceResponse"].new(
                name=req.topic_data[0].name, partition_responses=[
                    s["PartitionProduceResponse"].new(index=0, error_code=error,
                                                      error_message="told so")])])
        return None

    async def body(fake: FakeKafka) -> None:
        fake.add_topic("big", 1)
        fake.add_topic("slow", 1)
        fake.hook = hook
        with kafka_io(fake, timeout=0.3) as io:
            with pytest.raises(KafkaIOError, match=r"Produce to big-0 failed: "
                                                   r"RECORD_LIST_TOO_LARGE told so"):
                await asyncio.to_thread(io.produce, {("big", 0): batch(b"x")})
            with pytest.raises(KafkaIOError, match=r"Produce did not succeed within 0.3 s: "
                                                   r"slow-0: NOT_ENOUGH_REPLICAS"):
                await asyncio.to_thread(io.produce, {("slow", 0): batch(b"x")})
            with pytest.raises(TopicGone, match="topic-partition gone-0 does not exist"):
                await asyncio.to_thread(io.fetch, "gone", 0, 0)
    run(body)


def test_a_broker_without_the_needed_versions_is_a_plain_error() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.add_topic("t", 1)
        with kafka_io(fake) as io:
            with pytest.raises(KafkaIOError, match=r"lacks Produce v3\+"):
                await asyncio.to_thread(io.produce, {("t", 0): batch(b"x")})
            with pytest.raises(KafkaIOError, match=r"lacks ListOffsets v1\+"):
                await asyncio.to_thread(io.latest, [("t", 0)])
            with pytest.raises(KafkaIOError, match=r"lacks Fetch v4\+"):
                await asyncio.to_thread(io.fetch, "t", 0, 0)
    versions = {ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (0, 9), ApiKey.PRODUCE: (0, 2),
                ApiKey.LIST_OFFSETS: (0, 0), ApiKey.FETCH: (0, 3)}
    run(body, versions=versions)
