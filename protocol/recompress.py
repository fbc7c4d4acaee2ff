"""Recompression of produced v2 record batches to a topic's compression.type, sans-I/O
(Kafka 3.9's LogValidator: a topic whose compression.type is not ``producer`` stores
its batches in that codec, whatever the producer sent).

``target_codec(compression_type)`` maps the topic key to a codec id (None for
``producer``: batches kept as sent). ``needs_recompression(data, codec)`` says whether
any batch of ``data`` is in another codec; ``recompress(data, codec, max_inflated)``
rewrites each such batch: the records section is inflated (bounded as validation
bounds it), deflated with the target codec (``uncompressed`` stores it plain), and the
61-byte header is kept but for batchLength, the codec bits of the attributes and the
CRC-32C (which covers attributes..end). Base offset, producer id/epoch, base sequence,
timestamps, the record count and every record's bytes are unchanged, so the log
assigns offsets exactly as for the original batch and idempotence checks see the
same sequences. Control batches are left alone (clients do not send them).

This is CPU work (inflate + deflate): the broker runs it in the record-check worker
thread (broker/replication/record_checks.py), never on the event loop.
"""

from __future__ import annotations

import struct
from typing import Any

from protocol import compression
from protocol.records import (ATTRIBUTES_AT, CODEC_MASK, CRC_AT, HEADER_SIZE, LENGTH_AT,
                              LOG_OVERHEAD, compute_crc, iter_batches)

CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")


def target_codec(compression_type: str | None) -> int | None:
    """The codec a topic's compression.type asks for; None: keep the producer's."""
    if compression_type is None:
        return None
    return CODECS.get(compression_type.strip().lower())


def needs_recompression(data: Any, codec: int | None) -> bool:
    """Whether a client batch of ``data`` is in a codec other than ``codec``."""
    if codec is None:
        return False
    return any(h.compression != codec and not h.is_control for _pos, h in iter_batches(data))


def recompress(data: Any, codec: int, max_inflated: int | None = None) -> bytes:
    """``data`` with every client batch in ``codec`` (see the module docstring).
    Raises compression.CorruptCompressedData / DecompressedTooLarge as inflating does."""
    view = memoryview(data)
    out = bytearray()
    last = 0
    for pos, header in iter_batches(data):
        if header.compression == codec or header.is_control:
            continue
        out += view[last:pos]
        body = view[pos + HEADER_SIZE:pos + header.size]
        raw = body if header.compression == 0 else compression.decompress(
            header.compression, body, max_size=max_inflated)
        packed = compression.compress(codec, raw)
        start = len(out)
        out += view[pos:pos + HEADER_SIZE]
        out += packed
        size = len(out) - start
        _I32.pack_into(out, start + LENGTH_AT, size - LOG_OVERHEAD)
        attributes = (header.attributes & ~CODEC_MASK) | codec
        _U16.pack_into(out, start + ATTRIBUTES_AT, attributes & 0xFFFF)
        _U32.pack_into(out, start + CRC_AT, compute_crc(out, start, size))
        last = pos + header.size
    if last == 0:
        return bytes(view)
    out += view[last:]
    return bytes(out)
