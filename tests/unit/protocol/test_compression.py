"""protocol.compression: Kafka framings, interop with kafka-python's codec module, bad input."""

from __future__ import annotations

import gzip
import os
import struct
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import compression
from protocol.compression import (
    Codec,
    CompressionUnavailable,
    CorruptCompressedData,
    UnknownCodec,
    available,
    compress,
    decompress,
    xxh32,
)

kcodec = pytest.importorskip("kafka.codec")

ALL = list(Codec)
COMPRESSED = [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]


def sample(n: int) -> bytes:
    """Half repetitive (compressible), half random (not), so both block kinds occur."""
    text = (b"kafka record payload %d " * (n // 20 + 1))[: n // 2]
    return text + os.urandom(n - len(text))


# Sizes straddling snappy's 32 KiB chunk and lz4's 64 KiB block.
SIZES = [0, 1, 100, 32 * 1024 - 1, 32 * 1024, 32 * 1024 + 1, 64 * 1024, 64 * 1024 + 1, 300_000]


@pytest.mark.parametrize("codec", ALL)
@pytest.mark.parametrize("size", SIZES)
def test_round_trip_sizes(codec: Codec, size: int) -> None:
    data = sample(size)
    packed = compress(codec, data)
    assert decompress(codec, packed) == data
    assert decompress(int(codec), memoryview(packed)) == data  # plain ints and views work too


@settings(max_examples=60, deadline=None)
@given(codec=st.sampled_from(ALL), data=st.binary(max_size=5000), magic=st.sampled_from([0, 1, 2]))
def test_round_trip_property(codec: Codec, data: bytes, magic: int) -> None:
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data


def test_compression_actually_shrinks() -> None:
    data = b"abcdefgh" * 10_000
    for codec in COMPRESSED:
        assert len(compress(codec, data)) < len(data) // 10, codec


# ----------------------------------------------------------------- interop with kafka-python

def _need(has: bool, what: str) -> None:
    if not has:
        pytest.skip(f"kafka-python's codec module lacks {what} (pip install python-snappy lz4 "
                    "zstandard xxhash)")


@pytest.mark.parametrize("size", [0, 10, 70_000, 200_000])
def test_gzip_interop(size: int) -> None:
    data = sample(size)
    assert kcodec.gzip_decode(compress(Codec.GZIP, data)) == data
    assert decompress(Codec.GZIP, kcodec.gzip_encode(data)) == data


@pytest.mark.parametrize("size", [1, 10, 70_000, 200_000])
def test_snappy_interop(size: int) -> None:
    _need(kcodec.has_snappy(), "snappy")
    data = sample(size)
    assert kcodec.snappy_decode(compress(Codec.SNAPPY, data)) == data
    # kafka-python writes xerial framing like the Java client ...
    assert decompress(Codec.SNAPPY, kcodec.snappy_encode(data)) == data
    # ... or a bare raw block (xerial_compatible=False), which we accept as librdkafka does.
    assert decompress(Codec.SNAPPY, kcodec.snappy_encode(data, xerial_compatible=False)) == data
    # Small xerial block sizes give many chunks.
    assert decompress(Codec.SNAPPY, kcodec.snappy_encode(data, xerial_blocksize=1000)) == data


@pytest.mark.parametrize("size", [0, 10, 70_000, 200_000])
def test_lz4_interop(size: int) -> None:
    _need(kcodec.has_lz4(), "lz4")
    data = sample(size)
    assert kcodec.lz4_decode(compress(Codec.LZ4, data)) == data
    assert decompress(Codec.LZ4, kcodec.lz4_encode(data)) == data


@pytest.mark.parametrize("size", [10, 70_000])
def test_lz4_magic0_interop(size: int) -> None:
    """KAFKA-3160: magic-0 frames carry a header checksum taken over the magic bytes too."""
    _need(kcodec.has_lz4() and kcodec.xxhash is not None, "lz4 + xxhash")
    data = sample(size)
    ours = compress(Codec.LZ4, data, magic=0)
    theirs = kcodec.lz4_encode_old_kafka(data)
    assert ours[:7] == theirs[:7]  # same descriptor, same (broken) checksum byte
    assert kcodec.lz4_decode_old_kafka(ours) == data
    assert decompress(Codec.LZ4, theirs, magic=0) == data


@pytest.mark.parametrize("size", [0, 10, 70_000, 200_000])
def test_zstd_interop(size: int) -> None:
    _need(kcodec.has_zstd(), "zstd")
    data = sample(size)
    assert kcodec.zstd_decode(compress(Codec.ZSTD, data)) == data
    assert decompress(Codec.ZSTD, kcodec.zstd_encode(data)) == data


def test_zstd_streamed_frame_without_content_size() -> None:
    """zstd-jni's ZstdOutputStream (the Java client) writes frames with no content size."""
    zstandard = pytest.importorskip("zstandard")
    data = sample(150_000)
    obj = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    frame = obj.compress(data) + obj.flush()
    assert decompress(Codec.ZSTD, frame) == data


# ----------------------------------------------------------------- framing facts

def test_snappy_xerial_layout() -> None:
    data = sample(100_000)
    out = compress(Codec.SNAPPY, data)
    assert out[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    # Walk the chunks: each is a big-endian length then a raw block of <= 32 KiB input.
    cramjam = pytest.importorskip("cramjam")
    pos, sizes = 16, []
    while pos < len(out):
        (n,) = struct.unpack_from(">i", out, pos)
        sizes.append(len(cramjam.snappy.decompress_raw(out[pos + 4:pos + 4 + n])))
        pos += 4 + n
    assert pos == len(out)
    assert sizes == [32768, 32768, 32768, 100_000 - 3 * 32768]


def test_snappy_little_endian_header_fields_accepted() -> None:
    """Some producers write version/compat little-endian; Kafka's readers ignore them."""
    data = sample(5000)
    out = compress(Codec.SNAPPY, data)
    assert decompress(Codec.SNAPPY, out[:8] + struct.pack("<ii", 1, 1) + out[16:]) == data


def test_snappy_header_only_and_empty() -> None:
    assert compress(Codec.SNAPPY, b"") == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    assert decompress(Codec.SNAPPY, compress(Codec.SNAPPY, b"")) == b""
    assert decompress(Codec.SNAPPY, b"") == b""


def test_lz4_frame_layout_matches_java_writer() -> None:
    data = b"z" * 100_000  # two blocks: 64 KiB + rest
    out = compress(Codec.LZ4, data)
    assert out[:4] == b"\x04\x22\x4d\x18"
    assert out[4] == 0x60  # version 1, independent blocks, no checksums, no content size
    assert out[5] == 0x40  # 64 KiB blocks
    assert out[6] == (xxh32(bytes([0x60, 0x40])) >> 8) & 0xFF == 0x82
    assert out[-4:] == b"\x00\x00\x00\x00"
    (first,) = struct.unpack_from("<I", out, 7)
    assert not first & 0x80000000 and first < 1000  # compressed


def test_lz4_incompressible_block_stored_raw() -> None:
    data = os.urandom(1000)
    out = compress(Codec.LZ4, data)
    (size,) = struct.unpack_from("<I", out, 7)
    assert size == 0x80000000 | 1000
    assert out[11:1011] == data
    assert decompress(Codec.LZ4, out) == data


def test_lz4_header_checksum_checked_except_for_magic0() -> None:
    data = sample(3000)
    broken = compress(Codec.LZ4, data, magic=0)
    assert broken[6] != compress(Codec.LZ4, data)[6]
    with pytest.raises(CorruptCompressedData):
        decompress(Codec.LZ4, broken)  # magic 1/2 readers check HC, as Java does
    assert decompress(Codec.LZ4, broken, magic=0) == data
    # A magic-0 reader ignores the checksum, so a correct one is fine too (Java ignores it).
    assert decompress(Codec.LZ4, compress(Codec.LZ4, data), magic=0) == data


def test_gzip_is_a_standard_stream() -> None:
    data = sample(20_000)
    out = compress(Codec.GZIP, data)
    assert out[:3] == b"\x1f\x8b\x08"
    assert gzip.decompress(out) == data
    # Two concatenated members read as one stream, like GZIPInputStream.
    assert decompress(Codec.GZIP, out + compress(Codec.GZIP, b"tail")) == data + b"tail"


def test_xxh32_known_values() -> None:
    assert xxh32(b"") == 0x02CC5D05
    xxhash = pytest.importorskip("xxhash")
    for n in range(0, 70):
        blob = os.urandom(n)
        assert xxh32(blob) == xxhash.xxh32_intdigest(blob), n


# ----------------------------------------------------------------- bad input

@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize("blob", [b"\x01", b"garbage!" * 3, os.urandom(64), b"\xff" * 1000])
def test_garbage_raises_clear_error(codec: Codec, blob: bytes) -> None:
    with pytest.raises(CorruptCompressedData, match=f"corrupt {codec.name.lower()} data"):
        decompress(codec, blob)


@settings(max_examples=200, deadline=None)
@given(codec=st.sampled_from(COMPRESSED), blob=st.binary(max_size=300),
       magic=st.sampled_from([0, 1, 2]))
def test_random_bytes_never_escape_as_other_errors(codec: Codec, blob: bytes, magic: int) -> None:
    try:
        out = decompress(codec, blob, magic=magic)
    except CorruptCompressedData:
        return
    assert isinstance(out, bytes)


@settings(max_examples=150, deadline=None)
@given(codec=st.sampled_from(COMPRESSED), magic=st.sampled_from([0, 2]),
       flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 7)),
                      min_size=1, max_size=4))
def test_bit_flips_never_escape_as_other_errors(codec: Codec, magic: int,
                                                flips: list[tuple[float, int]]) -> None:
    packed = bytearray(compress(codec, FLIP_DATA, magic=magic))
    for where, bit in flips:
        packed[int(where * len(packed))] ^= 1 << bit
    try:
        decompress(codec, bytes(packed), magic=magic)
    except CorruptCompressedData:
        pass


FLIP_DATA = sample(20_000)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_every_truncation_is_detected(codec: Codec) -> None:
    data = sample(70_000)
    packed = compress(codec, data)
    cuts = sorted({1, 2, 5, 7, 11, 15, 16, 17, 20} | set(range(21, len(packed), 997))
                  | {len(packed) - 1})
    for cut in cuts:
        try:
            out = decompress(codec, packed[:cut])
        except CorruptCompressedData:
            continue
        # Only a xerial snappy stream cut exactly at a chunk boundary is itself valid.
        assert codec is Codec.SNAPPY and data.startswith(out), cut


def test_snappy_chunk_length_overrun() -> None:
    out = bytearray(compress(Codec.SNAPPY, sample(1000)))
    struct.pack_into(">i", out, 16, 10_000_000)
    with pytest.raises(CorruptCompressedData, match="overruns"):
        decompress(Codec.SNAPPY, bytes(out))
    struct.pack_into(">i", out, 16, -5)
    with pytest.raises(CorruptCompressedData):
        decompress(Codec.SNAPPY, bytes(out))


def test_empty_gzip_refused() -> None:
    with pytest.raises(CorruptCompressedData):
        decompress(Codec.GZIP, b"")


def test_unknown_codec() -> None:
    for bad in (5, 7, -1):
        with pytest.raises(UnknownCodec, match=str(bad)):
            compress(bad, b"x")
        with pytest.raises(UnknownCodec):
            decompress(bad, b"x")
    assert issubclass(UnknownCodec, ValueError)


def test_none_codec_is_identity() -> None:
    assert compress(Codec.NONE, memoryview(b"abc")) == b"abc"
    assert decompress(0, bytearray(b"abc")) == b"abc"


# ----------------------------------------------------------------- without cramjam

def test_without_cramjam(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compression, "_cramjam", None)
    monkeypatch.setitem(sys.modules, "cramjam", None)  # makes `import cramjam` fail
    for codec in (Codec.SNAPPY, Codec.LZ4, Codec.ZSTD):
        assert not available(codec)
        for call in (compress, decompress):
            with pytest.raises(CompressionUnavailable) as info:
                call(codec, b"data")
            message = str(info.value)
            assert codec.name.lower() in message
            assert "pip install cramjam" in message and "compression" in message
            assert info.value.codec is codec
    assert available(Codec.GZIP) and available(Codec.NONE)
    assert decompress(Codec.GZIP, compress(Codec.GZIP, b"still works")) == b"still works"


def test_available_with_cramjam() -> None:
    pytest.importorskip("cramjam")
    assert all(available(c) for c in Codec)


# -- gzip members: linear in the input, same verdicts as gzip.decompress ---------------

_DECOMPRESSOBJ = compression.zlib.decompressobj


class _CountingInflater:
    """zlib.decompressobj that adds up the input bytes it is fed."""

    fed = 0

    def __init__(self, **kw: int) -> None:
        self._inner = _DECOMPRESSOBJ(**kw)

    def decompress(self, data: bytes | memoryview, max_length: int = 0) -> bytes:
        _CountingInflater.fed += len(data)
        return self._inner.decompress(data, max_length)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


def test_many_gzip_members_are_read_in_linear_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 one-byte members (420 KB): zlib is fed each byte a bounded number of times.
    Feeding each member all the input left (and taking it back as ``unused_data``) was
    quadratic: ~1 s for 1 MB of such members, the GIL held for the copies."""
    data = gzip.compress(b"x") * 20_000
    monkeypatch.setattr(compression.zlib, "decompressobj", _CountingInflater)
    _CountingInflater.fed = 0
    assert compression._gzip_decompress_bounded(data, 1 << 20) == b"x" * 20_000
    assert _CountingInflater.fed <= 4 * len(data)


def _with_flags(member: bytes, flags: int, fields: bytes = b"") -> bytes:
    """``member`` with header flags ``flags`` and the optional ``fields`` they announce."""
    return member[:3] + bytes([flags]) + member[4:10] + fields + member[10:]


@pytest.mark.parametrize("stream", [
    # reserved flag bits: zlib's gzip mode refuses them, gzip.decompress and Java do not
    gzip.compress(b"ab", mtime=0) + _with_flags(gzip.compress(b"", mtime=0), 0x20),
    # zero bytes between members, not only after the last
    gzip.compress(b"ab", mtime=0) + b"\x00\x00" + gzip.compress(b"cd", mtime=0),
    # a header CRC that is wrong (skipped, not checked), a name, a comment, an extra field
    _with_flags(gzip.compress(b"ab", mtime=0), 2 | 4 | 8 | 16,
                b"\x02\x00xyname\x00comment\x00\xff\xff"),
    # a name that runs to the end of the input
    _with_flags(gzip.compress(b"ab", mtime=0), 8)[:10] + b"no-end",
    # a wrong CRC, a wrong size, a cut trailer
    gzip.compress(b"ab", mtime=0)[:-8] + b"\x00" * 8,
    gzip.compress(b"ab", mtime=0)[:-4] + b"\x09\x00\x00\x00",
    gzip.compress(b"ab", mtime=0)[:-3],
    b"\x1f",
])
def test_gzip_headers_and_trailers_as_gzip_decompress(stream: bytes) -> None:
    assert _bounded_verdict(stream) == _gzip_verdict(stream)


def _gzip_verdict(data: bytes) -> bytes | None:
    """gzip.decompress's output, None when it refuses the input."""
    try:
        return gzip.decompress(data)
    except Exception:  # noqa: BLE001 - any refusal
        return None


def _bounded_verdict(data: bytes) -> bytes | None:
    try:
        return compression._gzip_decompress_bounded(data, 1 << 20)
    except (CorruptCompressedData, compression.DecompressedTooLarge):
        return None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=3000), min_size=1, max_size=5), st.integers(0, 12),
       st.data())
def test_gzip_members_give_gzip_decompress_verdicts(bodies: list[bytes], padding: int,
                                                    draw: st.DataObject) -> None:
    data = b"".join(gzip.compress(b) for b in bodies) + b"\x00" * padding
    if draw.draw(st.booleans()):                      # a damaged or cut stream
        at = draw.draw(st.integers(0, len(data) - 1))
        if draw.draw(st.booleans()):
            data = data[:at] + bytes([draw.draw(st.integers(0, 255))]) + data[at + 1:]
        else:
            data = data[:max(at, 1)]
    assert _bounded_verdict(data) == _gzip_verdict(data)
