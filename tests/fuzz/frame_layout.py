"""Encode a request body while recording where every field's bytes sit.

The mutators work on bytes, but structure-aware: to set "the count of this
array" to 2**31-1 or "this string" to invalid UTF-8 they need to know which
bytes hold it. ``layout(spec, msg, version)`` walks the schema the way
``protocol.codec_reference`` encodes (declaration order, tagged section at the
end of each struct in flexible versions) and returns the bytes - equal to
``codec.encode`` (tests/fuzz/test_mutators.py checks it) - plus a list of
``Slot``s, one per encoded item:

    kind        what the bytes [start, end) hold
    ---------   ---------------------------------------------------------------
    int         a fixed-width integer/float/bool (``fmt`` is its struct format)
    uuid        16 bytes
    len16       classic string length, int16 (-1 null)
    len32       classic array count or bytes/records length, int32 (-1 null)
    ulen        compact length/count: uvarint of n + 1 (0 null)
    str         a string's UTF-8 bytes
    bytes       a bytes field's data
    records     a records field's data (record batches)
    nullmark    the int8 in front of a nullable struct (-1 null)
    tagcount    uvarint count of a tagged-field section
    tagged      one whole tagged field entry: tag uvarint, size uvarint, payload

``nullable`` says whether null is legal for the field at this version (the
"null where not nullable" mutation wants the other ones); ``target`` is, for
a length slot, the index of the slot holding the data it measures (str /
bytes / records), so a mutation can splice both. Slots are in byte order.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from protocol.primitives import write_uvarint
from protocol.schema import FieldSpec, MessageSpec, Struct, StructSpec

_FIXED = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
          "int64": "q", "float64": "d", "bool": "?"}


@dataclass(frozen=True, slots=True)
class Slot:
    kind: str
    start: int
    end: int
    name: str = ""            # field name (Kafka CamelCase)
    fmt: str = ""             # struct format for kind "int"
    nullable: bool = False
    target: int = -1          # for length slots: index of the data slot


class _Layout:
    def __init__(self, version: int, flexible: bool) -> None:
        self.out = bytearray()
        self.slots: list[Slot] = []
        self.version = version
        self.flexible = flexible

    def _add(self, kind: str, start: int, **kw: Any) -> int:
        self.slots.append(Slot(kind, start, len(self.out), **kw))
        return len(self.slots) - 1

    def length(self, n: int, classic: str, name: str, nullable: bool) -> int:
        start = len(self.out)
        if self.flexible:
            write_uvarint(self.out, n + 1)
            return self._add("ulen", start, name=name, nullable=nullable)
        self.out += struct.pack(">" + classic, n)
        return self._add("len16" if classic == "h" else "len32", start, name=name,
                         nullable=nullable)

    def struct(self, spec: StructSpec, obj: Struct) -> None:
        tagged: list[tuple[int, FieldSpec, Any]] = []
        for f in spec.fields:
            if self.version not in f.versions:
                continue
            value = getattr(obj, f.attr)
            if self.flexible and self.version in f.tagged:
                if value != f.default_value():
                    assert f.tag is not None
                    tagged.append((f.tag, f, value))
                continue
            self.field(f, value)
        if self.flexible:
            self.tagged_section(tagged, obj.unknown_tags)

    def field(self, f: FieldSpec, value: Any) -> None:
        nullable = self.version in f.nullable
        if f.is_array:
            if value is None:
                self.length(-1, "i", f.name, nullable)
                return
            self.length(len(value), "i", f.name, nullable)
            for item in value:
                if f.is_struct:
                    assert f.struct is not None
                    self.struct(f.struct, item)
                else:
                    self.primitive(f.element_type, f.name, item, False)
            return
        if f.is_struct:
            assert f.struct is not None
            if nullable:
                start = len(self.out)
                self.out += struct.pack(">b", -1 if value is None else 1)
                self._add("nullmark", start, name=f.name, nullable=True)
                if value is None:
                    return
            self.struct(f.struct, value)
            return
        self.primitive(f.type, f.name, value, nullable)

    def primitive(self, t: str, name: str, value: Any, nullable: bool) -> None:
        start = len(self.out)
        fmt = _FIXED.get(t)
        if fmt is not None:
            self.out += struct.pack(">" + fmt, value)
            self._add("int", start, name=name, fmt=fmt)
            return
        if t == "uuid":
            self.out += value.bytes
            self._add("uuid", start, name=name)
            return
        classic = "h" if t == "string" else "i"
        if value is None:
            self.length(-1, classic, name, nullable)
            return
        data = value.encode("utf-8") if t == "string" else bytes(value)
        at = self.length(len(data), classic, name, nullable)
        dstart = len(self.out)
        self.out += data
        target = self._add({"string": "str", "bytes": "bytes"}.get(t, "records"), dstart,
                           name=name)
        old = self.slots[at]
        self.slots[at] = Slot(old.kind, old.start, old.end, old.name, old.fmt, old.nullable,
                              target)

    def tagged_section(self, tagged: list[tuple[int, FieldSpec, Any]],
                       unknown: dict[int, bytes] | None) -> None:
        entries: list[tuple[int, bytes, list[Slot]]] = []
        for tag, f, value in tagged:
            sub = _Layout(self.version, True)
            sub.field(f, value)
            entries.append((tag, bytes(sub.out), sub.slots))
        for tag, payload in (unknown or {}).items():
            entries.append((tag, payload, []))
        entries.sort(key=lambda e: e[0])
        start = len(self.out)
        write_uvarint(self.out, len(entries))
        self._add("tagcount", start)
        for tag, payload, sub_slots in entries:
            start = len(self.out)
            write_uvarint(self.out, tag)
            write_uvarint(self.out, len(payload))
            shift = len(self.out)
            base = len(self.slots)
            self.out += payload
            self._add("tagged", start)
            for s in sub_slots:   # inner slots, shifted; kept after the entry's own slot
                self.slots.append(Slot(s.kind, s.start + shift, s.end + shift, s.name, s.fmt,
                                       s.nullable, s.target + base + 1 if s.target >= 0 else -1))


def layout(spec: MessageSpec, msg: Struct, version: int) -> tuple[bytes, list[Slot]]:
    """-> (the encoded body, its slots in encoding order)."""
    lay = _Layout(version, spec.is_flexible(version))
    lay.struct(spec.struct, msg)
    return bytes(lay.out), lay.slots
