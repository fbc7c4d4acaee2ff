"""Frame mutators: from a seed (frame_corpus) to the bytes the fuzzer sends.

``FrameFactory(seed).frame(i)`` is a pure function of (seed, i): frame i is
built from ``random.Random(f"{seed}:{i}")``, so a run is reproduced by its
seed and any one frame by its index (``fuzz_run --show-frame I``), whatever
the scheduling of connections did.

A frame = request header + body, size-prefixed. Mutations (``MUTATIONS``,
weighted), each on the layout slots (frame_layout.Slot) of the body:

    clean       no mutation (well-formed requests with pool values)
    int-edge    a fixed-width field set to its type's edges (0, -1, min, max, ...)
    length      an array count / string or bytes length set to -1, -2, 0, off by
                one or huge (2**31-1 in a 40-byte frame: CVE-2022-34917), in its
                classic or compact (uvarint, also 5- and 10-byte) form
    string      a string's bytes replaced: invalid UTF-8, 32767 bytes, empty, NULs
    null        null (-1 / compact 0) where the field is not nullable
    tagged      the tagged section: an unknown tag, a size that lies, tags out of
                order or repeated, a count larger than the entries
    records     the records of a Produce replaced by a mutated batch
                (record_mutators: CRC fixed up after the mutation)
    header      api key (unknown, negative), version (-1, max+1, 32767),
                correlation id edges, client id (null, long, invalid UTF-8),
                header tagged fields
    havoc       bytes: bit flips, truncation, random insertions
    prefix      the 4-byte size prefix lies (short, long, negative, > max):
                always the last frame of its connection

``frame_guard`` drops frames that would harm the well-behaved clients (see
frame_corpus): bytes naming the protected topic/group, the inter-broker APIs,
ElectLeaders for all partitions (null topics), and topic-creating requests
asking for more than 16 partitions (the broker would build them all).
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

from protocol.headers import RequestHeader, encode_request_header
from protocol.primitives import write_uvarint
from tests.fuzz.frame_corpus import (
    CONTROLLER_ONLY, PROTECTED, Seed, golden_seeds, schema_seeds,
)
from tests.fuzz.frame_layout import Slot
from tests.fuzz.record_mutators import make_records

MUTATIONS: tuple[tuple[str, int], ...] = (
    ("clean", 8), ("int-edge", 16), ("length", 16), ("string", 8), ("null", 5),
    ("tagged", 8), ("records", 16), ("header", 9), ("havoc", 10), ("prefix", 2),
)
_NAMES = [m for m, _ in MUTATIONS]
_WEIGHTS = [w for _, w in MUTATIONS]
_INT_EDGES = {
    "b": (0, -1, 1, -128, 127), "h": (0, -1, 1, -2, -32768, 32767),
    "H": (0, 1, 65535), "i": (0, -1, 1, -2, -(1 << 31), (1 << 31) - 1, 1 << 24),
    "I": (0, 1, (1 << 32) - 1), "q": (0, -1, 1, -(1 << 63), (1 << 63) - 1, 1 << 40),
    "d": (float("nan"), float("inf"), -0.0, 1e308), "?": (False, True),
}
_INVALID_UTF8 = (b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80")
MAX_PARTITIONS_ASKED = 16
GUARDED_APIS = {19: ("num_partitions",), 37: ("count",)}


@dataclass(frozen=True, slots=True)
class FuzzFrame:
    index: int
    api_key: int
    version: int
    mutation: str
    data: bytes               # what goes on the wire, size prefix included
    last: bool = False        # must end its connection (size prefix lies)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    write_uvarint(out, n)
    return bytes(out)


def _length_bytes(slot: Slot, n: int, rng: random.Random) -> bytes:
    if slot.kind == "ulen":
        if n < -1:
            n = -1
        form = rng.randrange(4)
        if form == 0:                      # overlong: padding continuation bytes
            raw = n + 1
            out = bytearray()
            for _ in range(4):
                out.append((raw & 0x7F) | 0x80)
                raw >>= 7
            out.append(raw & 0x7F)
            return bytes(out)
        return _uvarint(n + 1)
    return struct.pack(">h" if slot.kind == "len16" else ">i",
                       max(min(n, 32767), -32768) if slot.kind == "len16" else
                       max(min(n, (1 << 31) - 1), -(1 << 31)))


def _splice(body: bytes, start: int, end: int, new: bytes) -> bytes:
    return body[:start] + new + body[end:]


class FrameFactory:
    """Deterministic frames from a seed; see the module docstring."""

    def __init__(self, seed: int, *, wire: bool = True, per_version: int = 3,
                 bombs: bool = True) -> None:
        self.seed = seed
        self.bombs = bombs
        self.long_lengths = (249, 250, 255, 32767)     # 249: Kafka's longest topic name
        corpus_rng = random.Random(f"{seed}:corpus")
        seeds = schema_seeds(corpus_rng, per_version) + golden_seeds()
        if wire:
            seeds = [s for s in seeds if s.api_key not in CONTROLLER_ONLY]
        self.seeds = seeds
        self.produce = [s for s in seeds if s.api_key == 0]
        self.wire = wire

    # -- one frame ---------------------------------------------------------------------

    def frame(self, index: int) -> FuzzFrame:
        rng = random.Random(f"{self.seed}:{index}")
        for _attempt in range(20):
            mutation = rng.choices(_NAMES, _WEIGHTS)[0]
            seed = rng.choice(self.produce if mutation == "records" or rng.random() < 0.15
                              else self.seeds)
            built = self._build(rng, seed, mutation)
            if built is not None and frame_guard(built[0], seed.api_key):
                payload, last = built
                return FuzzFrame(index, seed.api_key, seed.version, mutation,
                                 struct.pack(">i", len(payload)) + payload
                                 if mutation != "prefix" else payload, last)
        # nothing passed the guard: an ApiVersions v0
        head = encode_request_header(RequestHeader(18, 0, index & 0x7FFFFFFF, "fuzz"))
        return FuzzFrame(index, 18, 0, "fallback", struct.pack(">i", len(head)) + bytes(head))

    def _build(self, rng: random.Random, seed: Seed, mutation: str) -> tuple[bytes, bool] | None:
        body = seed.body
        slots = seed.slots
        if mutation == "int-edge":
            body = self._int_edge(rng, body, slots)
        elif mutation == "length":
            body = self._length(rng, body, slots)
        elif mutation == "string":
            body = self._string(rng, body, slots)
        elif mutation == "null":
            body = self._null(rng, body, slots)
        elif mutation == "tagged":
            body = self._tagged(rng, body, slots)
        elif mutation == "records":
            body = self._records(rng, body, slots)
        if body is None:
            return None
        head = bytes(encode_request_header(RequestHeader(
            seed.api_key, seed.version, rng.randrange(1 << 31), seed.client_id)))
        if mutation == "header":
            head = self._header(rng, head, seed)
        payload = head + body
        if mutation == "havoc":
            payload = self._havoc(rng, payload)
        if mutation == "prefix":
            size = rng.choice((len(payload) + rng.randrange(1, 100), max(0, len(payload) - 3),
                               -1, -(1 << 31), (1 << 31) - 1, 100 * 1024 * 1024 + 1, 0))
            return struct.pack(">i", size) + payload, True
        return payload, False

    # -- body mutations ----------------------------------------------------------------

    @staticmethod
    def _pick(rng: random.Random, slots: tuple[Slot, ...], kinds: tuple[str, ...]) -> Slot | None:
        chosen = [s for s in slots if s.kind in kinds]
        return rng.choice(chosen) if chosen else None

    def _int_edge(self, rng: random.Random, body: bytes, slots: tuple[Slot, ...]) -> bytes | None:
        out = body
        for _ in range(rng.choice((1, 1, 2, 3))):
            s = self._pick(rng, slots, ("int",))
            if s is None:
                return None
            value = rng.choice(_INT_EDGES[s.fmt])
            out = _splice(out, s.start, s.end, struct.pack(">" + s.fmt, value))
        return out

    def _length(self, rng: random.Random, body: bytes, slots: tuple[Slot, ...]) -> bytes | None:
        s = self._pick(rng, slots, ("len16", "len32", "ulen"))
        if s is None:
            return None
        current = (struct.unpack(">h" if s.kind == "len16" else ">i", body[s.start:s.end])[0]
                   if s.kind != "ulen" else _read_uvarint(body, s.start) - 1)
        n = rng.choice((-1, -2, 0, current + 1, current - 1, (1 << 31) - 1, 1 << 28, 32767,
                        current * 2 + 5))
        new = _length_bytes(s, n, rng)
        out = _splice(body, s.start, s.end, new)
        if rng.random() < 0.3:              # tiny frame: cut everything after the count
            out = out[:s.start + len(new)]
        return out

    def _string(self, rng: random.Random, body: bytes, slots: tuple[Slot, ...]) -> bytes | None:
        s = self._pick(rng, slots, ("str",))
        if s is None:
            return None
        ln = slots[[i for i, x in enumerate(slots) if x.target >= 0 and slots[x.target] is s][0]] \
            if any(x.target >= 0 and slots[x.target] is s for x in slots) else None
        kind = rng.randrange(5)
        if kind == 0:                        # invalid UTF-8, same length when possible
            bad = rng.choice(_INVALID_UTF8)
            data = (bad * (1 + (s.end - s.start) // len(bad)))[:max(len(bad), s.end - s.start)]
        elif kind == 1:
            data = b"a" * rng.choice(self.long_lengths)
        elif kind == 2:
            data = b""
        elif kind == 3:
            data = b"\x00" * rng.choice((1, 5))
        else:
            data = "\u00fc\u2603.." .encode() * rng.choice((1, 3))
        out = _splice(body, s.start, s.end, data)
        if ln is not None:
            out = _splice(out, ln.start, ln.end, _length_bytes(ln, len(data), rng))
        return out

    def _null(self, rng: random.Random, body: bytes, slots: tuple[Slot, ...]) -> bytes | None:
        cands = [s for s in slots if s.kind in ("len16", "len32", "ulen", "nullmark")
                 and not s.nullable]
        if not cands:
            return None
        s = rng.choice(cands)
        new = (b"\xff" if s.kind == "nullmark" else b"\x00" if s.kind == "ulen"
               else struct.pack(">h" if s.kind == "len16" else ">i", -1))
        end = s.end
        if s.target >= 0:                    # drop the data the length measured
            end = slots[s.target].end
        return _splice(body, s.start, end, new)

    def _tagged(self, rng: random.Random, body: bytes, slots: tuple[Slot, ...]) -> bytes | None:
        counts = [s for s in slots if s.kind == "tagcount"]
        if not counts:
            return None
        s = rng.choice(counts)
        count = _read_uvarint(body, s.start)
        kind = rng.randrange(5)
        tag = rng.choice((0, 1, 2, 7, 100, 1 << 20, (1 << 31) - 1))
        payload = rng.randbytes(rng.choice((0, 1, 4, 30)))
        entry = _uvarint(tag) + _uvarint(len(payload)) + payload
        if kind == 0:                        # an extra unknown tag in front
            return _splice(body, s.start, s.end, _uvarint(count + 1) + entry)
        if kind == 1:                        # its size lies
            lie = _uvarint(tag) + _uvarint(len(payload) + rng.choice((1, 1000, 1 << 30))) + payload
            return _splice(body, s.start, s.end, _uvarint(count + 1) + lie)
        if kind == 2:                        # out of order / repeated
            entry2 = _uvarint(max(0, tag - 1)) + _uvarint(0)
            return _splice(body, s.start, s.end, _uvarint(count + 2) + entry + entry2 + entry)
        if kind == 3:                        # count larger than the entries
            return _splice(body, s.start, s.end, _uvarint(count + rng.choice((1, 1 << 28))))
        return _splice(body, s.start, s.end, _uvarint(count + 1) + _uvarint(tag)
                       + _uvarint(1 << 31))  # huge size, nothing behind it

    def _records(self, rng: random.Random, body: bytes, slots: tuple[Slot, ...]) -> bytes | None:
        idx = [i for i, s in enumerate(slots) if s.kind == "records"]
        if not idx:
            return None
        target = slots[rng.choice(idx)]
        ln = next(s for s in slots if s.target >= 0 and slots[s.target] is target)
        batch, _label = make_records(rng, bombs=self.bombs)
        out = _splice(body, target.start, target.end, batch)
        return _splice(out, ln.start, ln.end, _length_bytes(ln, len(batch), rng)
                       if ln.kind != "ulen" else _uvarint(len(batch) + 1))

    # -- header and bytes --------------------------------------------------------------

    def _header(self, rng: random.Random, head: bytes, seed: Seed) -> bytes:
        kind = rng.randrange(6)
        if kind == 0:
            key = rng.choice((-1, -32768, 32767, 38, 39, 40, 41, 48, 49, 52, 57, 58, 67, 68, 1000))
            return struct.pack(">h", key) + head[2:]
        if kind == 1:
            return head[:2] + struct.pack(">h", rng.choice((-1, -32768, 32767, seed.version + 1,
                                                             seed.version + 100))) + head[4:]
        if kind == 2:
            return head[:4] + struct.pack(">i", rng.choice((0, -1, -(1 << 31), (1 << 31) - 1))) \
                + head[8:]
        if len(head) < 10:                    # header v0: nothing after the correlation id
            return head[:rng.randrange(0, 8)]
        (n,) = struct.unpack(">h", head[8:10])
        rest = head[10 + max(n, 0):]
        if kind == 3:                         # client id null / invalid UTF-8 / lying length
            cid = rng.choice((b"\xff\xff", struct.pack(">h", 3) + b"\xff\xfe\xfd",
                              struct.pack(">h", 32767) + b"x", struct.pack(">h", -2),
                              struct.pack(">h", 2000) + b"c" * 2000))
            return head[:8] + cid + rest
        if kind == 4 and rest:                # header tagged fields
            return head[:10 + max(n, 0)] + rng.choice((
                b"\x01\x05\x02ab", b"\x02\x01\x00\x00\x00", b"\x01\x00\xff\xff\xff\xff\x0f",
                b"\xff\xff\xff\xff\x0f"))
        return head[:rng.randrange(0, len(head))]  # truncated header

    @staticmethod
    def _havoc(rng: random.Random, payload: bytes) -> bytes:
        out = bytearray(payload)
        for _ in range(rng.choice((1, 2, 4, 8))):
            op = rng.randrange(4)
            if not out:
                break
            at = rng.randrange(len(out))
            if op == 0:
                out[at] ^= 1 << rng.randrange(8)
            elif op == 1:
                out[at] = rng.choice((0x00, 0xFF, 0x7F, 0x80))
            elif op == 2:
                out[at:at] = rng.randbytes(rng.randrange(1, 8))
            else:
                del out[at:]
        return bytes(out)


def _read_uvarint(buf: bytes, pos: int) -> int:
    result = shift = 0
    while pos < len(buf):
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return result


def frame_guard(payload: bytes, api_key: int) -> bool:
    """False for a frame the fuzzer must not send (module docstring)."""
    if any(p in payload for p in PROTECTED):
        return False
    if len(payload) >= 2 and struct.unpack(">h", payload[:2])[0] in CONTROLLER_ONLY:
        return False
    return semantic_guard(payload, api_key)


def semantic_guard(payload: bytes, api_key: int) -> bool:
    """Requests that decode (as the broker decodes them: trailing bytes ignored):
    no ElectLeaders for every partition, no topic creation of more than
    MAX_PARTITIONS_ASKED partitions."""
    if len(payload) >= 2:
        api_key = struct.unpack(">h", payload[:2])[0]
    if api_key not in (19, 37, 43):
        return True
    from protocol.codec import decode_from
    from protocol.headers import decode_request_header
    from protocol.spec import all_apis
    try:
        header, pos = decode_request_header(payload)
        body, _end = decode_from(all_apis()[api_key].request, payload, pos, header.api_version)
    except Exception:    # noqa: BLE001 - undecodable requests are the decoder's business
        return True
    if api_key == 43:
        return body.topic_partitions is not None
    attr = GUARDED_APIS[api_key][0]
    return all(getattr(t, attr, 0) <= MAX_PARTITIONS_ASKED
               and len(getattr(t, "assignments", None) or ()) <= MAX_PARTITIONS_ASKED
               for t in body.topics or [])
