"""Produce handler + ReplicaManager + Partition + a real log: record-level validation
(issue 17) reaches the response as Kafka 3.9 puts it there (KIP-467)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from protocol import compression, legacy_records
from protocol.api_keys import ApiKey
from protocol.compression import Codec
from protocol.errors import ErrorCode
from protocol.primitives import INT32, UINT32
from protocol.records import CRC_AT, HEADER_SIZE, build_batch, compute_crc
from storage.config import LogConfig
from tests.unit.broker.replication.fakes import FakeBroker, FakeClock, call, struct

NOW = FakeClock().now_ms
P = ApiKey.PRODUCE


def produce(b: FakeBroker, version: int, data: Any, topic: str = "t") -> Any:
    part = struct(P, "PartitionProduceData", index=0, records=data)
    td = struct(P, "TopicProduceData", name=topic, partition_data=[part])
    r = asyncio.run(call(b, P, version, acks=1, timeout_ms=1000, topic_data=[td]))
    return r.responses[0].partition_responses[0]


def broker(tmp_path: Path, **config: Any) -> FakeBroker:
    b = FakeBroker(tmp_path, config=LogConfig(**config))
    b.lead("t")
    return b


def leo(b: FakeBroker) -> int:
    return b.replicas.partition("t", 0).log_end_offset


@pytest.mark.parametrize("version", [8, 9, 11])
def test_record_errors_for_keyless_records_on_a_compacted_topic(tmp_path: Path, version: int) -> None:
    b = broker(tmp_path, cleanup_policy="compact")
    r = produce(b, version, build_batch([(b"k", b"v", NOW), (None, b"v", NOW)]))
    assert r.error_code == ErrorCode.INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in r.record_errors] == [
        (1, "Compacted topic cannot accept message without key in topic partition t-0")]
    assert "1 record errors in total" in r.error_message
    assert leo(b) == 0
    assert produce(b, version, build_batch([(b"k", b"v", NOW)])).error_code == 0


def test_v7_gets_the_code_only(tmp_path: Path) -> None:
    b = broker(tmp_path, cleanup_policy="compact,delete")
    r = produce(b, 7, build_batch([(None, b"v", NOW)]))
    assert r.error_code == ErrorCode.INVALID_RECORD and r.record_errors == []


def test_timestamp_bounds_and_the_deprecated_difference(tmp_path: Path) -> None:
    b = broker(tmp_path, message_timestamp_difference_max_ms=1000)
    r = produce(b, 9, build_batch([(b"k", b"v", NOW), (b"k", b"v", NOW + 5000)]))
    assert r.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [e.batch_index for e in r.record_errors] == [1]
    assert r.error_message == "One or more records have been rejected due to invalid timestamp"
    assert produce(b, 9, build_batch([(b"k", b"v", NOW - 999)])).error_code == 0


def test_before_max_ms_wins_over_difference(tmp_path: Path) -> None:
    b = broker(tmp_path, message_timestamp_before_max_ms=10_000,
               message_timestamp_difference_max_ms=1000)
    assert produce(b, 9, build_batch([(b"k", b"v", NOW - 5000)])).error_code == 0
    assert produce(b, 9, build_batch([(b"k", b"v", NOW + 5000)])).error_code == \
        ErrorCode.INVALID_TIMESTAMP  # after falls back to difference (1000)


def test_garbage_in_a_compressed_batch_is_invalid_record(tmp_path: Path) -> None:
    b = broker(tmp_path)
    good = build_batch([(b"k", b"v", NOW)], codec=Codec.LZ4)
    bad = bytearray(good[:HEADER_SIZE]) + compression.compress(Codec.LZ4, b"\x07" * 40)
    INT32.pack_into(bad, 8, len(bad) - 12)
    UINT32.pack_into(bad, CRC_AT, compute_crc(bad, 0, len(bad)))
    assert produce(b, 9, bad).error_code == ErrorCode.INVALID_RECORD
    assert leo(b) == 0


def test_a_bomb_is_corrupt_message(tmp_path: Path) -> None:
    b = broker(tmp_path, max_message_bytes=100_000)  # bound: max(64 x 100 kB, 16 MiB)
    bomb = build_batch([(b"k", bytes(17 * 1024 * 1024), NOW)], codec=Codec.ZSTD)
    r = produce(b, 9, bomb)
    assert r.error_code == ErrorCode.CORRUPT_MESSAGE and "inflates beyond" in r.error_message
    assert leo(b) == 0


def test_legacy_wrapper_bomb_is_corrupt_message(tmp_path: Path) -> None:
    b = broker(tmp_path)
    inner = legacy_records.encode_message(0, 1, 0, NOW, None, bytes(80 * 1024 * 1024))
    wrapper = legacy_records.encode_message(0, 1, Codec.GZIP, NOW, None,
                                            compression.compress(Codec.GZIP, inner))
    assert produce(b, 2, wrapper).error_code == ErrorCode.CORRUPT_MESSAGE
    assert leo(b) == 0
