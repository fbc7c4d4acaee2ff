"""spark_jobs.replay_topic: the replay's produce path over client.producer.send_batches
against the in-test broker (FakeKafka): records counted, errors as RuntimeError."""

from __future__ import annotations

import pytest

from client import KafkaAdmin
from client.partitioner import partition_for_key
from protocol import records
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api
from spark_jobs import replay_topic
from spark_jobs.segments import Segment
from tests.unit.client.test_client import FakeKafka, run


def builders(**counts: int) -> dict[int, records.BatchBuilder]:
    out = {}
    for name, n in counts.items():
        b = records.BatchBuilder()
        for i in range(n):
            b.append(f"k{i}".encode(), b"v", 1_700_000_000_000 + i, [("h", b"x")])
        out[int(name[1:])] = b
    return out


def failing(error: int, times: int = 1 << 30) -> tuple[dict[str, int], object]:
    left = {"n": times}

    def hook(header: RequestHeader, req: Struct) -> Struct | None:
        if header.api_key != ApiKey.PRODUCE or left["n"] <= 0:
            return None
        left["n"] -= 1
        spec = api(ApiKey.PRODUCE).response
        s = spec.structs
        return spec.new(responses=[s["TopicProduceResponse"].new(
            name=td.name, partition_responses=[s["PartitionProduceResponse"].new(
                index=pd.index, error_code=error, error_message="told so")
                for pd in td.partition_data]) for td in req.topic_data])
    return left, hook


def test_send_counts_records_and_retries_retriable_errors() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.add_topic("t", 2)
        left, fake.hook = failing(ErrorCode.NOT_LEADER_OR_FOLLOWER, times=1)
        async with KafkaAdmin(fake.address) as admin:
            assert await replay_topic._partition_count(admin, "t") == 2
            assert await replay_topic._send(admin, "t", builders(p0=3, p1=2)) == 5
        assert left["n"] == 0
        assert [r.key for r in fake.records("t", 0)] == [b"k0", b"k1", b"k2"]
        assert [r.headers for r in fake.records("t", 1)] == [[("h", b"x")]] * 2
    run(body)


def test_send_raises_on_a_final_error_and_when_retries_run_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay_topic, "PRODUCE_RETRIES", 2)

    async def body(fake: FakeKafka) -> None:
        fake.add_topic("t", 1)
        async with KafkaAdmin(fake.address) as admin:
            _, fake.hook = failing(ErrorCode.RECORD_LIST_TOO_LARGE)
            with pytest.raises(RuntimeError, match="produce to t-0: RECORD_LIST_TOO_LARGE: told so"):
                await replay_topic._send(admin, "t", builders(p0=1))
            _, fake.hook = failing(ErrorCode.NOT_ENOUGH_REPLICAS)
            with pytest.raises(RuntimeError, match=r"produce to t: partitions \[0\] still failing"):
                await replay_topic._send(admin, "t", builders(p0=1))
            fake.auto_create = False
            with pytest.raises(RuntimeError, match="target topic 'nope' does not exist"):
                await replay_topic._partition_count(admin, "nope")
    run(body)


def test_target_partition_keeps_the_source_partition_when_it_can() -> None:
    seg = Segment("src", 3, "/x.log", 0, 0, 10, 100)
    assert replay_topic._target_partition(seg, b"key", 4) == 3
    assert replay_topic._target_partition(seg, None, 2) == 1
    assert replay_topic._target_partition(seg, b"key", 2) == partition_for_key(b"key", 2)
