"""protocol.legacy_records against kafka-python's legacy builder and reader, both directions."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.compression import Codec, compress, decompress
from protocol.legacy_records import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    CorruptLegacyMessage,
    InvalidLegacyMessage,
    UnsupportedLegacyCodec,
    downconvert,
    encode_message,
    iter_messages,
    iter_records,
    upconvert,
)

legacy = pytest.importorskip("kafka.record.legacy_records")
memory_records = pytest.importorskip("kafka.record.memory_records")
kcodec = pytest.importorskip("kafka.codec")

LEGACY_CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]
MAGICS = [0, 1]


def needs(codec: int, magic: int = 1) -> None:
    """Skip when kafka-python's codec module cannot do ``codec`` (it uses other packages)."""
    has = {Codec.NONE: True, Codec.GZIP: True, Codec.SNAPPY: kcodec.has_snappy(),
           Codec.LZ4: kcodec.has_lz4() and (magic or kcodec.xxhash is not None)}[Codec(codec)]
    if not has:
        pytest.skip(f"kafka-python cannot do codec {codec} here (pip install python-snappy lz4 xxhash)")


Row = tuple[int, int, bytes | None, bytes | None]


def rows(n: int, first: int = 0, ts: int = 1_700_000_000_000) -> list[Row]:
    return [(first + i, ts + 7 * i, None if i % 3 == 1 else b"key-%d" % i, None if i == 2 else
             b"value-%d-" % i * (i + 1)) for i in range(n)]


def kp_build(magic: int, codec: int, data: list[Row]) -> bytes:
    builder = legacy.LegacyRecordBatchBuilder(magic, codec, 1 << 30)
    for offset, ts, key, value in data:
        assert builder.append(offset, ts, key, value) is not None
    return bytes(builder.build())


def kp_read(data: bytes) -> list[tuple[int, int | None, int | None, bytes | None, bytes | None]]:
    """Every record kafka-python's reader finds in a legacy message set."""
    out = []
    records = memory_records.MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        for r in batch:
            assert r.validate_crc()
            out.append((r.offset, r.timestamp, r.timestamp_type, r.key, r.value))
    return out


# ----------------------------------------------------------------- kafka-python writes, we read

@pytest.mark.parametrize("magic", MAGICS)
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_read_kafka_python_sets(magic: int, codec: int) -> None:
    needs(codec, magic)
    data = rows(6)
    got = list(iter_records(kp_build(magic, codec, data)))
    # kafka-python leaves a compressed magic-1 wrapper at offset 0 ("not assigned"), so Kafka's
    # reader, and ours, keep the inner offsets, which it wrote as given.
    assert [(m.offset, m.key, m.value) for m in got] == [(o, k, v) for o, _, k, v in data]
    if magic == 0:
        assert all(m.timestamp == NO_TIMESTAMP and m.timestamp_type is None for m in got)
    else:
        assert [m.timestamp for m in got] == [t for _, t, _, _ in data]
        assert all(m.timestamp_type == CREATE_TIME for m in got)
    assert all(m.magic == magic and m.codec == Codec.NONE for m in got)


@pytest.mark.parametrize("magic", MAGICS)
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_upconvert_kafka_python_sets(magic: int, codec: int) -> None:
    needs(codec, magic)
    data = rows(5)
    up = upconvert(kp_build(magic, codec, data), base_offset=1000)
    assert up.codec == codec and up.magic == magic and up.shallow_count == (1 if codec else 5)
    want_ts = [t if magic else NO_TIMESTAMP for _, t, _, _ in data]
    assert up.records == [(1000 + i, want_ts[i], k, v, []) for i, (_, _, k, v) in enumerate(data)]
    assert up.max_timestamp == max(want_ts)


def test_upconverted_records_make_a_v2_batch() -> None:
    """The plain values are what a v2 builder takes (checked with kafka-python's)."""
    default = pytest.importorskip("kafka.record.default_records")
    up = upconvert(kp_build(1, Codec.GZIP, rows(4)), base_offset=0)
    builder = default.DefaultRecordBatchBuilder(2, Codec.GZIP, 0, -1, -1, -1, 1 << 20)
    for offset, ts, key, value, headers in up.records:
        builder.append(offset, ts, key, value, headers)
    batch = default.DefaultRecordBatch(bytes(builder.build()))
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch] == \
        [(o, t, k, v) for o, t, k, v, _ in up.records]


def test_upconvert_mixed_wrappers_keeps_order_and_last_codec() -> None:
    parts = [kp_build(1, Codec.GZIP, rows(3)), kp_build(1, Codec.NONE, rows(2, 3)),
             kp_build(1, Codec.GZIP, rows(2, 5))]
    up = upconvert(b"".join(parts))
    assert up.codec == Codec.GZIP and up.shallow_count == 4
    assert [r[2:4] for r in up.records] == [(k, v) for _, _, k, v in rows(3) + rows(2, 3) + rows(2, 5)]


def test_upconvert_keeps_offsets_without_base() -> None:
    up = upconvert(downconvert(rows(3, first=40), 1, codec=Codec.GZIP))
    assert [r[0] for r in up.records] == [40, 41, 42]
    assert upconvert(b"").records == [] and upconvert(b"").magic == -1


# ----------------------------------------------------------------- we write, kafka-python reads

@pytest.mark.parametrize("magic", MAGICS)
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_downconvert_read_by_kafka_python(magic: int, codec: int) -> None:
    needs(codec, magic)
    data = rows(7, first=500)
    got = kp_read(downconvert(data, magic, codec=codec))
    want_ts = (lambda t: t) if magic else (lambda t: None)
    assert got == [(o, want_ts(t), None if magic == 0 else CREATE_TIME, k, v)
                   for o, t, k, v in data]


@pytest.mark.parametrize("magic", MAGICS)
def test_uncompressed_bytes_identical_to_kafka_python(magic: int) -> None:
    data = rows(6, first=12)
    assert downconvert(data, magic) == kp_build(magic, Codec.NONE, data)


@pytest.mark.parametrize("magic", MAGICS)
@pytest.mark.parametrize("codec", LEGACY_CODECS[1:])
def test_compressed_wrapper_layout(magic: int, codec: int) -> None:
    data = [(10, 5000, b"a", b"x"), (12, 9000, None, b"y"), (15, 7000, b"c", None)]  # gaps
    out = downconvert(data, magic, codec=codec)
    [wrapper] = list(iter_messages(out))
    assert wrapper.offset == 15 and wrapper.key is None and wrapper.codec == codec
    assert wrapper.timestamp == (9000 if magic else NO_TIMESTAMP)  # max inner timestamp
    assert wrapper.value is not None
    inner = decompress(codec, wrapper.value, magic=magic)
    # magic 1: offsets relative to the first (KIP-31); magic 0: absolute. Byte for byte what
    # kafka-python's (uncompressed) builder writes for those inner offsets.
    base = 10 if magic else 0
    assert inner == kp_build(magic, Codec.NONE, [(o - base, t, k, v) for o, t, k, v in data])
    assert [m.offset for m in iter_records(out)] == [10, 12, 15]


def test_log_append_time_magic1() -> None:
    data = rows(4)
    for codec in (Codec.NONE, Codec.GZIP):
        out = downconvert(data, 1, codec=codec, timestamp_type=LOG_APPEND_TIME,
                          log_append_time=123_456)
        assert [(t, tt) for _, t, tt, _, _ in kp_read(out)] == [(123_456, LOG_APPEND_TIME)] * 4
        ours = list(iter_records(out))
        assert [(m.timestamp, m.timestamp_type) for m in ours] == [(123_456, LOG_APPEND_TIME)] * 4
        assert all(m.attributes & 0x08 for m in iter_messages(out))
    # Default append time: the largest record timestamp (a v2 LogAppendTime batch's max timestamp).
    out = downconvert(data, 1, timestamp_type=LOG_APPEND_TIME)
    assert {m.timestamp for m in iter_records(out)} == {max(t for _, t, _, _ in data)}


def test_wrapper_log_append_time_overrides_inner_timestamps() -> None:
    """A wrapper stamped LogAppendTime by a broker: inner timestamps read as the wrapper's."""
    inner = b"".join(encode_message(i, 1, 0, 111 + i, None, b"v") for i in range(3))
    wrapper = encode_message(52, 1, Codec.GZIP | 0x08, 999, None, compress(Codec.GZIP, inner))
    got = list(iter_records(wrapper))
    assert [(m.offset, m.timestamp, m.timestamp_type) for m in got] == \
        [(50, 999, LOG_APPEND_TIME), (51, 999, LOG_APPEND_TIME), (52, 999, LOG_APPEND_TIME)]
    assert [(o, t, tt) for o, t, tt, _, _ in kp_read(wrapper)] == \
        [(50, 999, 1), (51, 999, 1), (52, 999, 1)]


record_st = st.tuples(st.integers(0, 2**40), st.one_of(st.just(-1), st.integers(0, 2**45)),
                      st.none() | st.binary(max_size=40), st.none() | st.binary(max_size=200))


@settings(max_examples=80, deadline=None)
@given(raw=st.lists(record_st, max_size=12), magic=st.sampled_from(MAGICS),
       codec=st.sampled_from(LEGACY_CODECS), first=st.integers(0, 2**50))
def test_round_trip_property(raw: list[Row], magic: int, codec: int, first: int) -> None:
    data = [(first + i * 3, t, k, v) for i, (_, t, k, v) in enumerate(raw)]
    out = downconvert([r + ([("h", b"dropped")],) for r in data], magic, codec=codec)
    got = [(m.offset, m.timestamp, m.key, m.value) for m in iter_records(out)]
    assert got == [(o, t if magic else NO_TIMESTAMP, k, v) for o, t, k, v in data]
    if data:
        assert [r[2:4] for r in upconvert(out).records] == [(k, v) for _, _, k, v in data]
        if kcodec.has_snappy() and kcodec.has_lz4() and kcodec.xxhash is not None:
            assert [(o, k, v) for o, _, _, k, v in kp_read(out)] == [(o, k, v) for o, _, k, v in data]
    else:
        assert out == b""


# ----------------------------------------------------------------- down-conversion rules

def test_downconvert_refuses_zstd() -> None:
    with pytest.raises(UnsupportedLegacyCodec, match="zstd"):
        downconvert(rows(2), 1, codec=Codec.ZSTD)


def test_downconvert_first_offset_only_filters_uncompressed() -> None:
    data = rows(5, first=100)
    assert [m.offset for m in iter_records(downconvert(data, 1, first_offset=102))] == [102, 103, 104]
    assert [m.offset for m in iter_records(downconvert(data, 1, codec=Codec.GZIP, first_offset=102))] \
        == [100, 101, 102, 103, 104]
    assert downconvert(data, 0, first_offset=999) == b""


def test_downconvert_validates_input() -> None:
    with pytest.raises(ValueError, match="increase"):
        downconvert([(5, 0, None, b""), (5, 0, None, b"")], 1)
    with pytest.raises(ValueError, match="magic"):
        downconvert(rows(1), 2)


def test_downconvert_writes_a_timestamp_magic_1_cannot_hold_as_none() -> None:
    """A magic-2 record may carry any negative timestamp; a magic-1 message holds only
    -1 below zero: the record still goes to the old consumer, with no timestamp."""
    (m,) = list(iter_messages(downconvert([(5, -4611684318427387904, b"k", b"v")], 1)))
    assert (m.offset, m.timestamp, m.key, m.value) == (5, -1, b"k", b"v")


# ----------------------------------------------------------------- corrupt and invalid input

def good_set() -> bytes:
    return downconvert(rows(3), 1)


def test_crc_mismatch_detected() -> None:
    data = bytearray(good_set())
    data[-1] ^= 0x01
    with pytest.raises(CorruptLegacyMessage, match="CRC"):
        list(iter_records(bytes(data)))


@pytest.mark.parametrize("cut", [1, 11, 17, 30, -1])
def test_truncated_tail(cut: int) -> None:
    data = good_set()
    first = list(iter_messages(data))[0].size_in_bytes
    chopped = data[:first + cut] if cut > 0 else data[:cut]
    with pytest.raises(CorruptLegacyMessage, match="truncated|needs"):
        list(iter_messages(chopped))
    # A fetch response may end mid-message: allow_partial yields the whole ones.
    assert len(list(iter_records(chopped, allow_partial=True))) == (1 if cut > 0 else 2)


def _with_crc(offset: int, body: bytes) -> bytes:
    """An entry whose CRC is right, for bodies that are wrong in other ways."""
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def test_structural_errors_behind_a_good_crc() -> None:
    cases = {
        "size": struct.pack(">qiI", 0, 5, 0) + b"\x01" * 5,  # below the minimum
        "magic 2": struct.pack(">qiIbb", 0, 30, 0, 2, 0) + bytes(28),
        "overruns": _with_crc(0, b"\x00\x00" + struct.pack(">i", 50) + b"abc" + struct.pack(">i", -1)),
        "after its value": _with_crc(0, b"\x00\x00" + struct.pack(">ii", -1, 1) + b"v" + b"junk"),
    }
    for what, data in cases.items():
        with pytest.raises(CorruptLegacyMessage, match=what):
            list(iter_messages(data))


def test_wrapper_rules() -> None:
    def wrapper(inner: bytes, offset: int = 10, magic: int = 1, codec: int = Codec.GZIP) -> bytes:
        return encode_message(offset, magic, codec, 0, None, compress(codec, inner, magic=magic))

    inner1 = b"".join(encode_message(i, 1, 0, 5, None, b"x") for i in range(3))
    nested = encode_message(0, 1, Codec.GZIP, 0, None, compress(Codec.GZIP, inner1))
    cases: dict[str, bytes] = {
        "nested": wrapper(nested),
        "does not match wrapper magic": wrapper(b"".join(
            encode_message(i, 0, 0, -1, None, b"x") for i in range(2))),
        "empty": wrapper(b""),
        "null value": encode_message(3, 1, Codec.GZIP, 0, None, None),
        "below its last inner offset": wrapper(inner1, offset=1),
        "not allowed below magic 2": encode_message(3, 1, Codec.ZSTD, 0, None,
                                                    compress(Codec.ZSTD, inner1)),
    }
    for what, data in cases.items():
        with pytest.raises(InvalidLegacyMessage, match=what):
            list(iter_records(data))
        with pytest.raises(InvalidLegacyMessage):
            upconvert(data)
    # Compressed bytes that do not decompress: a corrupt message, naming the codec.
    bad = encode_message(3, 1, Codec.SNAPPY, 0, None, b"\x82SNAPPY\x00" + bytes(8) + b"\x00\x00\x00\x09oops")
    with pytest.raises(CorruptLegacyMessage, match="snappy"):
        list(iter_records(bad))


def test_magic0_wrapper_offsets_are_absolute() -> None:
    inner = b"".join(encode_message(o, 0, 0, -1, b"k", b"v") for o in (7, 8, 20))
    out = encode_message(20, 0, Codec.GZIP, -1, None, compress(Codec.GZIP, inner))
    assert [m.offset for m in iter_records(out)] == [7, 8, 20]
    assert [o for o, *_ in kp_read(out)] == [7, 8, 20]


def test_lz4_magic0_wrapper_uses_kafka_3160_checksum() -> None:
    needs(Codec.LZ4, 0)
    out = downconvert(rows(3), 0, codec=Codec.LZ4)
    [wrapper] = list(iter_messages(out))
    assert wrapper.value is not None
    assert wrapper.value[:7] == kcodec.lz4_encode_old_kafka(b"anything")[:7]


def test_shallow_message_fields() -> None:
    [m] = list(iter_messages(encode_message(9, 1, 0x08, 77, b"k", b"value")))
    assert (m.offset, m.magic, m.timestamp, m.timestamp_type, m.key, m.value, m.codec) == \
        (9, 1, 77, LOG_APPEND_TIME, b"k", b"value", 0)
    assert m.size_in_bytes == 12 + 22 + 1 + 5
    assert m.crc == zlib.crc32(encode_message(9, 1, 0x08, 77, b"k", b"value")[16:])



# ----------------------------------------------------------------- with protocol.records (v2)

def test_v2_batch_down_and_up_through_protocol_records() -> None:
    """Fetch v0-3 path: v2 batch -> legacy set; Produce v0-2 path: legacy set -> v2 batch."""
    records = pytest.importorskip("protocol.records")
    data = rows(5)
    batch = records.build_batch([(k, v, t, [("h", b"1")]) for _, t, k, v in data],
                                codec=Codec.GZIP, base_offset=300)
    header = records.read_header(batch)
    v2 = list(records.iter_records(batch))
    legacy_set = downconvert(v2, 1, codec=header.compression)
    assert [(o, t, k, v) for o, t, _, k, v in kp_read(legacy_set)] == \
        [(300 + i, t, k, v) for i, (_, t, k, v) in enumerate(data)]

    up = upconvert(legacy_set, base_offset=0)
    back = records.build_batch([(k, v, t, h) for _, t, k, v, h in up.records], codec=up.codec)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records.iter_records(back)] \
        == [(i, t, k, v, []) for i, (_, t, k, v) in enumerate(data)]
