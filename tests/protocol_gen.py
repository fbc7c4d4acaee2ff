"""Seeded random messages from our specs, for cross-checks and round trips.

``random_message(spec, version, rng)`` builds a Struct that is valid at
``version``: every field present at that version gets a random value of its
type (honouring nullability at that version), fields absent at that version
keep their defaults, and fields tagged at that version are either left at their
default (so they are not written) or given a random value. The result encodes
canonically, i.e. the way Kafka's own MessageUtil would write the same values:
that is what lets the cross-checks compare bytes.

Options:
* ``unknown_tags=True`` adds, in flexible versions, unknown tagged fields
  (tags no field of that struct uses) with random payloads; both Kafka and our
  codec must carry them through unchanged.
* ``max_items`` bounds array lengths (deeper levels get shorter arrays).
"""

from __future__ import annotations

import random
import struct as _struct
import uuid
from typing import Any

from protocol.schema import FieldSpec, MessageSpec, Struct, StructSpec

# Mixed alphabet: ASCII plus 2-, 3- and 4-byte UTF-8 (character count != byte count).
GLYPHS = ("a", "b", "z", "0", "-", "_", ".", " ", "\u00e9", "\u00df", "\u5b57", "\u20ac",
          "\U0001F600")

_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}


def random_message(spec: MessageSpec, version: int, rng: random.Random, *,
                   unknown_tags: bool = False, max_items: int = 3) -> Struct:
    """A random, canonical message of ``spec`` at ``version``."""
    if version not in spec.valid:
        raise ValueError(f"{spec.name} has no version {version}")
    gen = _Gen(rng, version, spec.is_flexible(version), unknown_tags, max_items)
    return gen.struct(spec.struct, 0)


def random_int(rng: random.Random, type_name: str) -> int:
    """Edge values (0, -1, min, max, small) half the time, uniform otherwise."""
    lo, hi = _INT_RANGES[type_name]
    edges = [v for v in (0, -1, lo, hi, rng.randrange(100)) if lo <= v <= hi]
    if rng.random() < 0.5:
        return rng.choice(edges)
    return rng.randint(lo, hi)


def random_string(rng: random.Random, max_chars: int = 6) -> str:
    return "".join(rng.choice(GLYPHS) for _ in range(rng.randint(0, max_chars)))


def random_bytes(rng: random.Random, max_len: int) -> bytes:
    return rng.randbytes(rng.randint(0, max_len))


def random_float(rng: random.Random) -> float:
    """Finite doubles, including 0.0 and odd bit patterns (no NaN: NaN != NaN)."""
    choice = rng.randrange(4)
    if choice == 0:
        return 0.0
    if choice == 1:
        return (rng.random() - 0.5) * 1e6
    while True:
        (v,) = _struct.unpack(">d", rng.randbytes(8))
        if v == v and v not in (float("inf"), float("-inf")):
            return v


class _Gen:
    def __init__(self, rng: random.Random, version: int, flexible: bool,
                 unknown_tags: bool, max_items: int) -> None:
        self.rng = rng
        self.version = version
        self.flexible = flexible
        self.unknown_tags = unknown_tags
        self.max_items = max_items

    def struct(self, spec: StructSpec, depth: int) -> Struct:
        v = self.version
        values: dict[str, Any] = {}
        used_tags: set[int] = set()
        for f in spec.fields:
            if v not in f.versions:
                continue  # absent at this version: keeps its default
            if self.flexible and v in f.tagged:
                assert f.tag is not None
                used_tags.add(f.tag)
                if self.rng.random() < 0.5:
                    continue  # default: not written
            values[f.attr] = self.value(f, depth)
        obj = spec.new(**values)
        if self.flexible and self.unknown_tags and self.rng.random() < 0.3:
            obj.unknown_tags = self._unknown(used_tags)
        return obj

    def _unknown(self, used: set[int]) -> dict[int, bytes]:
        out: dict[int, bytes] = {}
        for _ in range(self.rng.randint(1, 2)):
            tag = self.rng.choice([self.rng.randrange(10, 40), self.rng.randrange(200, 20000)])
            if tag not in used:
                out[tag] = random_bytes(self.rng, 6)
        return out

    def value(self, f: FieldSpec, depth: int) -> Any:
        rng = self.rng
        nullable = self.version in f.nullable
        if nullable and rng.random() < 0.2:
            return None
        if f.is_array:
            limit = self.max_items if depth < 2 else 1
            n = rng.randint(0, limit)
            return [self.element(f, depth + 1) for _ in range(n)]
        if f.is_struct:
            assert f.struct is not None
            return self.struct(f.struct, depth + 1)
        return self.primitive(f.type)

    def element(self, f: FieldSpec, depth: int) -> Any:
        if f.is_struct:
            assert f.struct is not None
            return self.struct(f.struct, depth)
        return self.primitive(f.element_type)

    def primitive(self, t: str) -> Any:
        rng = self.rng
        if t in _INT_RANGES:
            return random_int(rng, t)
        if t == "bool":
            return rng.random() < 0.5
        if t == "float64":
            return random_float(rng)
        if t == "string":
            return random_string(rng)
        if t == "bytes":
            return random_bytes(rng, 8)
        if t == "records":
            return random_bytes(rng, 24)  # opaque to the codec; never parsed here
        if t == "uuid":
            return uuid.UUID(int=0) if rng.random() < 0.25 else uuid.UUID(bytes=rng.randbytes(16))
        raise ValueError(f"no random value for type {t}")
