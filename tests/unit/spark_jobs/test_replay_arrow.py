"""spark_jobs.replay_arrow / replay_parquet: the vectorised decoder agrees with the
per-record one (protocol.records.iter_records) and the files hold what it decoded."""

from __future__ import annotations

import gzip
import random
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import records
from spark_jobs import replay_arrow, replay_inflate, replay_parquet, rows, segments
from storage import checkpoints, filenames
from storage.config import LogConfig
from storage.log import PartitionLog

Expected = list[tuple[int, int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]


def _record(rng: random.Random, i: int, big: bool = True
            ) -> tuple[bytes | None, bytes | None, int, list]:
    key = None if rng.random() < 0.2 else rng.randbytes(rng.choice([0, 3, 70, 200]))
    sizes = [0, 1, 63, 64, 900, 20000] if big else [0, 1, 63, 64, 900]
    value = None if rng.random() < 0.2 else rng.randbytes(rng.choice(sizes))
    headers = [(rng.choice(["h", "ключ", "", "x" * 80]),
                None if rng.random() < 0.3 else rng.randbytes(rng.choice([0, 5, 130])))
               for _ in range(rng.choice([0, 0, 1, 2, 5]))]
    return key, value, rng.choice([-5000, 0, 1, 10 ** 9]) + i, headers


def _log(rng: random.Random, batches: int, codec: int, base: int = 0,
         big: bool = True) -> bytearray:
    out = bytearray()
    for b in range(batches):
        append = rng.random() < 0.2
        builder = records.BatchBuilder(codec=codec, base_offset=base, timestamp_type=(
            records.LOG_APPEND_TIME if append else records.CREATE_TIME))
        for i in range(rng.choice([1, 2, 7, 130] if big else [1, 2, 7])):
            builder.append(*_record(rng, i, big))
        batch = builder.build()
        if append:
            records.set_log_append_time(batch, 0, 1_700_000_000_000 + b)
        base = records.read_header(batch).next_offset
        out += batch
    return out


def _truth(buf: bytes | bytearray) -> Expected:
    got: Expected = []
    for pos, header in records.iter_batches(buf):
        if header.is_control:
            continue
        for r in records.iter_records(buf, pos):
            got.append((r.offset, r.timestamp, header.timestamp_type, r.key, r.value, r.headers))
    return got


def _decoded(buf: bytes | bytearray, lo: int = 0, hi: int = 1 << 62,
             from_ts: int | None = None, to_ts: int | None = None,
             run_bytes: int = replay_arrow.RUN_BYTES) -> Expected:
    triples = ((buf, pos, h) for pos, h in records.iter_batches(buf))
    got: Expected = []
    for batch in replay_arrow.arrow_runs(triples, lo, hi, from_ts, to_ts, "t", 3,
                                         rows.arrow_schema(), run_bytes):
        d = batch.to_pydict()
        assert set(d["topic"]) <= {"t"} and set(d["partition"]) <= {3}
        for i in range(batch.num_rows):
            ts = round(d["timestamp"][i].timestamp() * 1000)
            got.append((d["offset"][i], ts, d["timestampType"][i], d["key"][i], d["value"][i],
                        [(h["key"], h["value"]) for h in d["headers"][i]]))
    return got


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_every_codec_matches_the_record_decoder(codec: int) -> None:
    buf = _log(random.Random(codec), 12, codec)
    assert _decoded(buf) == _truth(buf)
    assert _decoded(buf, run_bytes=1) == _truth(buf)   # one batch per run; the buffer grows


def test_gzip_without_libdeflate_decodes_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = _log(random.Random(11), 12, 1)
    with_lib = _decoded(buf)
    monkeypatch.setattr(replay_inflate, "available", lambda: False)
    assert _decoded(buf) == with_lib == _truth(buf)


@pytest.mark.skipif(not replay_inflate.available(), reason="no libdeflate on this machine")
def test_gunzip_into_takes_exactly_one_valid_member() -> None:
    data = b"record bytes " * 1000
    member = gzip.compress(data, mtime=0)
    src = np.frombuffer(member + member, np.uint8)
    out = np.zeros(len(data) + 1, np.uint8)
    addr = out.ctypes.data
    assert replay_inflate.gunzip_into(src.ctypes.data, len(member), addr, len(out)) == len(data)
    assert out[:len(data)].tobytes() == data
    assert replay_inflate.gunzip_into(src.ctypes.data, 2 * len(member), addr, len(out)) is None
    assert replay_inflate.gunzip_into(src.ctypes.data, len(member), addr, len(data) - 1) is None
    bad = bytearray(member)
    bad[-5] ^= 1                                       # CRC-32 no longer matches
    bad_src = np.frombuffer(bytes(bad), np.uint8)
    assert replay_inflate.gunzip_into(bad_src.ctypes.data, len(bad), addr, len(out)) is None


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10 ** 6), lo=st.integers(0, 300), span=st.integers(0, 300))
def test_offset_bounds_are_half_open(seed: int, lo: int, span: int) -> None:
    buf = _log(random.Random(seed), 4, 1)
    want = [r for r in _truth(buf) if lo <= r[0] < lo + span]
    assert _decoded(buf, lo, lo + span) == want


def test_timestamp_bounds() -> None:
    buf = _log(random.Random(7), 10, 0)
    truth = _truth(buf)
    lo, hi = sorted(r[1] for r in truth)[len(truth) // 3:len(truth) // 3 + 2]
    assert _decoded(buf, from_ts=lo, to_ts=hi + 1) == [r for r in truth if lo <= r[1] <= hi]


def test_control_batches_are_skipped() -> None:
    marker = records.build_control_batch(commit=True, producer_id=7, producer_epoch=0,
                                         coordinator_epoch=0, timestamp=5)
    records.patch_base_offset(marker, 0, 2)
    buf = records.build_batch([(b"a", b"1", 1), (b"b", b"2", 2)]) + marker
    tail = records.BatchBuilder(base_offset=3)
    tail.append(b"c", b"3", 3)
    buf += tail.build()
    assert [r[0] for r in _decoded(buf)] == [0, 1, 3]


def test_multi_member_gzip_falls_back_to_the_full_decoder() -> None:
    body = bytearray()
    one = records.build_batch([(b"k", b"v" * 10, 5, [("h", b"x")]), (None, None, 6)])
    header = records.read_header(one)
    body = bytes(records.batch_body(one, 0, header))
    half = len(body) // 2
    packed = gzip.compress(body[:half], mtime=0) + gzip.compress(body[half:], mtime=0)
    batch = bytearray(one[:records.HEADER_SIZE]) + packed
    batch[records.ATTRIBUTES_AT + 1] |= 1                      # codec gzip (low byte)
    batch[records.LENGTH_AT:records.LENGTH_AT + 4] = \
        (len(batch) - records.LOG_OVERHEAD).to_bytes(4, "big")
    assert zlib.decompress(packed, 31) != body                 # zlib alone stops at member 1
    assert _decoded(batch) == _truth(batch) and len(_truth(batch)) == 2


@pytest.mark.parametrize("cut", [1, 2, 9])
def test_corrupt_records_raise(cut: int) -> None:
    builder = records.BatchBuilder()
    for i in range(5):
        builder.append(b"key", b"value-%d" % i, i, [("h", b"v")])
    batch = builder.build()
    body = bytearray(records.batch_body(batch, 0))
    body[0] += cut * 2                 # zig-zag: the first record claims `cut` more bytes
    bad = batch[:records.HEADER_SIZE] + body
    with pytest.raises(records.CorruptRecordError):
        replay_arrow.decode_bodies([bytes(body)], [records.read_header(bad)],
                                   rows.arrow_schema().field("headers").type)


def test_read_varints_matches_the_scalar_reader() -> None:
    from protocol.primitives import read_varint, write_varint
    values = [0, -1, 1, 63, -64, 64, 300, -300, 2 ** 31 - 1, -2 ** 31, 2 ** 62, -2 ** 63]
    out = bytearray()
    at = []
    for v in values:
        at.append(len(out))
        write_varint(out, v)
    buf = np.frombuffer(bytes(out) + bytes(replay_arrow.PAD), np.uint8)
    got, used = replay_arrow.read_varints(buf, np.array(at, np.int64))
    assert got.tolist() == values
    assert [a + u for a, u in zip(at, used.tolist())] == [read_varint(out, a)[1] for a in at]


def test_segment_files_round_trip(tmp_path: Path) -> None:
    """plan() over a log dir, write_segment per task, the files read back in offset order."""
    log_dir = tmp_path / "logs"
    log = PartitionLog.open(str(log_dir / "t-0"), LogConfig(segment_bytes=30_000))
    rng = random.Random(3)
    try:
        for _ in range(40):
            log.append(_log(rng, 1, 1, big=False), leader_epoch=0)
        log.flush()
        end = log.log_end_offset
    finally:
        log.close()
    truth = [r for seg in sorted((log_dir / "t-0").glob("*.log"))
             for r in _truth(seg.read_bytes())]
    checkpoints.write_offsets(str(log_dir / filenames.REPLICATION_CHECKPOINT),
                              {("t", 0): end - 3})
    bounds = segments.make_bounds("5", None)
    tasks = segments.plan([str(log_dir)], None, bounds)
    assert len(tasks) >= 2
    out = tmp_path / "out"
    rows = sum(replay_parquet.write_segment(seg, bounds, str(out)) for seg in tasks)
    want = [r for r in truth if 5 <= r[0] < end - 3]
    assert rows == len(want) > 0
    files = sorted(out.glob("topic=t/partition=0/*.parquet"))
    assert 2 <= len(files) <= len(tasks) and not list(out.glob("topic=t/partition=0/.*"))
    table = pa.concat_tables(pq.read_table(f) for f in files)
    assert table.column_names == ["key", "value", "offset", "timestamp", "timestampType",
                                  "headers"]
    assert replay_parquet.SPARK_SCHEMA_KEY in pq.read_schema(files[0]).metadata
    got = [(r["offset"], r["timestampType"], r["key"], r["value"],
            [(h["key"], h["value"]) for h in r["headers"]]) for r in table.to_pylist()]
    assert got == [(r[0], r[2], r[3], r[4], r[5]) for r in want]


def test_malformed_utf8_header_keys_become_replacement_characters() -> None:
    buf = records.build_batch([(b"k", b"v", 1, [("ok", b"1")]), (b"k", b"v", 2, [("x", b"2")])])
    at = bytes(buf).index(b"x")
    buf[at] = 0xFF                                   # not UTF-8 (CRCs are not checked here)
    got = _decoded(buf)
    assert [h for r in got for h in r[5]] == [("ok", b"1"), ("\ufffd", b"2")]


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10 ** 6), flips=st.lists(st.tuples(st.integers(0, 10 ** 6),
                                                               st.integers(0, 255)),
                                                     min_size=1, max_size=4))
def test_corrupt_bodies_raise_or_decode_like_the_record_decoder(
        seed: int, flips: list[tuple[int, int]]) -> None:
    """Bytes overwritten anywhere in a body: CorruptRecordError or the per-record decoder's
    answer - never another error, a crash, or a read outside the buffer."""
    rng = random.Random(seed)
    builder = records.BatchBuilder(base_offset=100)
    for i in range(rng.choice([1, 3, 9])):
        builder.append(*_record(rng, i, big=False))
    batch = builder.build()
    body = bytearray(records.batch_body(batch, 0))
    for at, byte in flips:
        body[at % len(body)] = byte
    bad = bytearray(batch[:records.HEADER_SIZE]) + body
    header = records.read_header(bad)
    try:
        want = [(r.offset, r.key, r.value) for r in records.iter_records(bad, 0)]
    except (records.RecordError, UnicodeDecodeError):
        want = None
    try:
        cols = replay_arrow.decode_bodies([bytes(body)], [header],
                                          rows.arrow_schema().field("headers").type)
    except records.CorruptRecordError:
        return
    got = list(zip(cols.offset.tolist(), cols.key.to_pylist(), cols.value.to_pylist()))
    assert got == want


def test_a_huge_header_count_is_corruption_not_an_allocation() -> None:
    """A record whose header count varint says 2^60 (found by the test above: numpy
    tried to allocate 2.5 EiB): CorruptRecordError."""
    builder = records.BatchBuilder(base_offset=0)
    builder.append(b"k", b"v", 1)
    batch = builder.build()
    body = bytearray(records.batch_body(batch, 0))
    assert body[-1] == 0                       # the only record's header count
    n = 1 << 60
    zigzag, huge = n << 1, bytearray()
    while zigzag >= 0x80:
        huge.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    huge.append(zigzag)
    body[-1:] = huge
    assert body[0] < 0x80                      # the record's length, one zigzag byte:
    body[0] += 2 * (len(huge) - 1)             # grown to match, so only the count is wrong
    bad = bytearray(batch[:records.HEADER_SIZE]) + body
    with pytest.raises(records.CorruptRecordError):
        replay_arrow.decode_bodies([bytes(body)], [records.read_header(bad)],
                                   rows.arrow_schema().field("headers").type)
