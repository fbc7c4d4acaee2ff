"""Decode limits (issue 17): nothing is allocated from a length field before its bytes
have arrived, in both codecs, the record decoders and the decompressors.

One test per case, then the CVE-2022-34917 sweep: for every request API and version, a
family of tiny frames with one huge length/count each (built by walking the schema),
must raise DecodeError in both codecs at a tracemalloc peak under 1 MB.
"""

from __future__ import annotations

import struct
import tracemalloc
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from protocol import codec, codec_reference as ref, compression, legacy_records, records
from protocol.api_keys import ApiKey
from protocol.compression import Codec, DecompressedTooLarge
from protocol.primitives import DecodeError, read_uvarint32, write_varint
from protocol.schema import FieldSpec, MessageSpec, StructSpec
from protocol.spec import all_apis, api

MB = 1024 * 1024


def both(spec: MessageSpec, frame: bytes, version: int) -> None:
    """Both codecs refuse ``frame`` with DecodeError."""
    with pytest.raises(DecodeError):
        codec.decode(spec, frame, version)
    with pytest.raises(DecodeError):
        ref.decode_ref(spec, frame, version)


# ---- primitives ----------------------------------------------------------------------------

def test_uvarint32_refuses_more_than_five_bytes() -> None:
    assert read_uvarint32(b"\xff\xff\xff\xff\x0f", 0) == (0xFFFFFFFF, 5)
    with pytest.raises(DecodeError, match="too long"):
        read_uvarint32(b"\xff\xff\xff\xff\x10", 0)  # a 33rd bit
    with pytest.raises(DecodeError, match="too long"):
        read_uvarint32(b"\xff\xff\xff\xff\xff\x01", 0)  # a sixth byte
    with pytest.raises(DecodeError, match="truncated"):
        read_uvarint32(b"\xff\xff", 0)


# ---- classic and compact forms -------------------------------------------------------------

METADATA = api(ApiKey.METADATA).request
PRODUCE = api(ApiKey.PRODUCE).request
DESCRIBE_GROUPS = api(ApiKey.DESCRIBE_GROUPS).request
OFFSET_FETCH = api(ApiKey.OFFSET_FETCH).request


def test_classic_array_count_above_remaining_bytes() -> None:
    both(METADATA, struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 16, 1)


def test_classic_string_length_above_remaining_bytes() -> None:
    both(METADATA, struct.pack(">ih", 1, 0x7FFF) + b"a" * 10, 1)


def test_classic_bytes_length_above_remaining_bytes() -> None:
    # Produce v3: transactional id (null), acks, timeout, 1 topic "t", 1 partition, records
    frame = struct.pack(">hhii", -1, 1, 1000, 1) + struct.pack(">h", 1) + b"t" \
        + struct.pack(">iii", 1, 0, 0x7FFFFFFF) + b"\x00" * 8
    both(PRODUCE, frame, 3)


def test_negative_length_of_a_non_nullable_string() -> None:
    both(METADATA, struct.pack(">ih", 1, -1), 1)  # topic names are not nullable


def test_array_count_is_checked_against_the_minimum_element_size() -> None:
    """Metadata v1 topics: each element is at least a 2-byte string length, so a count
    of 10 with 10 bytes left is refused before any element is read (count <= bytes
    alone would let it through and fail only after allocating)."""
    frame = struct.pack(">i", 10) + b"\x00" * 10
    both(METADATA, frame, 1)
    f = next(f for f in METADATA.struct.fields if f.name == "Topics")
    assert ref.element_min_size(f, 1, False) == 2
    assert ref.element_min_size(f, 9, True) == 2  # compact name (1) + tagged count (1)


def test_int32_array_count_times_four() -> None:
    """OffsetFetch v1: topics[0].partition_indexes is []int32; 3 ints need 12 bytes."""
    frame = struct.pack(">h", 1) + b"g" + struct.pack(">i", 1) + struct.pack(">h", 1) + b"t" \
        + struct.pack(">i", 3) + b"\x00" * 11
    both(OFFSET_FETCH, frame, 1)


def test_min_sizes_of_nested_structs() -> None:
    produce_topic = next(f for f in PRODUCE.struct.fields if f.name == "TopicData")
    # name (2) + partitions array count (4) at v3; compact: 1 + 1 + tagged count 1
    assert ref.element_min_size(produce_topic, 3, False) == 6
    assert ref.element_min_size(produce_topic, 9, True) == 3


def test_compact_array_count_above_remaining_bytes() -> None:
    both(METADATA, b"\xff\xff\xff\xff\x0f" + b"\x00" * 8, 9)


def test_compact_length_longer_than_five_bytes() -> None:
    both(METADATA, b"\x80\x80\x80\x80\x80\x01" + b"\x00" * 8, 9)


def test_compact_string_length_above_remaining_bytes() -> None:
    both(METADATA, b"\x02" + b"\xf0\x01" + b"ab" + b"\x00" * 4, 9)


def test_tagged_field_count_above_remaining_bytes() -> None:
    # Metadata v9: topics null (0), allow auto (1), 2 bools, then a tagged count of 2^32-1
    frame = b"\x00" + b"\x01\x00\x00" + b"\xff\xff\xff\xff\x0f" + b"\x00\x00"
    both(METADATA, frame, 9)


def test_tagged_field_size_above_remaining_bytes() -> None:
    frame = b"\x00" + b"\x01\x00\x00" + b"\x01" + b"\x05" + b"\xff\xff\xff\x0f" + b"\x00"
    both(METADATA, frame, 9)


def test_tagged_fields_out_of_order() -> None:
    frame = b"\x00" + b"\x01\x00\x00" + b"\x02" + b"\x05\x00" + b"\x03\x00"
    both(METADATA, frame, 9)


def test_frame_ending_inside_a_fixed_field() -> None:
    # Metadata v4: topics null, then the allow-auto-creation bool is missing
    both(METADATA, struct.pack(">i", -1), 4)
    # Produce v3: acks cut after one byte
    both(PRODUCE, struct.pack(">h", -1) + b"\x00", 3)


# ---- records -------------------------------------------------------------------------------

def _batch_with_record_bytes(record: bytes, count: int = 1) -> bytearray:
    """A v2 batch whose records section is ``record`` (CRC valid)."""
    good = records.build_batch([(b"k", b"v", 1000)])
    body = bytearray(good[:records.HEADER_SIZE]) + record
    struct.pack_into(">i", body, records.LENGTH_AT, len(body) - records.LOG_OVERHEAD)
    struct.pack_into(">i", body, 57, count)
    struct.pack_into(">I", body, records.CRC_AT, records.compute_crc(body, 0, len(body)))
    return body


def test_record_count_above_what_the_bytes_can_hold() -> None:
    batch = _batch_with_record_bytes(b"\x00" * 14, count=0x7FFFFFFF)
    with pytest.raises(records.CorruptRecordError):
        list(records.iter_records(batch))


def test_header_count_above_what_the_record_can_hold() -> None:
    rec = bytearray(b"\x00")  # attributes
    write_varint(rec, 0)  # ts delta
    write_varint(rec, 0)  # offset delta
    rec += b"\x01\x01"  # null key, null value
    write_varint(rec, 1 << 40)  # header count
    framed = bytearray()
    write_varint(framed, len(rec))
    batch = _batch_with_record_bytes(bytes(framed + rec))
    tracemalloc.start()
    try:
        with pytest.raises(records.CorruptRecordError, match="headers cannot fit"):
            list(records.iter_records(batch))
        assert tracemalloc.get_traced_memory()[1] < MB
    finally:
        tracemalloc.stop()


def test_legacy_message_length_above_the_message() -> None:
    msg = bytearray(legacy_records.encode_message(0, 1, 0, 5, b"key", b"value"))
    struct.pack_into(">i", msg, legacy_records.LOG_OVERHEAD + 14, 0x7FFFFFF0)  # key length
    struct.pack_into(">I", msg, 12, zlib.crc32(msg[16:]))
    with pytest.raises(legacy_records.CorruptLegacyMessage, match="overruns"):
        list(legacy_records.iter_messages(bytes(msg)))


# ---- decompression bombs -------------------------------------------------------------------

BOMB_SIZE = 256 * MB
BOUND = 1 * MB


def _zeros_chunks(total: int, chunk: int = 8 * MB) -> Iterator[bytes]:
    block = bytes(chunk)
    for _ in range(total // chunk):
        yield block


def bomb(codec: Codec) -> bytes:
    """A small frame of ``codec`` that inflates to BOMB_SIZE zero bytes."""
    if codec is Codec.GZIP:
        deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(deflater.compress(c) for c in _zeros_chunks(BOMB_SIZE)) + deflater.flush()
    if codec is Codec.ZSTD:
        import cramjam
        out = cramjam.zstd.Compressor(level=3)
        for c in _zeros_chunks(BOMB_SIZE):
            out.compress(c)
        return bytes(out.finish())
    # snappy and lz4 frames are made of independent blocks: repeat one block's frame
    # chunk (xerial: int32 length + raw block; lz4: uint32 size + block) many times.
    unit = compression.compress(codec, bytes(64 * 1024))
    if codec is Codec.SNAPPY:
        chunk = unit[len(compression.XERIAL_HEADER):]
        return compression.XERIAL_HEADER + chunk * (BOMB_SIZE // (64 * 1024))
    head, blocks = unit[:7], unit[7:-4]
    return head + blocks * (BOMB_SIZE // (64 * 1024)) + b"\x00\x00\x00\x00"


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_decompression_bomb_stops_at_the_bound(codec: Codec) -> None:
    data = bomb(codec)
    assert len(data) < BOMB_SIZE // 20  # small on the wire ...
    tracemalloc.start()
    try:
        with pytest.raises(DecompressedTooLarge):
            compression.decompress(codec, data, max_size=BOUND)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # ... and stopped near the bound: the scratch buffer (4 MiB, lz4/zstd, allocated
    # once per thread) or about BOUND (gzip) is all it costs, not 256 MiB
    assert peak < 6 * MB, peak


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_highly_compressible_data_under_the_bound_passes(codec: Codec) -> None:
    data = bytes(BOUND)  # zeros: the best case of every codec
    assert compression.decompress(codec, compression.compress(codec, data), max_size=BOUND) == data


def test_legacy_wrapper_bomb_is_corrupt() -> None:
    inner = legacy_records.encode_message(0, 1, 0, 5, None, bytes(8 * MB))
    wrapper = legacy_records.encode_message(0, 1, Codec.GZIP, 5, None,
                                            compression.compress(Codec.GZIP, inner))
    with pytest.raises(legacy_records.CorruptLegacyMessage, match="inflates beyond"):
        legacy_records.upconvert(wrapper, max_inflated=BOUND)
    assert len(legacy_records.upconvert(wrapper, max_inflated=16 * MB).records) == 1


# ---- CVE-2022-34917: huge counts in tiny frames, every request API and version -------------

HUGE_INT32 = struct.pack(">i", 0x7FFFFFFF)
HUGE_INT16 = struct.pack(">h", 0x7FFF)
HUGE_UVARINT = b"\xff\xff\xff\xff\x0f"  # 2^32 - 1
FILLER = b"\x01" * 24  # a few bytes after the huge length, as an attacker would send


class _Done(Exception):
    """The hostile length has been written; the frame ends here."""


class HostileWriter:
    """Writes a minimal valid message (arrays of one element, empty strings) until the
    ``target``-th length/count/tagged-count slot, which gets a huge value instead."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.slot = 0
        self.out = bytearray()

    def _length(self, flexible: bool, classic: bytes, normal: int) -> bool:
        """Write a length slot; True when it was the hostile one (the frame then ends)."""
        if self.slot == self.target:
            self.out += HUGE_UVARINT if flexible else classic
            self.out += FILLER
            raise _Done
        self.slot += 1
        if flexible:
            self.out.append(normal + 1)
        else:
            self.out += (struct.pack(">h", normal) if len(classic) == 2
                         else struct.pack(">i", normal))
        return False

    def struct(self, spec: StructSpec, version: int, flexible: bool) -> None:
        for f in spec.fields:
            if version in f.versions and not (flexible and version in f.tagged):
                self.field(f, version, flexible)
        if flexible:
            self._length(True, HUGE_INT32, -1)  # the tagged-field count: 0 (no +1 here)

    def field(self, f: FieldSpec, version: int, flexible: bool) -> None:
        if f.is_array:
            self._length(flexible, HUGE_INT32, 1)
            self.element(f, version, flexible)
        elif f.is_struct:
            assert f.struct is not None
            if version in f.nullable:
                self.out.append(1)
            self.struct(f.struct, version, flexible)
        else:
            self.primitive(f.type, flexible)

    def element(self, f: FieldSpec, version: int, flexible: bool) -> None:
        if f.is_struct:
            assert f.struct is not None
            self.struct(f.struct, version, flexible)
        else:
            self.primitive(f.element_type, flexible)

    def primitive(self, t: str, flexible: bool) -> None:
        size = ref._FIXED_SIZES.get(t)
        if size is not None:
            self.out += b"\x00" * size
        elif t == "string":
            self._length(flexible, HUGE_INT16, 0)
        else:
            self._length(flexible, HUGE_INT32, 0)


def hostile_frames(spec: MessageSpec, version: int) -> Iterator[bytes]:
    """One frame per length slot of a minimal message, that slot made huge."""
    flexible = spec.is_flexible(version)
    for target in range(10_000):
        w = HostileWriter(target)
        try:
            w.struct(spec.struct, version, flexible)
        except _Done:
            yield bytes(w.out)
            continue
        return  # fewer slots than target: every one has been made huge


def _cases() -> list[tuple[int, int]]:
    return [(key, v) for key, a in sorted(all_apis().items()) for v in a.request.versions()]


def test_the_sweep_covers_every_request_api_and_version() -> None:
    cases = _cases()
    assert len({k for k, _ in cases}) == len(all_apis())
    assert sum(1 for k, v in cases for _ in hostile_frames(all_apis()[k].request, v)) > 1000


@pytest.mark.parametrize("api_key", sorted(all_apis()))
def test_huge_counts_in_tiny_frames_cost_under_1mb(api_key: int) -> None:
    spec = all_apis()[api_key].request
    frames: list[tuple[int, bytes]] = []
    for version in spec.versions():
        codec.decoder(spec.struct, version, spec.is_flexible(version))  # generate outside
        frames.extend((version, f) for f in hostile_frames(spec, version))
    assert frames
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        worst = 0
        for version, frame in frames:
            tracemalloc.reset_peak()
            for decode in (codec.decode, _decode_ref):
                try:
                    decode(spec, frame, version)
                except DecodeError:
                    pass
                else:
                    raise AssertionError(f"{spec.name} v{version} decoded {frame.hex()}")
            worst = max(worst, tracemalloc.get_traced_memory()[1] - base)
    finally:
        tracemalloc.stop()
    assert worst < MB, f"{spec.name}: {worst} bytes"


def _decode_ref(spec: MessageSpec, frame: Any, version: int) -> Any:
    return ref.decode_ref(spec, frame, version)
