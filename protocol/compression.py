"""Record compression codecs, framed the way Kafka frames them.

The codec id lives in the low three bits of a batch's (or legacy message's) attributes:

    0 none   1 gzip   2 snappy   3 lz4   4 zstd      (5..7 unused)

Framings (what Kafka's Java client writes and what every client must read):

* gzip   -- an RFC 1952 gzip stream (java.util.zip.GZIPOutputStream). Written with the stdlib at
            zlib's default level 6 (Java's Deflater.DEFAULT_COMPRESSION) and mtime 0.
* snappy -- snappy-java's "xerial" stream, not Google's snappy framing format::

                offset  size  field
                0       8     magic  82 53 4E 41 50 50 59 00   ("\\x82SNAPPY\\0")
                8       4     version, big-endian int32 = 1
                12      4     minimum compatible version, big-endian int32 = 1
                16      ...   chunks: length (big-endian int32) | raw snappy block of that length

            Each chunk compresses at most 32 KiB of input (snappy-java's default block size).
            Reading accepts a xerial stream (version and compat are ignored, as kafka-python and
            librdkafka do: some writers put them little-endian) or a bare raw snappy block, which
            some non-Java producers send.
* lz4    -- the LZ4 frame format (KIP-57), as Kafka's Lz4BlockOutputStream writes it::

                magic 04 22 4D 18 | FLG 0x60 | BD 0x40 | HC | blocks... | end mark 00 00 00 00

            FLG 0x60 = version 01, independent blocks, no block/content checksum, no content size;
            BD 0x40 = 64 KiB maximum block size. Each block is ``size uint32 LE | data``; the size's
            top bit marks a block stored uncompressed. HC = second byte of xxHash32(FLG..BD).
            Java's reader rejects dependent (linked) blocks, so we never write them.
            Message format v0 quirk (KAFKA-3160): Kafka 0.8/0.9 hashed the magic bytes too when
            computing HC. For magic 0 Kafka writes that "broken" HC and ignores HC when reading;
            pass ``magic=0`` to get the same behaviour.
* zstd   -- a standard zstd frame (level 3, Kafka's default). Only record batch v2 may use zstd.

gzip needs nothing beyond the stdlib. snappy, lz4 and zstd come from the one optional package
``cramjam``, imported on first use: without it those codecs raise CompressionUnavailable and the
rest of the module works.

Bounded decompression (``decompress(..., max_size=N)``, issue 17): a few KB of gzip/snappy/lz4/
zstd can claim gigabytes, so a decompressor facing client bytes must never allocate more than
N + 1 bytes of output, and must stop working as soon as N is passed:

* gzip   -- zlib's streaming ``decompressobj`` with ``max_length``: at most N + 1 bytes leave it;
            in C (protocol/_gzip_members.c, ``NATIVE_GZIP``), an output buffer that doubles up
            to N + 1 bytes, and no GIL held for inputs over 64 KiB.
* snappy -- every raw block starts with its uncompressed length (a uvarint); that is summed
            *before* a block is inflated (``decompress_raw_len``), so nothing is allocated for
            a block that would pass N.
* lz4, zstd -- cramjam's ``decompress_into`` writes into a caller's buffer and fails once the
            buffer is full ("failed to write whole buffer"), whatever the frame claims. The
            buffer is a reused 4 MiB scratch buffer, and only when that runs full an anonymous
            mmap of N + 1 bytes: the kernel hands out zeroed pages only as they are written,
            so a small batch touches a few pages, not N.

Passing N raises DecompressedTooLarge (a CorruptCompressedData: Kafka answers CORRUPT_MESSAGE).
Where N comes from (the topic's max.message.bytes times a factor) is protocol/record_validation.py.
"""

from __future__ import annotations

import gzip
import mmap
import struct
import threading
import zlib
from enum import IntEnum
from types import ModuleType
from typing import Any

from protocol import native

Data = bytes | bytearray | memoryview


class Codec(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class CompressionUnavailable(Exception):
    """The package a codec needs is not installed."""

    def __init__(self, codec: Codec) -> None:
        super().__init__(
            f"{codec.name.lower()} compression needs the optional package cramjam, which is not "
            "installed: run `pip install cramjam` (or install pybroker with its `compression` "
            "extra: `pip install 'pybroker[compression]'`)"
        )
        self.codec = codec


class CorruptCompressedData(ValueError):
    """Input that does not decompress with the codec it claims."""

    def __init__(self, codec: Codec, reason: str) -> None:
        super().__init__(f"corrupt {codec.name.lower()} data: {reason}")
        self.codec = codec
        self.reason = reason


class DecompressedTooLarge(CorruptCompressedData):
    """The data inflate beyond the ``max_size`` the caller allows (a decompression bomb, or a
    batch far larger than the topic takes)."""

    def __init__(self, codec: Codec, max_size: int) -> None:
        super().__init__(codec, f"inflates beyond {max_size} bytes")
        self.max_size = max_size


class UnknownCodec(ValueError):
    """A codec id outside 0..4."""


def codec_of(codec: int) -> Codec:
    try:
        return Codec(codec)
    except ValueError:
        raise UnknownCodec(f"unknown compression codec id {codec}") from None


# --------------------------------------------------------------------------- optional package

_cramjam: ModuleType | None = None


def _lib(codec: Codec) -> Any:
    """The cramjam module, imported on first use."""
    global _cramjam
    if _cramjam is None:
        try:
            import cramjam
        except ImportError:
            raise CompressionUnavailable(codec) from None
        _cramjam = cramjam
    return _cramjam


def available(codec: int) -> bool:
    """Whether ``codec`` can be used in this process."""
    c = codec_of(codec)
    if c in (Codec.NONE, Codec.GZIP):
        return True
    try:
        _lib(c)
    except CompressionUnavailable:
        return False
    return True


# --------------------------------------------------------------------------- public entry points

def compress(codec: int, data: Data, *, magic: int = 2) -> bytes:
    """Compress ``data`` in Kafka's framing for ``codec``.

    ``magic`` is the message format the result goes into; it only matters for lz4 and magic 0.
    """
    c = codec_of(codec)
    if c is Codec.NONE:
        return bytes(data)
    if c is Codec.GZIP:
        return gzip.compress(data, compresslevel=6, mtime=0)
    lib = _lib(c)
    if c is Codec.SNAPPY:
        return _snappy_compress(lib, data)
    if c is Codec.LZ4:
        return _lz4_compress(lib, data, broken_header_checksum=magic == 0)
    return bytes(lib.zstd.compress(data, level=3))


def decompress(codec: int, data: Data, *, magic: int = 2, max_size: int | None = None) -> bytes:
    """Decompress ``data`` written in Kafka's framing for ``codec``.

    Raises CorruptCompressedData for anything that is not a complete, valid stream;
    it never loops on bad input (every loop below consumes input or fails). With
    ``max_size``, output beyond that many bytes raises DecompressedTooLarge and no more
    than ``max_size + 1`` bytes of output are ever allocated (see the module docstring).
    """
    c = codec_of(codec)
    if c is Codec.NONE:
        if max_size is not None and len(data) > max_size:
            raise DecompressedTooLarge(c, max_size)
        return bytes(data)
    if c is Codec.GZIP:
        return _gzip_decompress(data, max_size)
    lib = _lib(c)
    try:
        if c is Codec.SNAPPY:
            return _snappy_decompress(lib, data, max_size)
        if c is Codec.LZ4 and magic == 0:
            data = _lz4_fix_header_checksum(data)
        module = lib.lz4 if c is Codec.LZ4 else lib.zstd
        if max_size is None:
            return bytes(module.decompress(data))
        return _decompress_into_bounded(module, c, data, max_size)
    except lib.DecompressionError as exc:
        raise CorruptCompressedData(c, str(exc)) from exc


SCRATCH_SIZE = 4 * 1024 * 1024
_scratch = threading.local()  # a reusable output buffer per thread (the event loop's, mostly)


def _decompress_into_bounded(module: Any, codec: Codec, data: Data, max_size: int) -> bytes:
    """lz4/zstd into a buffer of at most ``max_size + 1`` bytes.

    First into a reused 4 MiB scratch buffer (fresh pages cost a page fault each, which
    is most of the time for a small batch); only output that does not fit there is
    inflated again into an anonymous mmap of ``max_size + 1`` bytes, whose pages the
    kernel provides only as they are written.
    """
    buf = getattr(_scratch, "buf", None)
    if buf is None:
        buf = _scratch.buf = bytearray(SCRATCH_SIZE)
    if max_size < SCRATCH_SIZE:
        return _into(module, codec, data, memoryview(buf)[:max_size + 1], max_size)
    try:
        return _into(module, codec, data, buf, max_size)
    except DecompressedTooLarge:
        pass  # more than the scratch holds: again, into room for max_size + 1
    out = mmap.mmap(-1, max_size + 1)
    try:
        return _into(module, codec, data, out, max_size)
    finally:
        out.close()


def _into(module: Any, codec: Codec, data: Data, out: Any, max_size: int) -> bytes:
    """Decompress into ``out``; DecompressedTooLarge when it runs full or passes max_size."""
    try:
        written = int(module.decompress_into(data, out))
    except Exception as exc:  # cramjam.DecompressionError: the buffer ran full, or bad data
        if "whole buffer" in str(exc):
            raise DecompressedTooLarge(codec, max_size) from None
        raise CorruptCompressedData(codec, str(exc)) from exc
    if written > max_size or written >= len(out):
        raise DecompressedTooLarge(codec, max_size)
    return bytes(out[:written])


# --------------------------------------------------------------------------- gzip

# protocol/_gzip_members.c where built (it needs zlib's headers too; else the Python
# reader below runs)
_gzip_members = native.extension("_gzip_members")
# Whether bounded gzip reads run in C; PYBROKER_NATIVE=0 forces the Python reader (as it
# forces record_validation's Python walk).
NATIVE_GZIP: bool = _gzip_members is not None and native.wanted()


def _gzip_decompress(data: Data, max_size: int | None = None) -> bytes:
    if len(data) == 0:
        # gzip.decompress(b"") returns b""; Java's GZIPInputStream refuses it, and so do we.
        raise CorruptCompressedData(Codec.GZIP, "empty input")
    if max_size is None:
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
            raise CorruptCompressedData(Codec.GZIP, str(exc) or type(exc).__name__) from exc
    if NATIVE_GZIP:
        return _gzip_decompress_native(data, max_size)
    return _gzip_decompress_bounded(data, max_size)


def _gzip_decompress_native(data: Data, max_size: int) -> bytes:
    """_gzip_decompress_bounded in C (protocol/_gzip_members.c): the same verdicts and
    messages, without the GIL for inputs over RELEASE_GIL_BYTES."""
    assert _gzip_members is not None
    result = _gzip_members.inflate(data, max_size)
    if isinstance(result, bytes):
        return result
    kind, message = result
    if kind == _gzip_members.TOO_LARGE:
        raise DecompressedTooLarge(Codec.GZIP, max_size)
    raise _gzip_corrupt(message)


GZIP_FIRST_WINDOW = 64          # bytes of input first fed for a member; doubled until it ends
_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_DEFLATE = 8
# header flags (RFC 1952 2.3.1); the reserved bits 5-7 are ignored, as gzip.decompress and
# Java's GZIPInputStream do (zlib's own gzip mode refuses them)
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 2, 4, 8, 16
_GZIP_TRAILER = struct.Struct("<II")     # CRC-32 and size mod 2^32 of the member's data


def _gzip_corrupt(message: str) -> CorruptCompressedData:
    return CorruptCompressedData(Codec.GZIP, message)


def _gzip_header_end(raw: bytes | bytearray, pos: int) -> int:
    """Where the deflate data of the member whose header starts at ``pos`` begins; the
    header read as gzip.decompress reads it (RFC 1952: magic, method 8, flags, mtime,
    xfl, os, then the optional extra field, file name, comment and header CRC -- the
    CRC skipped, not checked; a name or comment without its zero runs to the end)."""
    size = len(raw)
    if raw[pos:pos + 2] != _GZIP_MAGIC:
        raise _gzip_corrupt("Not a gzipped file")
    if pos + 10 > size:
        raise _gzip_corrupt("Compressed file ended before the end-of-stream marker was reached")
    if raw[pos + 2] != _GZIP_DEFLATE:
        raise _gzip_corrupt("Unknown compression method")
    flags = raw[pos + 3]
    at = pos + 10
    if flags & _FEXTRA:
        if at + 2 > size:
            raise _gzip_corrupt("Compressed file ended before the end-of-stream marker "
                                "was reached")
        at += 2 + (raw[at] | raw[at + 1] << 8)
        if at > size:
            raise _gzip_corrupt("Compressed file ended before the end-of-stream marker "
                                "was reached")
    for flag in (_FNAME, _FCOMMENT):
        if flags & flag:
            end = raw.find(b"\x00", at)
            at = size if end < 0 else end + 1
    if flags & _FHCRC:
        if at + 2 > size:
            raise _gzip_corrupt("Compressed file ended before the end-of-stream marker "
                                "was reached")
        at += 2
    return at


def _gzip_decompress_bounded(data: Data, max_size: int) -> bytes:
    """Member after member, as gzip.decompress reads them (its header rules, raw deflate,
    the CRC-32 and size trailer, zero bytes skipped between and after members), never
    past ``max_size + 1`` bytes of output.

    Linear in the input whatever the member count: each member is fed through a
    ``memoryview`` in a window that doubles while the member is unfinished, so its
    ``unused_data`` (a copy) is at most one window -- not a copy of all the input left,
    which made a batch of many tiny members quadratic (1 MB of 21-byte members: ~1 s,
    the GIL held for the copies)."""
    # a view of a larger buffer is copied once, so that header scans can use find
    raw = data if isinstance(data, (bytes, bytearray)) else bytes(data)
    view = memoryview(raw)
    size = len(view)
    parts: list[bytes] = []
    total = 0
    pos = 0
    while pos < size:
        pos = _gzip_header_end(raw, pos)
        inflater = zlib.decompressobj(wbits=-15)     # raw deflate: the header is read above
        crc = produced = 0
        window = GZIP_FIRST_WINDOW
        while not inflater.eof:
            if pos >= size:
                raise _gzip_corrupt(
                    "Compressed file ended before the end-of-stream marker was reached")
            fed = view[pos:pos + window]
            try:
                chunk = inflater.decompress(fed, max_size + 1 - total)
            except zlib.error as exc:
                raise _gzip_corrupt(str(exc)) from exc
            total += len(chunk)
            produced += len(chunk)
            crc = zlib.crc32(chunk, crc)
            parts.append(chunk)
            if total > max_size or inflater.unconsumed_tail:
                raise DecompressedTooLarge(Codec.GZIP, max_size)
            pos += len(fed) - len(inflater.unused_data)
            window *= 2
        if pos + _GZIP_TRAILER.size > size:
            raise _gzip_corrupt(
                "Compressed file ended before the end-of-stream marker was reached")
        want_crc, want_size = _GZIP_TRAILER.unpack_from(view, pos)
        if want_crc != crc:
            raise _gzip_corrupt("CRC check failed")
        if want_size != produced & 0xFFFFFFFF:
            raise _gzip_corrupt("Incorrect length of data produced")
        pos += _GZIP_TRAILER.size
        while pos < size and view[pos] == 0:       # zero padding, as gzip.decompress
            pos += 1
    return b"".join(parts)


# --------------------------------------------------------------------------- snappy (xerial)

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, compatible version 1
XERIAL_BLOCK_SIZE = 32 * 1024
_BE_INT32 = struct.Struct(">i")


def _snappy_compress(lib: Any, data: Data) -> bytes:
    view = memoryview(data).cast("B")
    parts: list[Any] = [XERIAL_HEADER]
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = lib.snappy.compress_raw(view[start:start + XERIAL_BLOCK_SIZE])
        parts.append(_BE_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(lib: Any, data: Data, max_size: int | None = None) -> bytes:
    view = memoryview(data).cast("B")
    if len(view) == 0:
        return b""  # snappy-java reads an empty stream as empty
    budget = [max_size, max_size]  # [output still allowed, the bound] (None: no bound)
    if view[:8] != XERIAL_MAGIC:
        return bytes(_snappy_raw(lib, view, budget))
    if len(view) < len(XERIAL_HEADER):
        raise CorruptCompressedData(Codec.SNAPPY, "truncated xerial header")
    parts: list[Any] = []
    pos, end = len(XERIAL_HEADER), len(view)
    while pos < end:
        if end - pos < 4:
            raise CorruptCompressedData(Codec.SNAPPY, f"truncated chunk length at byte {pos}")
        (size,) = _BE_INT32.unpack_from(view, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise CorruptCompressedData(
                Codec.SNAPPY, f"chunk of {size} bytes at byte {pos - 4} overruns {end} bytes")
        if size:
            parts.append(_snappy_raw(lib, view[pos:pos + size], budget))
        pos += size
    return b"".join(parts)


def _snappy_raw(lib: Any, block: memoryview, budget: list[Any]) -> Any:
    """One raw snappy block; its declared length is checked against ``budget`` first."""
    left = budget[0]
    if left is None:
        return lib.snappy.decompress_raw(block)
    declared = int(lib.snappy.decompress_raw_len(block))
    if declared > left:
        raise DecompressedTooLarge(Codec.SNAPPY, budget[1])
    budget[0] = left - declared
    out = lib.snappy.decompress_raw(block)
    if len(out) != declared:
        raise CorruptCompressedData(Codec.SNAPPY, f"block inflated to {len(out)}, not {declared}")
    return out


# --------------------------------------------------------------------------- lz4 (frame)

LZ4_MAGIC = b"\x04\x22\x4d\x18"  # 0x184D2204 little-endian
_LZ4_FLG = 0x60  # version 01 | block independence
_LZ4_BD = 0x40  # 64 KiB maximum block size
LZ4_BLOCK_SIZE = 64 * 1024
_LZ4_UNCOMPRESSED = 0x80000000
_LE_UINT32 = struct.Struct("<I")


def _lz4_compress(lib: Any, data: Data, *, broken_header_checksum: bool) -> bytes:
    descriptor = LZ4_MAGIC + bytes((_LZ4_FLG, _LZ4_BD))
    hashed = descriptor if broken_header_checksum else descriptor[4:]
    parts: list[Any] = [descriptor, bytes(((xxh32(hashed) >> 8) & 0xFF,))]
    view = memoryview(data).cast("B")
    for start in range(0, len(view), LZ4_BLOCK_SIZE):
        chunk = view[start:start + LZ4_BLOCK_SIZE]
        block = lib.lz4.compress_block(chunk, store_size=False)
        if len(block) >= len(chunk):  # incompressible: store as is, as Java does
            parts.append(_LE_UINT32.pack(len(chunk) | _LZ4_UNCOMPRESSED))
            parts.append(chunk)
        else:
            parts.append(_LE_UINT32.pack(len(block)))
            parts.append(block)
    parts.append(b"\x00\x00\x00\x00")  # end mark; no content checksum
    return b"".join(parts)


def _lz4_fix_header_checksum(data: Data) -> bytes:
    """Replace a frame's header checksum with the correct one (magic-0 frames carry a wrong one).

    Frame descriptor: magic(4) FLG(1) BD(1) [content size(8) if FLG bit 3] [dict id(4) if FLG
    bit 0] HC(1); HC = (xxh32(FLG .. last descriptor field) >> 8) & 0xFF.
    """
    raw = bytes(data)
    if len(raw) < 7 or raw[:4] != LZ4_MAGIC:
        raise CorruptCompressedData(Codec.LZ4, "not an lz4 frame (bad magic or too short)")
    flg = raw[4]
    hc_pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(raw) <= hc_pos:
        raise CorruptCompressedData(Codec.LZ4, "truncated frame descriptor")
    hc = (xxh32(raw[4:hc_pos]) >> 8) & 0xFF
    return raw[:hc_pos] + bytes((hc,)) + raw[hc_pos + 1:]


# xxHash32 (only ever run over a frame descriptor, at most 18 bytes, so pure Python is fine).
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of ``data`` (the LZ4 frame format's header and block checksum)."""
    n, pos = len(data), 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos <= n - 16:
            for i in range(4):
                (w,) = _LE_UINT32.unpack_from(data, pos)
                v[i] = (_rotl((v[i] + w * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos <= n - 4:
        (w,) = _LE_UINT32.unpack_from(data, pos)
        h = (_rotl((h + w * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
