"""Encode and decode messages: the public entry points (compiled fast path).

``encode(msg, version)`` and ``decode(spec, buf, version)`` are pure: bytes in,
objects out. A message object is version-free (one class per API message, all
versions' fields); the version is chosen only here, at the byte boundary.
"""

from __future__ import annotations

import struct
from typing import Any

from protocol.codec_compiled import decoder, encoder
from protocol.primitives import DecodeError, EncodeError, Writer
from protocol.schema import MessageSpec, Struct


def _message_spec(msg: Struct) -> MessageSpec:
    spec = type(msg).MESSAGE
    if spec is None:
        raise TypeError(f"{type(msg).__name__} is not a top-level request or response")
    return spec


def encode_chunks(msg: Struct, version: int) -> list[Any]:
    """Encode to a list of buffers; record payloads are passed through uncopied."""
    spec = _message_spec(msg)
    if version not in spec.valid:
        raise EncodeError(f"{spec.name} has no version {version} (valid {spec.valid})")
    w = Writer()
    try:
        encoder(spec.struct, version, spec.is_flexible(version))(msg, w, w.buf)
    except (struct.error, AttributeError, TypeError) as e:
        raise EncodeError(f"{spec.name} v{version}: {e}") from e
    return w.chunks()


def encode(msg: Struct, version: int) -> bytes:
    chunks = encode_chunks(msg, version)
    if len(chunks) == 1:
        return bytes(chunks[0])
    return b"".join(c if isinstance(c, (bytes, bytearray, memoryview)) else bytes(c)
                    for c in chunks)


def decode_from(spec: MessageSpec, buf: Any, offset: int, version: int) -> tuple[Struct, int]:
    """Decode one message starting at ``offset``; returns it and the end offset.
    Records fields are memoryviews into ``buf`` (no copy)."""
    if version not in spec.valid:
        raise DecodeError(f"{spec.name} has no version {version} (valid {spec.valid})")
    if not isinstance(buf, memoryview):
        buf = memoryview(buf)
    try:
        return decoder(spec.struct, version, spec.is_flexible(version))(buf, offset, len(buf))
    except DecodeError:
        raise
    except (struct.error, IndexError, ValueError, OverflowError) as e:
        raise DecodeError(f"{spec.name} v{version}: {e}") from e


def decode(spec: MessageSpec, buf: Any, version: int) -> Struct:
    msg, end = decode_from(spec, buf, 0, version)
    if end != len(buf):
        raise DecodeError(f"{spec.name} v{version}: {len(buf) - end} trailing bytes")
    return msg


# -- version-prefixed records (Kafka's MessageUtil.toVersionPrefixedBytes) ------------
# The coordinators' records in __consumer_offsets and __transaction_state: an int16
# schema version, then the struct at that version.

_RECORD_VERSION = struct.Struct(">h")


def encode_prefixed(spec: MessageSpec, version: int, **values: Any) -> bytes:
    """int16 ``version`` + ``spec`` at that version, built from ``values``."""
    return _RECORD_VERSION.pack(version) + encode(spec.new(**values), version)


def record_version(data: bytes | memoryview) -> int:
    """The int16 schema version a prefixed record starts with."""
    if len(data) < 2:
        raise DecodeError(f"{len(data)} bytes hold no record version")
    return int(_RECORD_VERSION.unpack_from(data, 0)[0])


def decode_prefixed(spec: MessageSpec, data: bytes | memoryview) -> tuple[int, Struct]:
    """-> (version, struct); DecodeError for a version ``spec`` does not define."""
    if len(data) < 2:
        raise DecodeError(f"{spec.name}: {len(data)} bytes hold no version")
    version = record_version(data)
    if version not in spec.valid:
        raise DecodeError(f"{spec.name}: unknown version {version}")
    return version, decode(spec, memoryview(data)[2:], version)
