"""Kafka's primitive wire types, sans-I/O.

Byte layouts (all integers big-endian, two's complement):

* ``bool`` int8 (0 false, anything else true) · ``int8/16/32/64`` · ``uint16`` ·
  ``uint32`` · ``float64`` IEEE 754 · ``uuid`` 16 raw bytes.
* unsigned varint: 7 bits per byte, least significant group first, high bit =
  "more follows" (protobuf style); at most 5 bytes for 32 bits.
* varint / varlong: zig-zag ((n << 1) ^ (n >> 63)) then unsigned varint.
* classic (non-flexible) ``string``: int16 length, -1 = null; ``bytes`` and
  ``records``: int32 length, -1 = null; ``array``: int32 count, -1 = null.
* compact (flexible versions) string/bytes/records/array: unsigned varint of
  length + 1, 0 = null.
* tagged-field section (flexible versions, at the end of every struct):
  uvarint count, then per field in ascending tag order: uvarint tag, uvarint
  size, ``size`` bytes of the value.

Decode limits (issue 17): lengths, counts, tags and sizes of the protocol
(compact forms, tagged sections) are read with ``read_uvarint32``: at most 5
bytes and at most 2**32 - 1, as Kafka's ByteUtils.readUnsignedVarint refuses
longer ones ("Varint is too long"); ``read_uvarint`` (10 bytes, 64 bits) is for
record fields (varlong timestamps). Nothing is ever allocated from a length
before the codec has checked that the bytes it announces are there (see
codec_reference / codec_compiled).
"""

from __future__ import annotations

import struct
from typing import Any

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")


class DecodeError(ValueError):
    """The bytes do not form a valid message for the version being decoded."""


class EncodeError(ValueError):
    """A value cannot be written at this version (e.g. null where not nullable)."""


def read_uvarint(buf: Any, pos: int) -> tuple[int, int]:
    """Unsigned varint at ``pos`` -> (value, next position). At most 10 bytes."""
    try:
        b = buf[pos]
    except IndexError:
        raise DecodeError("truncated varint") from None
    if b < 0x80:  # the common one-byte case
        return b, pos + 1
    result = 0
    shift = 0
    while True:
        try:
            b = buf[pos]
        except IndexError:
            raise DecodeError("truncated varint") from None
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes")


def read_uvarint32(buf: Any, pos: int) -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes (a uint32) -> (value, next position).

    DecodeError for a truncated one or a fifth byte that says more follows or holds
    bits beyond 32 (Kafka's readUnsignedVarint).
    """
    try:
        b = buf[pos]
    except IndexError:
        raise DecodeError("truncated varint") from None
    if b < 0x80:  # the common one-byte case
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    while True:
        try:
            b = buf[pos]
        except IndexError:
            raise DecodeError("truncated varint") from None
        pos += 1
        if shift == 28 and b > 0x0F:
            raise DecodeError("varint is too long: more than 32 bits in 5 bytes")
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise EncodeError(f"unsigned varint cannot hold {value}")
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint_size(value: int) -> int:
    n = 1
    while value > 0x7F:
        value >>= 7
        n += 1
    return n


def read_varint(buf: Any, pos: int) -> tuple[int, int]:
    """Zig-zag varint/varlong -> (signed value, next position)."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    write_uvarint(out, (value << 1) ^ (value >> 63))


def varint_size(value: int) -> int:
    return uvarint_size((value << 1) ^ (value >> 63))


class Writer:
    """An output buffer that keeps large record payloads as separate chunks.

    Everything is written into ``buf`` except ``records`` values, which are
    appended to ``parts`` as they are (no copy), with what ``buf`` held so far
    flushed before them. ``buf`` stays the same bytearray object throughout, so
    generated code may hold it in a local.
    """

    __slots__ = ("buf", "parts")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.parts: list[Any] = []

    def records(self, data: Any) -> None:
        if self.buf:
            self.parts.append(bytes(self.buf))
            self.buf.clear()
        self.parts.append(data)

    def chunks(self) -> list[Any]:
        if not self.parts:
            return [self.buf]
        if self.buf:
            self.parts.append(bytes(self.buf))
            self.buf.clear()
        return self.parts


def records_size(data: Any) -> int:
    """Size of a records value: anything with the buffer protocol, or an object
    carrying ``wire_size`` (e.g. a segment file slice the connection reads
    with pread when it writes the response)."""
    size = getattr(data, "wire_size", None)
    if size is not None:
        return int(size)
    return memoryview(data).nbytes


def uuid_text(value: Any) -> str:
    """Kafka's Uuid.toString: the 16 bytes (a uuid.UUID) in URL-safe base64, unpadded
    (22 characters); topic ids in tools and logs, generated member ids."""
    import base64
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")
