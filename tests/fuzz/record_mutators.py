"""Record batches (magic 2) built field by field, so any field can be wrong.

``make_batch(rng)`` writes a batch with our own record writer instead of
``protocol.records.BatchBuilder`` because the mutations need to put impossible
values where the builder would refuse them: a record length that lies, a
negative key length other than -1, a header count of 2**31, a 10-byte
overlong varint, offset deltas that repeat or run backwards, timestamps at
the int64 edges, record counts that disagree with the records. Header fields
get the same treatment (magic, attributes with codecs 5-7 or the control bit,
lastOffsetDelta, producer id/epoch/sequence, batchLength). Unless the
mutation is "bad CRC", the CRC is computed last, over the mutated bytes, so
the batch passes the CRC check and reaches the deeper ones.

Compression: a body is compressed after the record mutations (a valid
stream of invalid records); or the payload is a valid stream of garbage; or a
compression bomb (``BOMB_BYTES`` of zeros, a few KiB compressed: built once
per process and cached); or the codec bit says compressed and the body is
not. Layout of the header: see ``protocol/records.py``.
"""

from __future__ import annotations

import functools
import random
import struct
from typing import Any

from crc32c import crc32c

from protocol import compression
from protocol.primitives import write_varint

HEADER = struct.Struct(">qiibIhiqqqhii")
I64_EDGES = (0, -1, 1, -(1 << 63), (1 << 63) - 1, 1 << 40, -(1 << 40))
I32_EDGES = (0, -1, 1, -2, -(1 << 31), (1 << 31) - 1, 1 << 20, 255, 256, 65535)
I16_EDGES = (0, -1, 1, -(1 << 15), (1 << 15) - 1)
BOMB_BYTES = 64 << 20
CODECS = (0, 0, 0, 1, 2, 3, 4)


def _zigzag_overlong(value: int) -> bytes:
    """A 10-byte varint (continuation bits set on padding bytes): legal length, odd form."""
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    for _ in range(9):
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw & 0x7F)
    return bytes(out)


def write_record(out: bytearray, *, ts_delta: int, off_delta: int, key: bytes | None,
                 value: bytes | None, headers: list[tuple[bytes | None, bytes | None]],
                 bad: dict[str, Any]) -> None:
    """One record; ``bad`` overrides: len_delta, key_len, value_len, hdr_count,
    hdr_key_null, overlong (10-byte offset delta), attrs."""
    rec = bytearray([bad.get("attrs", 0) & 0xFF])
    write_varint(rec, ts_delta)
    if bad.get("overlong"):
        rec += _zigzag_overlong(off_delta)
    else:
        write_varint(rec, off_delta)
    for which, data in (("key_len", key), ("value_len", value)):
        n = bad.get(which, -1 if data is None else len(data))
        write_varint(rec, n)
        if data is not None:
            rec += data
    write_varint(rec, bad.get("hdr_count", len(headers)))
    for i, (hk, hv) in enumerate(headers):
        if bad.get("hdr_key_null") and i == 0:
            hk = None
        write_varint(rec, -1 if hk is None else len(hk))
        rec += hk or b""
        write_varint(rec, -1 if hv is None else len(hv))
        rec += hv or b""
    write_varint(out, len(rec) + bad.get("len_delta", 0))
    out += rec


@functools.cache
def bomb(codec: int, copies: int = 1) -> bytes:
    """``BOMB_BYTES`` of zeros compressed with ``codec`` (built once), repeated
    ``copies`` times: gzip members and zstd frames concatenate, so 16 copies of a
    2 KiB zstd frame inflate to 1 GiB (beyond any bound derived from
    message.max.bytes: the reader must stop at the bound)."""
    return compression.compress(codec, bytes(BOMB_BYTES)) * copies


def make_batch(rng: random.Random, *, mutate: bool = True, now_ms: int = 1_700_000_000_000,
               bombs: bool = True) -> tuple[bytes, str]:
    """-> (one batch, label of the mutation applied or "clean")."""
    codec = rng.choice(CODECS)
    n = rng.choice((1, 1, 2, 3, 5))
    idempotent = rng.random() < 0.3
    label = "clean"
    what = rng.randrange(100) if mutate else -1
    bad_at = rng.randrange(n)
    rec_bad: dict[str, Any] = {}
    hdr: dict[str, int] = {}
    body_mode = "records"
    if 0 <= what < 30:                                  # record fields
        key, val = rng.choice([
            ("len_delta", rng.choice((-3, -1, 1, 2, 1000, -(1 << 30)))),
            ("key_len", rng.choice((-2, -100, 1 << 30, (1 << 31) - 1, 50))),
            ("value_len", rng.choice((-2, 1 << 30, 7, -(1 << 31)))),
            ("hdr_count", rng.choice((-1, -2, 1 << 30, (1 << 31) - 1, 3))),
            ("hdr_key_null", 1), ("overlong", 1), ("attrs", rng.choice((1, 0x80, 0xFF)))])
        rec_bad[key] = val
        label = f"record-{key}"
    offsets = list(range(n))
    ts_deltas = [i for i in range(n)]
    if 30 <= what < 40:                                 # offset / timestamp deltas
        kind = rng.choice(("dup", "backwards", "huge", "negative", "ts-huge", "ts-negative"))
        j = bad_at
        if kind == "dup" and n > 1:
            offsets[j] = offsets[j - 1] if j else offsets[1]
        elif kind == "backwards" and n > 1:
            offsets.reverse()
        elif kind == "huge":
            offsets[j] = (1 << 31) - 1
        elif kind == "negative":
            offsets[j] = -1
        elif kind == "ts-huge":
            ts_deltas[j] = (1 << 62)
        else:
            ts_deltas[j] = -(1 << 62)
        label = f"delta-{kind}"
    if 40 <= what < 65:                                 # header fields
        name, edges = rng.choice([
            ("records_count", I32_EDGES), ("last_offset_delta", I32_EDGES),
            ("base_timestamp", I64_EDGES), ("max_timestamp", I64_EDGES),
            ("producer_id", I64_EDGES), ("producer_epoch", I16_EDGES),
            ("base_sequence", I32_EDGES), ("magic", (0, 1, 3, -1, 127)),
            ("attributes", (5, 6, 7, 0x20, 0x10, 0x08, 0x40, 0x7FFF, -1)),
            ("partition_leader_epoch", I32_EDGES), ("base_offset", I64_EDGES),
            ("batch_length", (-1, 0, 48, 1 << 30, (1 << 31) - 1))])
        hdr[name] = rng.choice(edges)
        label = f"header-{name}"
    if 65 <= what < 75:
        body_mode = rng.choice(("garbage", "garbage", "bomb", "uncompressed-with-codec",
                                "truncated"))
        if body_mode == "bomb" and not bombs:
            body_mode = "garbage"
        if body_mode == "bomb":
            codec = rng.choice((1, 4))
        elif codec == 0:
            codec = rng.choice((1, 2, 3, 4))
        label = f"compression-{body_mode}"
    body = bytearray()
    for i in range(n):
        key = None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 12))
        value = None if rng.random() < 0.05 else rng.randbytes(rng.randrange(0, 64))
        headers = [(b"h%d" % h, rng.choice((None, b"v"))) for h in range(rng.choice((0, 0, 1, 2)))]
        write_record(body, ts_delta=ts_deltas[i], off_delta=offsets[i], key=key, value=value,
                     headers=headers, bad=rec_bad if i == bad_at else {})
    payload: bytes = bytes(body)
    if codec:
        if body_mode == "garbage":
            payload = compression.compress(codec, rng.randbytes(rng.randrange(1, 400)))
        elif body_mode == "bomb":
            payload = bomb(codec, rng.choice((1, 1, 2 if codec == 1 else 16)))
        elif body_mode == "uncompressed-with-codec":
            payload = bytes(body)
        elif body_mode == "truncated":
            full = compression.compress(codec, bytes(body))
            payload = full[:max(1, len(full) // 2)]
        else:
            payload = compression.compress(codec, bytes(body))
    fields = {
        "base_offset": 0, "batch_length": 49 + len(payload), "partition_leader_epoch": -1,
        "magic": 2, "crc": 0, "attributes": codec, "last_offset_delta": n - 1,
        "base_timestamp": now_ms, "max_timestamp": now_ms + n - 1,
        "producer_id": rng.randrange(1000, 1010) if idempotent else -1,
        "producer_epoch": 0 if idempotent else -1,
        "base_sequence": rng.randrange(0, 100) if idempotent else -1, "records_count": n}
    fields.update(hdr)
    out = bytearray(HEADER.pack(*(_clamp(k, v) for k, v in fields.items())))
    out += payload
    if 75 <= what < 80:
        label = "bad-crc"
        struct.pack_into(">I", out, 17, rng.getrandbits(32))
    else:
        struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    if 80 <= what < 85:
        cut = rng.randrange(1, len(out))
        label = "truncated-batch"
        out = out[:cut]
    return bytes(out), label


_WIDTH = {"magic": 8, "attributes": 16, "producer_epoch": 16, "crc": -32}


def _clamp(name: str, value: int) -> int:
    """Keep a value packable in its field's width (wrap around two's complement)."""
    bits = _WIDTH.get(name, 64 if name in ("base_offset", "base_timestamp", "max_timestamp",
                                           "producer_id") else 32)
    if bits < 0:
        return value & 0xFFFFFFFF
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def make_records(rng: random.Random, *, mutate: bool = True, bombs: bool = True
                 ) -> tuple[bytes, str]:
    """A records field value: one batch, or a few (a clean one beside a mutated one),
    or a clean batch followed by a partial one."""
    shape = rng.randrange(10)
    if shape < 7 or not mutate:
        return make_batch(rng, mutate=mutate, bombs=bombs)
    first, _ = make_batch(rng, mutate=False)
    second, label = make_batch(rng, mutate=True, bombs=bombs)
    if shape < 9:
        return first + second, "two-batches-" + label
    return first + second[:rng.randrange(1, 61)], "partial-tail"

