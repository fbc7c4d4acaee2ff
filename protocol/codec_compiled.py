"""The compiled codec: straight-line Python generated per (struct, version, flexible).

For each struct at one version we generate one decode and one encode
function with ``exec``. Runs of fixed-width fields (ints, bools, floats, UUIDs)
become a single precompiled ``struct.Struct``; strings, bytes, arrays and
nested structs become inline code; record payloads stay zero-copy views on
decode and separate chunks on encode. The rare tagged-field section is handed
to the reference interpreter's helpers, so there is a single definition of it;
only its common empty form (a count byte of 0 on decode) is read inline.

Decode limits (issue 17): the generated code applies the same checks as the
reference (codec_reference's docstring): an array count times the element's
minimum encoded size (``ref.element_min_size``, a constant folded in at
generation time) must fit in the bytes left; string/bytes/records lengths
likewise; compact lengths are read with ``read_uvarint32`` (5 bytes at most).

Generated functions are cached per (id(struct spec), version, flexible). The
reference interpreter (codec_reference) is the specification; the tests check
both produce identical bytes and objects for every API and version.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Callable

from protocol import codec_reference as ref
from protocol.primitives import (
    DecodeError, EncodeError, Writer, read_uvarint32, records_size, write_uvarint,
)
from protocol.schema import FieldSpec, StructSpec

_FMT = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i",
        "uint32": "I", "int64": "q", "float64": "d", "uuid": "16s"}
_IMMUTABLE = (int, float, str, bytes, bool, uuid.UUID, type(None))

Decoder = Callable[[Any, int, int], tuple[Any, int]]
Encoder = Callable[[Any, Writer, bytearray], None]

_decoders: dict[tuple[int, int, bool], Decoder] = {}
_encoders: dict[tuple[int, int, bool], Encoder] = {}


class _Gen:
    """Accumulates source lines and the constants they reference."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {
            "DecodeError": DecodeError, "EncodeError": EncodeError, "UUID": uuid.UUID,
            "read_uvarint32": read_uvarint32, "write_uvarint": write_uvarint,
            "records_size": records_size, "ref": ref, "Writer": Writer,
            "H16": struct.Struct(">h"), "I32": struct.Struct(">i"), "B8": struct.Struct(">b"),
        }
        self._n = 0

    def const(self, value: Any) -> str:
        self._n += 1
        name = f"_c{self._n}"
        self.ns[name] = value
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def build(self, fname: str) -> Any:
        exec("\n".join(self.lines), self.ns)  # noqa: S102 - our own generated source
        return self.ns[fname]


def _inline_fields(spec: StructSpec, version: int, flexible: bool) -> list[FieldSpec]:
    return [f for f in spec.fields
            if version in f.versions and not (flexible and version in f.tagged)]


def _fixed_runs(fields: list[FieldSpec]) -> list[list[FieldSpec] | FieldSpec]:
    """Group consecutive fixed-width fields so each run is one struct call."""
    out: list[list[FieldSpec] | FieldSpec] = []
    for f in fields:
        if not f.is_array and f.type in _FMT:
            if out and isinstance(out[-1], list):
                out[-1].append(f)
            else:
                out.append([f])
        else:
            out.append(f)
    return out


# ---------------------------------------------------------------- decode

def decoder(spec: StructSpec, version: int, flexible: bool) -> Decoder:
    key = (id(spec), version, flexible)
    fn = _decoders.get(key)
    if fn is None:
        fn = _gen_decoder(spec, version, flexible)
        _decoders[key] = fn
    return fn


def _gen_decoder(spec: StructSpec, version: int, flexible: bool) -> Decoder:
    g = _Gen()
    g.ns["cls"] = spec.cls
    g.emit(0, "def dec(buf, pos, end):")
    g.emit(1, "o = cls.__new__(cls)")
    g.emit(1, "o.unknown_tags = None")
    inline = _inline_fields(spec, version, flexible)
    for f in spec.fields:
        if f not in inline:
            _emit_default(g, f)
    for item in _fixed_runs(inline):
        if isinstance(item, list):
            _emit_fixed_decode(g, item)
        else:
            _emit_var_decode(g, item, version, flexible)
    if flexible:
        tagged = {f.tag: f for f in spec.fields if version in f.versions and version in f.tagged}
        t = g.const(tagged)
        # nearly every struct has no tagged field: its count byte is 0, read here
        g.emit(1, "if pos < end and buf[pos] == 0:")
        g.emit(2, "pos += 1")
        g.emit(1, "else:")
        g.emit(2, "r = ref.Reader(buf, pos, end)")
        g.emit(2, f"ref._read_tagged_section(o, {t}, r, {version})")
        g.emit(2, "pos = r.pos")
    g.emit(1, "return o, pos")
    return g.build("dec")


def _emit_default(g: _Gen, f: FieldSpec) -> None:
    d = f.default_value()
    if isinstance(d, _IMMUTABLE):
        g.emit(1, f"o.{f.attr} = {g.const(d)}")
    elif isinstance(d, list) and not d:
        g.emit(1, f"o.{f.attr} = []")
    else:
        g.emit(1, f"o.{f.attr} = {g.const(f)}.default_value()")


def _emit_fixed_decode(g: _Gen, run: list[FieldSpec]) -> None:
    st = struct.Struct(">" + "".join(_FMT[f.type] for f in run))
    s = g.const(st)
    names = ", ".join(f"v{i}" for i in range(len(run)))
    g.emit(1, f"{names}, = {s}.unpack_from(buf, pos)")
    g.emit(1, f"pos += {st.size}")
    for i, f in enumerate(run):
        val = f"UUID(bytes=v{i})" if f.type == "uuid" else f"v{i}"
        g.emit(1, f"o.{f.attr} = {val}")


def _emit_length(g: _Gen, ind: int, flexible: bool, classic: str) -> None:
    """Leave the length/count in ``n`` (-1 for null)."""
    if flexible:
        g.emit(ind, "n, pos = read_uvarint32(buf, pos)")
        g.emit(ind, "n -= 1")
    else:
        g.emit(ind, f"n, = {classic}.unpack_from(buf, pos)")
        g.emit(ind, f"pos += {2 if classic == 'H16' else 4}")


def _emit_null(g: _Gen, ind: int, f: FieldSpec, version: int, target: str) -> None:
    if version in f.nullable:
        g.emit(ind, f"{target} = None")
    else:
        g.emit(ind, f"raise DecodeError({f'null {f.name} is not nullable at v{version}'!r})")


def _emit_var_decode(g: _Gen, f: FieldSpec, version: int, flexible: bool) -> None:
    target = f"o.{f.attr}"
    if f.is_array:
        _emit_length(g, 1, flexible, "I32")
        g.emit(1, "if n < 0:")
        _emit_null(g, 2, f, version, target)
        g.emit(1, "else:")
        size = ref.element_min_size(f, version, flexible)
        g.emit(2, "if n > end - pos:" if size == 1 else f"if n * {size} > end - pos:")
        g.emit(3, f"raise DecodeError({f'array {f.name}: count exceeds the remaining bytes'!r})")
        g.emit(2, "items = []")
        g.emit(2, "for _ in range(n):")
        _emit_element_decode(g, 3, f, version, flexible)
        g.emit(2, f"{target} = items")
    elif f.is_struct:
        assert f.struct is not None
        d = g.const(decoder(f.struct, version, flexible))
        if version in f.nullable:
            g.emit(1, "m, = B8.unpack_from(buf, pos)")
            g.emit(1, "pos += 1")
            g.emit(1, "if m < 0:")
            g.emit(2, f"{target} = None")
            g.emit(1, "else:")
            g.emit(2, f"{target}, pos = {d}(buf, pos, end)")
        else:
            g.emit(1, f"{target}, pos = {d}(buf, pos, end)")
    else:
        _emit_blob_decode(g, 1, f.type, f, version, flexible, target)


def _emit_element_decode(g: _Gen, ind: int, f: FieldSpec, version: int, flexible: bool) -> None:
    t = f.element_type
    if f.is_struct:
        assert f.struct is not None
        d = g.const(decoder(f.struct, version, flexible))
        g.emit(ind, f"e, pos = {d}(buf, pos, end)")
    elif t in _FMT:
        st = struct.Struct(">" + _FMT[t])
        g.emit(ind, f"e, = {g.const(st)}.unpack_from(buf, pos)")
        g.emit(ind, f"pos += {st.size}")
        if t == "uuid":
            g.emit(ind, "e = UUID(bytes=e)")
    else:
        nf = FieldSpec(name=f.name, type=t, versions=f.versions, attr=f.attr)  # not nullable
        _emit_blob_decode(g, ind, t, nf, version, flexible, "e")
    g.emit(ind, "items.append(e)")


def _emit_blob_decode(g: _Gen, ind: int, t: str, f: FieldSpec, version: int, flexible: bool,
                      target: str) -> None:
    """string / bytes / records."""
    _emit_length(g, ind, flexible, "H16" if t == "string" else "I32")
    g.emit(ind, "if n < 0:")
    _emit_null(g, ind + 1, f, version, target)
    g.emit(ind, "else:")
    g.emit(ind + 1, "if pos + n > end:")
    g.emit(ind + 2, f"raise DecodeError({f'{f.name}: length exceeds the remaining bytes'!r})")
    if t == "string":
        g.emit(ind + 1, f"{target} = str(buf[pos:pos + n], 'utf-8')")
    elif t == "bytes":
        g.emit(ind + 1, f"{target} = bytes(buf[pos:pos + n])")
    else:
        g.emit(ind + 1, f"{target} = buf[pos:pos + n]")
    g.emit(ind + 1, "pos += n")


# ---------------------------------------------------------------- encode

def encoder(spec: StructSpec, version: int, flexible: bool) -> Encoder:
    key = (id(spec), version, flexible)
    fn = _encoders.get(key)
    if fn is None:
        fn = _gen_encoder(spec, version, flexible)
        _encoders[key] = fn
    return fn


def _gen_encoder(spec: StructSpec, version: int, flexible: bool) -> Encoder:
    g = _Gen()
    g.emit(0, "def enc(o, w, b):")
    inline = _inline_fields(spec, version, flexible)
    for item in _fixed_runs(inline):
        if isinstance(item, list):
            st = struct.Struct(">" + "".join(_FMT[f.type] for f in item))
            args = ", ".join(f"o.{f.attr}.bytes" if f.type == "uuid" else f"o.{f.attr}"
                             for f in item)
            g.emit(1, f"b += {g.const(st)}.pack({args})")
        else:
            _emit_var_encode(g, item, version, flexible)
    if flexible:
        tagged = [f for f in spec.fields if version in f.versions and version in f.tagged]
        if tagged:
            g.emit(1, "tagged = []")
            for f in tagged:
                fc = g.const(f)
                g.emit(1, f"v = o.{f.attr}")
                # compared by value with one default made here: a list or struct
                # default is bound to this function alone, and comparing does not
                # change it
                g.emit(1, f"if v != {g.const(f.default_value())}:")
                g.emit(2, f"tagged.append(({f.tag}, {fc}, v))")
            g.emit(1, f"ref.write_tagged_section(tagged, o.unknown_tags, w, {version})")
        else:
            g.emit(1, "if o.unknown_tags:")
            g.emit(2, f"ref.write_tagged_section([], o.unknown_tags, w, {version})")
            g.emit(1, "else:")
            g.emit(2, "b.append(0)")
    g.emit(1, "return None")
    return g.build("enc")


def _emit_len_encode(g: _Gen, ind: int, flexible: bool, classic: str, expr: str) -> None:
    if flexible:
        g.emit(ind, f"write_uvarint(b, {expr} + 1)")
    else:
        g.emit(ind, f"b += {classic}.pack({expr})")


def _emit_null_encode(g: _Gen, ind: int, f: FieldSpec, version: int, flexible: bool,
                      classic: str) -> None:
    if version in f.nullable:
        _emit_len_encode(g, ind, flexible, classic, "-1")
    else:
        g.emit(ind, f"raise EncodeError({f'{f.name} is not nullable at v{version}'!r})")


def _emit_var_encode(g: _Gen, f: FieldSpec, version: int, flexible: bool) -> None:
    g.emit(1, f"v = o.{f.attr}")
    if f.is_array:
        g.emit(1, "if v is None:")
        _emit_null_encode(g, 2, f, version, flexible, "I32")
        g.emit(1, "else:")
        _emit_len_encode(g, 2, flexible, "I32", "len(v)")
        g.emit(2, "for e in v:")
        _emit_element_encode(g, 3, f, version, flexible)
    elif f.is_struct:
        assert f.struct is not None
        e = g.const(encoder(f.struct, version, flexible))
        if version in f.nullable:
            g.emit(1, "if v is None:")
            g.emit(2, "b.append(255)")
            g.emit(1, "else:")
            g.emit(2, "b.append(1)")
            g.emit(2, f"{e}(v, w, b)")
        else:
            g.emit(1, "if v is None:")
            g.emit(2, f"raise EncodeError({f'{f.name} is not nullable at v{version}'!r})")
            g.emit(1, f"{e}(v, w, b)")
    else:
        _emit_blob_encode(g, 1, f.type, f, version, flexible, "v")


def _emit_element_encode(g: _Gen, ind: int, f: FieldSpec, version: int, flexible: bool) -> None:
    t = f.element_type
    if f.is_struct:
        assert f.struct is not None
        g.emit(ind, f"{g.const(encoder(f.struct, version, flexible))}(e, w, b)")
    elif t in _FMT:
        st = g.const(struct.Struct(">" + _FMT[t]))
        g.emit(ind, f"b += {st}.pack(e.bytes)" if t == "uuid" else f"b += {st}.pack(e)")
    else:
        nf = FieldSpec(name=f.name, type=t, versions=f.versions, attr=f.attr)
        _emit_blob_encode(g, ind, t, nf, version, flexible, "e")


def _emit_blob_encode(g: _Gen, ind: int, t: str, f: FieldSpec, version: int, flexible: bool,
                      var: str) -> None:
    classic = "H16" if t == "string" else "I32"
    g.emit(ind, f"if {var} is None:")
    _emit_null_encode(g, ind + 1, f, version, flexible, classic)
    g.emit(ind, "else:")
    if t == "string":
        g.emit(ind + 1, f"d = {var}.encode('utf-8')")
        g.emit(ind + 1, "if len(d) > 32767:")
        g.emit(ind + 2, f"raise EncodeError({f'{f.name}: string too long'!r})")
        _emit_len_encode(g, ind + 1, flexible, classic, "len(d)")
        g.emit(ind + 1, "b += d")
    elif t == "bytes":
        _emit_len_encode(g, ind + 1, flexible, classic, f"len({var})")
        g.emit(ind + 1, f"b += {var}")
    else:
        _emit_len_encode(g, ind + 1, flexible, classic, f"records_size({var})")
        g.emit(ind + 1, f"w.records({var})")
