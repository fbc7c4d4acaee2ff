"""Data-path handlers in-process, through the real codec at many versions."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from broker.dispatch import CLOSE_CONNECTION, NO_RESPONSE
from protocol import legacy_records, records
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch

from tests.unit.broker.replication.fakes import FakeBroker, FakeClock, call, struct

NOW = FakeClock().now_ms
P, F = ApiKey.PRODUCE, ApiKey.FETCH


def produce(b: FakeBroker, version: int, data: Any, *, acks: int = -1, topic: str = "t",
            partition: int = 0) -> Any:
    part = struct(P, "PartitionProduceData", index=partition, records=data)
    td = struct(P, "TopicProduceData", name=topic, partition_data=[part])
    return asyncio.run(call(b, P, version, acks=acks, timeout_ms=1000, topic_data=[td]))


def fetch(b: FakeBroker, version: int, offset: int = 0, *, topic: str = "t", session: tuple[int, int] = (0, -1),
          forgotten: list[Any] | None = None, topic_id: uuid.UUID | None = None, max_bytes: int = 1 << 20,
          partitions: list[tuple[int, int]] | None = None) -> Any:
    parts = [struct(F, "FetchPartition", partition=p, fetch_offset=o, partition_max_bytes=max_bytes)
             for p, o in (partitions if partitions is not None else [(0, offset)])]
    topics = [struct(F, "FetchTopic", topic=topic, topic_id=topic_id or b.metadata.ids.get(topic, uuid.uuid4()),
                     partitions=parts)] if parts else []
    return asyncio.run(call(b, F, version, max_wait_ms=0, min_bytes=1, max_bytes=max_bytes,
                            session_id=session[0], session_epoch=session[1], topics=topics,
                            forgotten_topics_data=forgotten or []))


@pytest.fixture
def b(tmp_path: Path) -> FakeBroker:
    broker = FakeBroker(tmp_path)
    broker.lead("t", partitions=2)
    return broker


@pytest.mark.parametrize("version", [3, 7, 9, 11])
def test_produce_then_fetch_v2_batches(b: FakeBroker, version: int) -> None:
    r = produce(b, version, build_batch([(b"k", b"v", NOW), (None, b"w", NOW)]))
    part = r.responses[0].partition_responses[0]
    assert (part.error_code, part.base_offset) == (0, 0)
    r = produce(b, version, build_batch([(b"k", b"v2", NOW)]))
    assert r.responses[0].partition_responses[0].base_offset == 2
    for fv in (4, 11, 12, 13, 17):
        resp = fetch(b, fv)
        pd = resp.responses[0].partitions[0]
        assert pd.error_code == 0 and pd.high_watermark == 3
        values = [rec.value for rec in records.iter_all_records(bytes(pd.records))]
        assert values == [b"v", b"w", b"v2"]


def test_produce_acks0_has_no_response(b: FakeBroker) -> None:
    assert produce(b, 9, build_batch([(None, b"v", NOW)]), acks=0) is NO_RESPONSE
    assert b.replicas.partition("t", 0).log_end_offset == 1


def test_produce_acks0_failure_asks_to_close_the_connection(b: FakeBroker) -> None:
    """A failed acks=0 produce cannot say so in a response: the handler asks the
    connection to close (the client then refreshes its metadata), as Kafka."""
    r = produce(b, 9, build_batch([(None, b"v", NOW)]), acks=0, topic="nope")
    assert r is CLOSE_CONNECTION


def test_produce_errors(b: FakeBroker) -> None:
    bad = build_batch([(None, b"v", NOW)])
    bad[30] ^= 0xFF
    assert produce(b, 9, bad).responses[0].partition_responses[0].error_code == ErrorCode.CORRUPT_MESSAGE
    two = build_batch([(None, b"v", NOW)]) * 2
    assert produce(b, 9, two).responses[0].partition_responses[0].error_code == ErrorCode.INVALID_RECORD
    r = produce(b, 9, build_batch([(None, b"v", NOW)]), topic="nope")
    assert r.responses[0].partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(b, 9, build_batch([(None, b"v", NOW)]), acks=2).responses[0].partition_responses[0].error_code == ErrorCode.INVALID_REQUIRED_ACKS
    assert b.replicas.partition("t", 0).log_end_offset == 0


def test_not_leader_carries_current_leader_v10(b: FakeBroker) -> None:
    b.lead("f", replicas=(1, 2), leader=2)
    from tests.unit.broker.replication.fakes import BrokerMeta
    b.metadata.nodes[2] = BrokerMeta(2, "h2", 9093, "r2")
    r = produce(b, 10, build_batch([(None, b"v", NOW)]), topic="f")
    part = r.responses[0].partition_responses[0]
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (2, 0)
    assert [(n.node_id, n.host, n.port, n.rack) for n in r.node_endpoints] == [(2, "h2", 9093, "r2")]


@pytest.mark.parametrize("pv,magic", [(0, 0), (1, 0), (2, 1)])
def test_legacy_produce_and_fetch(b: FakeBroker, pv: int, magic: int) -> None:
    ts = NOW if magic else -1
    msgs = b"".join(legacy_records.encode_message(i, magic, 0, ts, b"k", b"v%d" % i) for i in range(3))
    r = produce(b, pv, msgs)
    assert r.responses[0].partition_responses[0].error_code == 0
    for fv, fmagic in ((0, 0), (1, 0), (2, 1), (3, 1)):
        pd = fetch(b, fv, 1).responses[0].partitions[0]
        got = list(legacy_records.iter_records(bytes(pd.records)))
        assert [(m.offset, m.value, m.magic) for m in got] == [(1, b"v1", fmagic), (2, b"v2", fmagic)]


def test_idempotent_duplicate_gets_original_offset(b: FakeBroker) -> None:
    first = build_batch([(None, b"a", NOW)], producer_id=5, producer_epoch=0, base_sequence=0)
    assert produce(b, 9, first).responses[0].partition_responses[0].base_offset == 0
    produce(b, 9, build_batch([(None, b"b", NOW)], producer_id=5, producer_epoch=0, base_sequence=1))
    again = produce(b, 9, first).responses[0].partition_responses[0]
    assert (again.error_code, again.base_offset) == (0, 0)
    gap = build_batch([(None, b"c", NOW)], producer_id=5, producer_epoch=0, base_sequence=5)
    assert produce(b, 9, gap).responses[0].partition_responses[0].error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert b.replicas.partition("t", 0).log_end_offset == 2


def test_fetch_sessions_full_incremental_and_errors(b: FakeBroker) -> None:
    produce(b, 9, build_batch([(None, b"a", NOW)]))
    full = fetch(b, 12, partitions=[(0, 0), (1, 0)], session=(0, 0))
    sid = full.session_id
    assert sid != 0 and len(full.responses[0].partitions) == 2
    # nothing changed: an incremental fetch answers no partitions
    inc = fetch(b, 12, partitions=[(0, 1)], session=(sid, 1))
    assert inc.error_code == 0 and inc.session_id == sid and inc.responses == []
    produce(b, 9, build_batch([(None, b"b", NOW)]), partition=1)
    inc = fetch(b, 12, partitions=[], session=(sid, 2))
    assert [(p.partition_index, p.high_watermark) for p in inc.responses[0].partitions] == [(1, 1)]
    assert fetch(b, 12, partitions=[], session=(sid, 2)).error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert fetch(b, 12, partitions=[], session=(12345, 1)).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert fetch(b, 13, partitions=[], session=(sid, 3)).error_code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    forget = [struct(F, "ForgottenTopic", topic="t", partitions=[0, 1])]
    closed = fetch(b, 12, partitions=[], session=(sid, 3), forgotten=forget)
    assert closed.session_id == 0
    assert fetch(b, 12, partitions=[], session=(sid, 4)).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_fetch_unknown_topic_id(b: FakeBroker) -> None:
    r = fetch(b, 13, topic_id=uuid.uuid4())
    assert r.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_list_offsets_versions(b: FakeBroker) -> None:
    for ts in (100, 300):
        produce(b, 9, build_batch([(None, b"v", ts)]))
    L = ApiKey.LIST_OFFSETS

    def lo(version: int, timestamp: int, **kw: Any) -> Any:
        part = struct(L, "ListOffsetsPartition", partition_index=0, timestamp=timestamp, **kw)
        topic = struct(L, "ListOffsetsTopic", name="t", partitions=[part])
        return asyncio.run(call(b, L, version, replica_id=-1, topics=[topic])).topics[0].partitions[0]
    assert lo(0, -1, max_num_offsets=5).old_style_offsets[0] == 2
    assert lo(0, -2, max_num_offsets=5).old_style_offsets == [0]
    assert (lo(1, -1).offset, lo(1, -2).offset, lo(1, 200).offset) == (2, 0, 1)
    p = lo(7, -3)
    assert (p.offset, p.timestamp, p.leader_epoch) == (1, 300, 0)
    assert lo(4, -1, current_leader_epoch=7).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_offset_for_leader_epoch_and_delete_records(b: FakeBroker) -> None:
    produce(b, 9, build_batch([(None, b"v", NOW)] * 2))
    b.lead("t", partitions=2)  # epoch 1 starts at offset 2
    produce(b, 9, build_batch([(None, b"v", NOW)]))
    O = ApiKey.OFFSET_FOR_LEADER_EPOCH
    for version in range(5):
        part = struct(O, "OffsetForLeaderPartition", partition=0, leader_epoch=0, current_leader_epoch=1)
        topic = struct(O, "OffsetForLeaderTopic", topic="t", partitions=[part])
        r = asyncio.run(call(b, O, version, topics=[topic])).topics[0].partitions[0]
        assert (r.error_code, r.end_offset) == (0, 2)
        if version >= 1:
            assert r.leader_epoch == 0
    D = ApiKey.DELETE_RECORDS
    part = struct(D, "DeleteRecordsPartition", partition_index=0, offset=2)
    r = asyncio.run(call(b, D, 2, topics=[struct(D, "DeleteRecordsTopic", name="t", partitions=[part])],
                         timeout_ms=1000))
    assert (r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].low_watermark) == (0, 2)


def test_init_producer_id(b: FakeBroker) -> None:
    I = ApiKey.INIT_PRODUCER_ID
    ids = [asyncio.run(call(b, I, v, transactional_id=None, transaction_timeout_ms=1000)) for v in range(6)]
    assert [(r.error_code, r.producer_epoch) for r in ids] == [(0, 0)] * 6
    assert len({r.producer_id for r in ids}) == 6 and b.cluster.calls == 1
    r = asyncio.run(call(b, I, 4, transactional_id="tx", transaction_timeout_ms=1000))
    assert r.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE     # no coordinator built


def test_init_producer_id_with_a_transactional_id(b: FakeBroker) -> None:
    from coordinator.transaction import TransactionCoordinator, TransactionStateManager
    from tests.unit.coordinator.transaction.test_state_manager import MemoryLog
    I = ApiKey.INIT_PRODUCER_ID

    async def body() -> None:
        state = TransactionStateManager(MemoryLog(), lambda: 1, clock=lambda: 5)
        b.transaction_coordinator = TransactionCoordinator(
            state, b.producer_ids.generate_producer_id, max_timeout_ms=60000, clock=lambda: 5)
        state.on_become_leader(0, 0)
        await asyncio.sleep(0)
        first = await call(b, I, 4, transactional_id="tx", transaction_timeout_ms=1000)
        again = await call(b, I, 4, transactional_id="tx", transaction_timeout_ms=1000)
        assert (first.error_code, first.producer_epoch) == (0, 0)
        assert (again.error_code, again.producer_id, again.producer_epoch) == \
            (0, first.producer_id, 1)                     # the older producer is fenced
        stale = dict(transactional_id="tx", transaction_timeout_ms=1000,
                     producer_id=first.producer_id + 1, producer_epoch=0)
        assert (await call(b, I, 4, **stale)).error_code == ErrorCode.PRODUCER_FENCED
        assert (await call(b, I, 3, **stale)).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        too_long = await call(b, I, 4, transactional_id="tx", transaction_timeout_ms=60001)
        assert too_long.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
        empty = await call(b, I, 4, transactional_id="", transaction_timeout_ms=1000)
        assert empty.error_code == ErrorCode.INVALID_REQUEST
    asyncio.run(body())
