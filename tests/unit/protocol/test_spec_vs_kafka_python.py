"""Our specs against Kafka's message JSON as shipped inside kafka-python 3.0.12.

kafka-python carries Kafka's own ``*Request.json`` / ``*Response.json`` (from a
newer Kafka than 3.9). For every API both have and every version in both our
range and the JSON's ``validVersions``, the fields present at that version must
agree, recursively: name and order, type (primitive types exactly; struct vs
array-of-struct), nullability, whether the field is tagged and its tag, and its
default. The JSON is read at test time from the installed package.
"""

from __future__ import annotations

import warnings
from functools import cache
from typing import Any

import pytest

from protocol.schema import FieldSpec, MessageSpec, StructSpec
from protocol.spec import all_apis
from tests.oracle.kafka_python_oracle import their_classes

KINDS = ("request", "response")


def _load(name: str) -> dict[str, Any]:
    from kafka.protocol.schemas import load_json

    with warnings.catch_warnings():  # their loader uses deprecated importlib.resources
        warnings.simplefilter("ignore", DeprecationWarning)
        return load_json(name)  # type: ignore[no-any-return]


def _range(text: str | None) -> tuple[int, int]:
    if text is None or text.strip() == "none":
        return (1, 0)
    text = text.strip()
    if text.endswith("+"):
        return (int(text[:-1]), 1 << 15)
    lo, _, hi = text.partition("-")
    return (int(lo), int(hi or lo))


def _in(text: str | None, v: int) -> bool:
    lo, hi = _range(text)
    return lo <= v <= hi


def _elem(t: str) -> str:
    return t[2:] if t.startswith("[]") else t


_PRIMS = {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
          "string", "bytes", "records", "uuid"}


def _shape(t: str) -> str:
    """Primitive types as written; struct types reduced to 'struct' / '[]struct'."""
    e = _elem(t)
    base = e if e in _PRIMS else "struct"
    return ("[]" if t.startswith("[]") else "") + base


def _their_default(j: dict[str, Any], nullable_somewhere: bool) -> Any:
    """Kafka's default for a field, normalized to the Python value we would use."""
    t = j["type"]
    d = j.get("default")
    if t.startswith("[]"):
        return None if d == "null" else []
    if _elem(t) not in _PRIMS:
        return None if d == "null" else "struct"
    if d == "null":
        return None
    if t == "bool":
        return str(d).lower() == "true" if d not in (None, "") else False
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        if d in (None, ""):
            return 0
        s = str(d)
        return int(s, 16) if s.lower().startswith(("0x", "-0x")) else int(s)
    if t == "float64":
        return float(d) if d not in (None, "") else 0.0
    if t == "string":
        return "" if d is None else str(d)
    if t == "bytes":
        return b""
    if t == "records":
        return None
    if t == "uuid":
        return "00000000-0000-0000-0000-000000000000" if d in (None, "") else str(d)
    raise AssertionError(t)


def _our_default(f: FieldSpec) -> Any:
    if f.is_array:
        return None if f.has_default and f.default is None else []
    if f.is_struct:
        return None if f.has_default and f.default is None else "struct"
    v = f.default_value()
    if f.type == "uuid":
        return str(v)
    if f.type == "bytes" and v is not None:
        return bytes(v)
    return v


def compare_struct(ours: StructSpec, theirs: list[dict[str, Any]], versions: list[int],
                   flexible: set[int], path: str) -> list[str]:
    """Every difference, as 'path vN: what' lines (empty when they agree)."""
    problems: list[str] = []
    for v in versions:
        ofs = [f for f in ours.fields if v in f.versions]
        tjs = [j for j in theirs if _in(j.get("versions"), v)]
        onames = [f.name for f in ofs]
        tnames = [j["name"] for j in tjs]
        if onames != tnames:
            problems.append(f"{path} v{v}: fields {onames} != Kafka's {tnames}")
            continue
        for f, j in zip(ofs, tjs):
            problems += _compare_field(f, j, v, v in flexible, f"{path}.{f.name}")
    # Recurse once per nested struct, over the versions where it is present.
    for f in ours.fields:
        if f.struct is None:
            continue
        j = next((j for j in theirs if j["name"] == f.name and "fields" in j), None)
        vs = [v for v in versions if v in f.versions and j is not None and _in(j.get("versions"), v)]
        if j is not None and vs:
            problems += compare_struct(f.struct, j["fields"], vs, flexible, f"{path}.{f.name}")
    return problems


def _compare_field(f: FieldSpec, j: dict[str, Any], v: int, flex: bool, path: str) -> list[str]:
    out: list[str] = []
    if _shape(f.type) != _shape(j["type"]):
        out.append(f"{path} v{v}: type {f.type} != Kafka's {j['type']}")
    on, tn = v in f.nullable, _in(j.get("nullableVersions"), v)
    if on != tn:
        out.append(f"{path} v{v}: nullable {on} != Kafka's {tn}")
    ot = flex and v in f.tagged
    tt = flex and "tag" in j and _in(j.get("taggedVersions"), v)
    if ot != tt:
        out.append(f"{path} v{v}: tagged {ot} != Kafka's {tt}")
    elif ot and f.tag != j["tag"]:
        out.append(f"{path} v{v}: tag {f.tag} != Kafka's {j['tag']}")
    od = _our_default(f)
    td = _their_default(j, bool(j.get("nullableVersions")))
    if od != td:
        out.append(f"{path}: default {od!r} != Kafka's {td!r} ({j.get('default')!r})")
    return out


def _cases() -> list[tuple[int, str]]:
    return [(k, kind) for k in all_apis() if k in their_classes() for kind in KINDS]


@cache
def _their_json(api_key: int, kind: str) -> dict[str, Any]:
    cls = their_classes()[api_key][KINDS.index(kind)]
    return _load(cls._json["name"])


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{all_apis()[c[0]].name}-{c[1]}")
def test_spec_matches_kafka_json(case: tuple[int, str]) -> None:
    k, kind = case
    a = all_apis()[k]
    spec: MessageSpec = a.request if kind == "request" else a.response
    js = _their_json(k, kind)
    lo, hi = _range(js["validVersions"])
    versions = [v for v in spec.versions() if lo <= v <= hi]
    assert versions, f"no shared versions: ours {spec.valid}, Kafka JSON {js['validVersions']}"
    flex_lo, flex_hi = _range(js["flexibleVersions"])
    ours_flex = {v for v in versions if spec.is_flexible(v)}
    their_flex = {v for v in versions if flex_lo <= v <= flex_hi}
    assert ours_flex == their_flex, f"flexible versions {sorted(ours_flex)} != {sorted(their_flex)}"
    problems = compare_struct(spec.struct, js["fields"], versions, ours_flex, spec.name)
    assert not problems, "\n".join(problems)


def test_comparison_catches_differences() -> None:
    """The comparison itself can fail: a renamed, retyped or retagged field is found."""
    from protocol.schema import field

    base = [{"name": "A", "type": "int32", "versions": "0+"},
            {"name": "B", "type": "string", "versions": "1+", "nullableVersions": "1+",
             "taggedVersions": "1+", "tag": 0, "default": "null"}]

    def ours(*fields: FieldSpec) -> StructSpec:
        return StructSpec("T", tuple(fields))

    good = ours(field("A", "int32", "0+"),
                field("B", "string", "1+", nullable="1+", tagged="1+", tag=0, default=None))
    assert compare_struct(good, base, [0, 1], {1}, "T") == []
    renamed = ours(field("C", "int32", "0+"),
                   field("B", "string", "1+", nullable="1+", tagged="1+", tag=0, default=None))
    retyped = ours(field("A", "int64", "0+"),
                   field("B", "string", "1+", nullable="1+", tagged="1+", tag=0, default=None))
    retagged = ours(field("A", "int32", "0+"),
                    field("B", "string", "1+", nullable="1+", tagged="1+", tag=1, default=None))
    redefaulted = ours(field("A", "int32", "0+", default=-1),
                       field("B", "string", "1+", nullable="1+", tagged="1+", tag=0, default=None))
    for bad in (renamed, retyped, retagged, redefaulted):
        assert compare_struct(bad, base, [0, 1], {1}, "T")
