"""The reference codec: a plain interpreter over the schemas.

It walks a StructSpec field by field for one version. It is the readable
definition of the wire format; ``codec_compiled`` generates straight-line
functions that must agree with it byte for byte (tests/unit/protocol checks).

Theory of operation, per struct at version v with flexible = v in the
message's flexible range:

1. Every field present at v (``v in field.versions``) and not tagged at v is
   read/written in declaration order.
2. In flexible versions the struct then ends with its tagged-field section:
   fields tagged at v, in ascending tag order, each written only when its value
   differs from its default; unknown tags read from the wire are kept in
   ``unknown_tags`` and written back.
3. Fields absent at v decode to their default.

Decode limits (issue 17, CVE-2022-34917): nothing is allocated from a length
or count before the bytes it implies have arrived. A string/bytes/records
length must fit in the remaining bytes; an array count times the *smallest
possible encoded element* (``min_encoded_size``: 4 for int32, 2 for a classic
string, the sum of a struct's inline fields plus its tagged-field count byte,
never less than 1) must fit in the remaining bytes; a tagged section's count
times 2 (tag + size) likewise; every compact length, count, tag and size is a
uvarint of at most 5 bytes (``read_uvarint32``). So a frame of n bytes decodes
to O(n) objects whatever its length fields claim.
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from protocol.primitives import (
    FLOAT64, INT8, INT16, INT32, INT64, UINT16, UINT32, DecodeError, EncodeError, Writer,
    read_uvarint32, records_size, write_uvarint,
)
from protocol.schema import FieldSpec, MessageSpec, Struct, StructSpec

_FIXED = {"int8": INT8, "int16": INT16, "uint16": UINT16, "int32": INT32,
          "uint32": UINT32, "int64": INT64, "float64": FLOAT64}


# ---------------------------------------------------------------- decode limits

_FIXED_SIZES = {"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
                "int64": 8, "float64": 8, "uuid": 16}
_min_sizes: dict[tuple[int, int, bool], int] = {}


def _type_min_size(t: str, nullable: bool, flexible: bool) -> int:
    """Fewest bytes a value of primitive type ``t`` takes (its null form included)."""
    fixed = _FIXED_SIZES.get(t)
    if fixed is not None:
        return fixed
    if flexible:
        return 1  # compact length
    return 2 if t == "string" else 4


def field_min_size(f: FieldSpec, version: int, flexible: bool) -> int:
    """Fewest bytes field ``f`` takes in line at ``version``."""
    nullable = version in f.nullable
    if f.is_array:
        return 1 if flexible else 4
    if f.is_struct:
        assert f.struct is not None
        return 1 if nullable else min_encoded_size(f.struct, version, flexible)
    return _type_min_size(f.type, nullable, flexible)


def min_encoded_size(spec: StructSpec, version: int, flexible: bool) -> int:
    """Fewest bytes one ``spec`` struct takes at ``version`` (cached)."""
    key = (id(spec), version, flexible)
    size = _min_sizes.get(key)
    if size is None:
        size = sum(field_min_size(f, version, flexible) for f in spec.fields
                   if version in f.versions and not (flexible and version in f.tagged))
        if flexible:
            size += 1  # the tagged-field count
        _min_sizes[key] = size
    return size


def element_min_size(f: FieldSpec, version: int, flexible: bool) -> int:
    """Fewest bytes one element of array field ``f`` takes; at least 1, so that a count
    is never larger than the bytes left even for elements of no bytes at all."""
    if f.is_struct:
        assert f.struct is not None
        size = min_encoded_size(f.struct, version, flexible)
    else:
        size = _type_min_size(f.element_type, False, flexible)
    return max(size, 1)


# ---------------------------------------------------------------- decoding

class Reader:
    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: Any, pos: int = 0, end: int | None = None) -> None:
        self.buf = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
        self.pos = pos
        self.end = len(self.buf) if end is None else end

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > self.end:
            raise DecodeError(f"need {n} bytes at {self.pos}, have {self.end - self.pos}")
        start = self.pos
        self.pos += n
        return self.buf[start:self.pos]

    def fixed(self, st: Any) -> Any:
        if self.pos + st.size > self.end:
            raise DecodeError(f"truncated at {self.pos}")
        (v,) = st.unpack_from(self.buf, self.pos)
        self.pos += st.size
        return v

    def uvarint(self) -> int:
        v, self.pos = read_uvarint32(self.buf, self.pos)
        if self.pos > self.end:
            raise DecodeError("varint runs past the end")
        return v


def _read_length(r: Reader, flexible: bool, classic: Any) -> int:
    """Length/count prefix: classic int16/int32 (-1 null) or compact uvarint+1."""
    if flexible:
        return r.uvarint() - 1
    return r.fixed(classic)


def read_field(f: FieldSpec, r: Reader, version: int, flexible: bool) -> Any:
    t = f.type
    nullable = version in f.nullable
    if f.is_array:
        n = _read_length(r, flexible, INT32)
        if n < 0:
            if not nullable:
                raise DecodeError(f"null array {f.name} is not nullable at v{version}")
            return None
        if n * element_min_size(f, version, flexible) > r.end - r.pos:
            raise DecodeError(f"array {f.name} count {n} exceeds the remaining bytes")
        return [_read_element(f, r, version, flexible) for _ in range(n)]
    if f.is_struct:
        return _read_struct_field(f, r, version, flexible, nullable)
    return _read_primitive(t, f, r, flexible, nullable, version)


def _read_struct_field(f: FieldSpec, r: Reader, version: int, flexible: bool,
                       nullable: bool) -> Any:
    assert f.struct is not None
    if nullable:
        marker = r.fixed(INT8)
        if marker < 0:
            return None
    return decode_struct(f.struct, r, version, flexible)


def _read_element(f: FieldSpec, r: Reader, version: int, flexible: bool) -> Any:
    if f.is_struct:
        assert f.struct is not None
        return decode_struct(f.struct, r, version, flexible)
    return _read_primitive(f.element_type, f, r, flexible, False, version)


def _read_primitive(t: str, f: FieldSpec, r: Reader, flexible: bool, nullable: bool,
                    version: int) -> Any:
    st = _FIXED.get(t)
    if st is not None:
        return r.fixed(st)
    if t == "bool":
        return r.fixed(INT8) != 0
    if t == "uuid":
        return uuid.UUID(bytes=bytes(r.take(16)))
    n = _read_length(r, flexible, INT16 if t == "string" else INT32)
    if n < 0:
        if not nullable:
            raise DecodeError(f"null {t} {f.name} is not nullable at v{version}")
        return None
    data = r.take(n)
    if t == "string":
        try:
            return str(data, "utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError(f"{f.name}: invalid UTF-8") from e
    if t == "bytes":
        return bytes(data)
    return data  # records: a zero-copy view into the frame


def decode_struct(spec: StructSpec, r: Reader, version: int, flexible: bool) -> Struct:
    obj = spec.cls.__new__(spec.cls)
    obj.unknown_tags = None
    tagged: dict[int, FieldSpec] = {}
    for f in spec.fields:
        if version not in f.versions:
            object.__setattr__(obj, f.attr, f.default_value())
        elif flexible and version in f.tagged:
            assert f.tag is not None
            tagged[f.tag] = f
            object.__setattr__(obj, f.attr, f.default_value())
        else:
            object.__setattr__(obj, f.attr, read_field(f, r, version, flexible))
    if flexible:
        _read_tagged_section(obj, tagged, r, version)
    return obj


class TaggedFields(Protocol):
    """What receives a tagged section: a Struct, or a header's holder of the (all
    unknown) tagged fields."""

    unknown_tags: dict[int, bytes] | None


def _read_tagged_section(obj: TaggedFields, tagged: dict[int, FieldSpec], r: Reader,
                         version: int) -> None:
    count = r.uvarint()
    if count * 2 > r.end - r.pos:  # each tagged field takes at least its tag and size
        raise DecodeError(f"tagged field count {count} exceeds the remaining bytes")
    last = -1
    for _ in range(count):
        tag = r.uvarint()
        size = r.uvarint()
        if tag <= last:
            raise DecodeError(f"tagged fields out of order: {tag} after {last}")
        last = tag
        payload = r.take(size)
        f = tagged.get(tag)
        if f is None:
            if obj.unknown_tags is None:
                obj.unknown_tags = {}
            obj.unknown_tags[tag] = bytes(payload)
            continue
        sub = Reader(payload)
        object.__setattr__(obj, f.attr, read_field(f, sub, version, True))
        if sub.pos != sub.end:
            raise DecodeError(f"tagged field {f.name}: {sub.end - sub.pos} bytes left over")


# ---------------------------------------------------------------- encoding

def _write_length(w: Writer, n: int, flexible: bool, classic: Any) -> None:
    if flexible:
        write_uvarint(w.buf, n + 1)
    else:
        w.buf += classic.pack(n)


def write_field(f: FieldSpec, value: Any, w: Writer, version: int, flexible: bool) -> None:
    nullable = version in f.nullable
    if f.is_array:
        if value is None:
            if not nullable:
                raise EncodeError(f"{f.name} is not nullable at v{version}")
            _write_length(w, -1, flexible, INT32)
            return
        _write_length(w, len(value), flexible, INT32)
        for item in value:
            _write_element(f, item, w, version, flexible)
        return
    if f.is_struct:
        assert f.struct is not None
        if nullable:
            if value is None:
                w.buf += INT8.pack(-1)
                return
            w.buf += INT8.pack(1)
        elif value is None:
            raise EncodeError(f"{f.name} is not nullable at v{version}")
        encode_struct(f.struct, value, w, version, flexible)
        return
    _write_primitive(f.type, f, value, w, flexible, nullable, version)


def _write_element(f: FieldSpec, item: Any, w: Writer, version: int, flexible: bool) -> None:
    if f.is_struct:
        assert f.struct is not None
        encode_struct(f.struct, item, w, version, flexible)
    else:
        _write_primitive(f.element_type, f, item, w, flexible, False, version)


def _write_primitive(t: str, f: FieldSpec, value: Any, w: Writer, flexible: bool,
                     nullable: bool, version: int) -> None:
    st = _FIXED.get(t)
    if st is not None:
        w.buf += st.pack(value)
        return
    if t == "bool":
        w.buf.append(1 if value else 0)
        return
    if t == "uuid":
        w.buf += value.bytes
        return
    if value is None:
        if not nullable:
            raise EncodeError(f"{f.name} is not nullable at v{version}")
        _write_length(w, -1, flexible, INT16 if t == "string" else INT32)
        return
    if t == "string":
        data = value.encode("utf-8")
        if len(data) > 0x7FFF:
            raise EncodeError(f"{f.name}: string of {len(data)} bytes is too long")
        _write_length(w, len(data), flexible, INT16)
        w.buf += data
    elif t == "bytes":
        _write_length(w, len(value), flexible, INT32)
        w.buf += value
    else:
        _write_length(w, records_size(value), flexible, INT32)
        w.records(value)


def encode_struct(spec: StructSpec, obj: Struct, w: Writer, version: int, flexible: bool) -> None:
    tagged: list[tuple[int, FieldSpec, Any]] = []
    for f in spec.fields:
        if version not in f.versions:
            continue
        value = getattr(obj, f.attr)
        if flexible and version in f.tagged:
            if value != f.default_value():
                assert f.tag is not None
                tagged.append((f.tag, f, value))
            continue
        write_field(f, value, w, version, flexible)
    if flexible:
        write_tagged_section(tagged, obj.unknown_tags, w, version)


def write_tagged_section(tagged: list[tuple[int, FieldSpec, Any]],
                         unknown: dict[int, bytes] | None, w: Writer, version: int) -> None:
    """Write the tagged-field trailer: known fields that differ from their
    default plus unknown tags kept from decoding, ascending by tag."""
    entries: list[tuple[int, bytes]] = []
    for tag, f, value in tagged:
        sub = Writer()
        write_field(f, value, sub, version, True)
        entries.append((tag, b"".join(bytes(c) for c in sub.chunks())))
    if unknown:
        entries.extend(unknown.items())
        entries.sort(key=lambda e: e[0])
    write_uvarint(w.buf, len(entries))
    for tag, payload in entries:
        write_uvarint(w.buf, tag)
        write_uvarint(w.buf, len(payload))
        w.buf += payload


# ---------------------------------------------------------------- entry points

def _check_version(spec: MessageSpec, version: int) -> None:
    if version not in spec.valid:
        raise EncodeError(f"{spec.name} has no version {version} (valid {spec.valid})")


def encode_chunks_ref(msg: Struct, version: int, spec: MessageSpec) -> list[Any]:
    _check_version(spec, version)
    w = Writer()
    encode_struct(spec.struct, msg, w, version, spec.is_flexible(version))
    return w.chunks()


def encode_ref(msg: Struct, version: int, spec: MessageSpec) -> bytes:
    return b"".join(bytes(c) for c in encode_chunks_ref(msg, version, spec))


def decode_from_ref(spec: MessageSpec, buf: Any, offset: int, version: int) -> tuple[Struct, int]:
    if version not in spec.valid:
        raise DecodeError(f"{spec.name} has no version {version} (valid {spec.valid})")
    r = Reader(buf, offset)
    try:
        msg = decode_struct(spec.struct, r, version, spec.is_flexible(version))
    except (IndexError, ValueError) as e:
        if isinstance(e, DecodeError):
            raise
        raise DecodeError(str(e)) from e
    return msg, r.pos


def decode_ref(spec: MessageSpec, buf: Any, version: int) -> Struct:
    msg, end = decode_from_ref(spec, buf, 0, version)
    if end != len(buf):
        raise DecodeError(f"{spec.name} v{version}: {len(buf) - end} trailing bytes")
    return msg
