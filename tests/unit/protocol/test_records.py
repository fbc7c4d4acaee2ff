"""protocol.records against kafka-python's own v2 batch code, plus properties."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from protocol import compression
from protocol import records as R

CODECS = [c for c in (0, 1, 2, 3, 4) if c == 0 or compression.available(c)]

keys = st.one_of(st.none(), st.binary(max_size=40))
headers = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))),
                   max_size=3)
record_lists = st.lists(st.tuples(keys, keys, st.integers(0, 2**41), headers), min_size=1,
                        max_size=20)


def kp_build(recs: list, codec: int = 0, pid: int = -1, epoch: int = -1, seq: int = -1,
             txn: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=txn,
                                        producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                        batch_size=1 << 24)
    for i, (k, v, ts, hs) in enumerate(recs):
        assert builder.append(i, ts, k, v, hs) is not None
    return bytes(builder.build())


@pytest.mark.parametrize("codec", CODECS)
def test_reads_kafka_python_batches(codec: int) -> None:
    recs = [(b"k%d" % i, b"value-%d" % i * 30, 1_700_000_000_000 + i * 7, [("h", b"x"), ("n", None)])
            for i in range(40)]
    recs[3] = (None, None, recs[3][2], [])
    raw = kp_build(recs, codec, pid=77, epoch=3, seq=9, txn=True)
    [header] = R.validate(raw)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 3, 9)
    assert header.is_transactional and not header.is_control
    assert header.records_count == 40 and header.last_offset_delta == 39
    got = list(R.iter_records(raw))
    assert [(r.key, r.value, r.timestamp, r.headers) for r in got] == \
        [(k, v, ts, list(hs)) for k, v, ts, hs in recs]
    assert [r.offset for r in got] == list(range(40))


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_our_batches(codec: int) -> None:
    recs = [(b"key", b"v" * i, 5_000 + i, [("a", b"1")]) for i in range(25)]
    raw = R.build_batch(recs, codec=codec, producer_id=5, producer_epoch=1, base_sequence=100,
                        base_offset=1000, partition_leader_epoch=4)
    batch = DefaultRecordBatch(bytes(raw))
    assert batch.validate_crc()
    assert batch.base_offset == 1000 and batch.leader_epoch == 4
    assert batch.compression_type == codec and batch.producer_id == 5
    assert batch.base_sequence == 100 and batch.max_timestamp == 5_024
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch] == \
        [(1000 + i, ts, k, v, hs) for i, (k, v, ts, hs) in enumerate(recs)]


@settings(max_examples=60, deadline=None)
@given(record_lists)
def test_kafka_python_round_trip_property(recs: list) -> None:
    ours = R.build_batch(recs, partition_leader_epoch=0)  # kafka-python writes 0 there
    assert DefaultRecordBatch(bytes(ours)).validate_crc()
    theirs_read = [(r.key, r.value, r.timestamp, r.headers) for r in DefaultRecordBatch(bytes(ours))]
    assert theirs_read == [(k, v, ts, hs) for k, v, ts, hs in recs]
    theirs = kp_build(recs)
    assert bytes(ours) == theirs  # same encoding byte for byte (uncompressed)
    assert [(r.key, r.value, r.timestamp, r.headers) for r in R.iter_records(theirs)] == \
        [(k, v, ts, hs) for k, v, ts, hs in recs]


@settings(max_examples=40, deadline=None)
@given(st.lists(record_lists, min_size=1, max_size=5), st.integers(0, 2**40),
       st.integers(-1, 2**31 - 1))
def test_patching_keeps_crc_and_iterates(batches: list, base: int, epoch: int) -> None:
    buf = bytearray()
    for recs in batches:
        buf += R.build_batch(recs)
    expected = base
    for pos, header in R.iter_batches(buf):
        R.patch_base_offset(buf, pos, expected)
        R.patch_leader_epoch(buf, pos, epoch)
        expected += header.last_offset_delta + 1
    headers = R.validate(buf)
    assert all(h.partition_leader_epoch == epoch for h in headers)
    assert [r.offset for r in R.iter_all_records(buf)] == list(range(base, expected))
    # every proper prefix stops cleanly at the last complete batch
    cut = len(buf) - 1
    assert sum(1 for _ in R.iter_batches(buf[:cut])) == len(batches) - 1


def test_validate_rejects_damage() -> None:
    good = bytes(R.build_batch([(b"k", b"v", 1), (b"k2", b"v2", 2)]))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    with pytest.raises(R.CorruptRecordError, match="CRC"):
        R.validate(bad_crc)
    with pytest.raises(R.CorruptRecordError):
        R.validate(good[:-3])  # partial batch
    with pytest.raises(R.CorruptRecordError):
        R.validate(good + b"\x00" * 10)  # trailing garbage
    magic1 = bytearray(good)
    magic1[R.MAGIC_AT] = 1
    with pytest.raises(R.InvalidRecordError, match="magic"):
        R.validate(magic1)
    with pytest.raises(R.InvalidRecordError):
        R.validate(b"")


def _recrc(buf: bytearray) -> bytearray:
    struct.pack_into(">I", buf, R.CRC_AT, R.compute_crc(buf, 0, len(buf)))
    return buf


def test_validate_rejects_inconsistent_counts_and_control() -> None:
    good = R.build_batch([(b"k", b"v", 1), (b"k2", b"v2", 2)])
    wrong_count = bytearray(good)
    struct.pack_into(">i", wrong_count, 57, 1)
    with pytest.raises(R.InvalidRecordError, match="inconsistent"):
        R.validate(_recrc(wrong_count))
    too_many = bytearray(good)
    struct.pack_into(">i", too_many, 57, 1000)
    struct.pack_into(">i", too_many, 23, 999)
    with pytest.raises(R.CorruptRecordError, match="cannot fit"):
        R.validate(_recrc(too_many))
    control = R.build_control_batch(commit=True, producer_id=1, producer_epoch=0,
                                    coordinator_epoch=5, timestamp=10)
    with pytest.raises(R.InvalidRecordError, match="control"):
        R.validate(control)
    [header] = R.validate(control, from_client=False)
    assert header.is_control and header.is_transactional
    [rec] = R.iter_records(control)
    assert R.parse_control_key(rec.key) == (0, R.CONTROL_COMMIT)
    assert R.marker_of(control) == (R.CONTROL_COMMIT, 5) and R.marker_type(control) == 1
    assert R.marker_of(R.build_batch([(b"k", b"v", 1)])) is None
    no_seq = R.build_batch([(b"k", b"v", 1)], producer_id=9, producer_epoch=0, base_sequence=-1)
    with pytest.raises(R.InvalidRecordError, match="sequence"):
        R.validate(no_seq)


def test_validate_does_not_decompress(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = R.build_batch([(b"k", b"v" * 100, 1)] * 5, codec=1)

    def boom(*_a: object, **_k: object) -> bytes:
        raise AssertionError("validate must not decompress")
    monkeypatch.setattr(compression, "decompress", boom)
    [header] = R.validate(raw)
    assert header.compression == 1 and header.records_count == 5


def test_log_append_time_rewrites_crc_and_record_timestamps() -> None:
    buf = R.build_batch([(b"k", b"v", 100), (b"k", b"w", 300)])
    R.set_log_append_time(buf, 0, 9_999)
    [header] = R.validate(buf)
    assert header.timestamp_type == R.LOG_APPEND_TIME and header.max_timestamp == 9_999
    assert [r.timestamp for r in R.iter_records(buf)] == [9_999, 9_999]
    assert DefaultRecordBatch(bytes(buf)).validate_crc()


def test_corrupt_record_body_is_reported() -> None:
    buf = bytearray(R.build_batch([(b"key", b"value", 1)]))
    buf[R.HEADER_SIZE] = 0x7E  # record length varint now claims 63 bytes
    with pytest.raises(R.CorruptRecordError):
        list(R.iter_records(_recrc(buf)))
