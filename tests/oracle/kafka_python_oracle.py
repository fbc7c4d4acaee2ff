"""kafka-python 3's JSON-driven codec as a second oracle.

kafka-python 3 carries Kafka's message JSON (``kafka/protocol/schemas/resources``,
from a newer Kafka than 3.9) and builds its own encoders/decoders from it. Here:

* ``their_classes()``: api key -> (request class, response class), found by
  importing ``kafka.protocol`` and walking ``ApiMessage`` subclasses.
* ``their_versions(cls)``: the JSON's ``validVersions`` (kafka-python itself
  accepts anything from 0 up; we only trust the range its JSON declares).
* ``their_decode`` / ``their_encode``: their codec, with a trailing-bytes check.
* ``random_theirs``: a random message built by walking *their* parsed schema
  and constructing *their* objects (so the bytes come from their encoder and
  their reading of the JSON, independent of our specs).
* ``render_theirs``: their object in the same field-by-field form as
  ``tests.oracle.java_oracle.render_ours``, to compare beyond bytes.
"""

from __future__ import annotations

import importlib
import pkgutil
import random
import struct
import uuid
import warnings
from functools import cache
from typing import Any

from tests.protocol_gen import random_bytes, random_float, random_int, random_string


@cache
def their_classes() -> dict[int, tuple[type, type]]:
    with warnings.catch_warnings():  # their JSON loader uses deprecated importlib.resources
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka.protocol as kp
        from kafka.protocol.api_message import ApiMessage

        for mod in pkgutil.walk_packages(kp.__path__, "kafka.protocol."):
            importlib.import_module(mod.name)
    found: dict[int, dict[str, type]] = {}

    def walk(cls: type) -> None:
        for sub in cls.__subclasses__():
            if getattr(sub, "_class_version", None) is None and getattr(sub, "_json", None):
                found.setdefault(sub._json["apiKey"], {})[sub._json["type"]] = sub
            walk(sub)

    walk(ApiMessage)
    return {k: (v["request"], v["response"]) for k, v in sorted(found.items())
            if "request" in v and "response" in v}


def _parse_range(text: str) -> tuple[int, int]:
    text = text.strip()
    if text == "none":
        return (1, 0)
    if text.endswith("+"):
        return (int(text[:-1]), 1 << 15)
    lo, _, hi = text.partition("-")
    return (int(lo), int(hi or lo))


def their_versions(cls: type) -> tuple[int, int]:
    return _parse_range(cls._json["validVersions"])


def their_flexible(cls: type, version: int) -> bool:
    lo, hi = _parse_range(cls._json["flexibleVersions"])
    return lo <= version <= hi


def their_decode(cls: type, data: bytes, version: int) -> Any:
    """Their compiled decoder; raises ValueError on trailing bytes."""
    flex = their_flexible(cls, version)
    fn = cls._struct.compiled_decode_from(version, compact=flex, tagged=flex, data_class=cls[None])
    obj, end = fn(memoryview(data), 0)
    if end != len(data):
        raise ValueError(f"{cls.__name__} v{version}: {len(data) - end} trailing bytes")
    # Their compiled decoder builds the object with object.__new__ and leaves the
    # ApiMessage slots unset; their encode() reads _header, so fill them as
    # __init__ would.
    for slot in ("_header", "_min_version", "_max_version"):
        if not hasattr(obj, slot):
            setattr(obj, slot, None)
    return obj


def their_encode(obj: Any, version: int) -> bytes:
    return bytes(obj.encode(version=version))


# ---------------------------------------------------------------- random, their way

def random_theirs(cls: type, version: int, rng: random.Random) -> Any:
    """A random message built from their parsed schema and their classes."""
    return _random_struct(cls._struct, cls[None], version, their_flexible(cls, version), rng, 0)


def _random_struct(sf: Any, data_class: Any, version: int, flexible: bool,
                   rng: random.Random, depth: int) -> Any:
    values: dict[str, Any] = {}
    for f in sf._fields:
        if not f.for_version_q(version):
            continue
        tagged = flexible and f.tagged_field_q(version)
        if tagged and rng.random() < 0.5:
            continue  # left at default: not written
        value = _random_value(f, version, flexible, rng, depth)
        if tagged and f.is_struct() and value is not None and _all_default(f, value):
            # Their default for a tagged struct is None, so they would write a struct
            # whose fields are all Kafka's defaults; Kafka (and we) never write that
            # (a tagged field equal to its default is omitted). Leave it unset.
            continue
        values[f.name] = value
    return data_class(version=version, **values)


def _all_default(sf: Any, obj: Any) -> bool:
    return all(getattr(obj, f.name) == f.default for f in sf._fields)


def _random_value(f: Any, version: int, flexible: bool, rng: random.Random, depth: int) -> Any:
    if f.nullable_for_version_q(version) and rng.random() < 0.2:
        return None
    if f.is_struct_array():
        n = rng.randint(0, 3 if depth < 2 else 1)
        return [_random_struct(f.array_of, f.data_class, version, flexible, rng, depth + 1)
                for _ in range(n)]
    if f.is_struct():
        return _random_struct(f, f.data_class, version, flexible, rng, depth + 1)
    if f.is_array():
        n = rng.randint(0, 3 if depth < 2 else 1)
        return [_random_simple(f.array_of._type_str, rng) for _ in range(n)]
    return _random_simple(f._type_str, rng)


def _random_simple(t: str, rng: random.Random) -> Any:
    if t in ("int8", "int16", "uint16", "int32", "int64"):
        return random_int(rng, t)
    if t == "bool":
        return rng.random() < 0.5
    if t == "float64":
        return random_float(rng)
    if t == "string":
        return random_string(rng)
    if t in ("bytes", "records"):
        return random_bytes(rng, 24 if t == "records" else 8)
    if t == "uuid":
        return uuid.UUID(bytes=rng.randbytes(16))
    if t == "bitfield":
        # kafka-python patches int32 "authorized operations" fields into a set of
        # bit numbers; None stands for Kafka's INT32_MIN ("not provided").
        if rng.random() < 0.3:
            return None
        return {b for b in range(31) if rng.random() < 0.3}
    raise ValueError(f"no random value for their type {t}")


# ---------------------------------------------------------------- field-by-field view

def render_theirs(cls: type, obj: Any, version: int) -> str:
    """Their object in ``render_ours``'s form (names lower-case without '_').

    Names come from the unpatched JSON: kafka-python's ``json_patch`` renames a
    few fields (e.g. Metadata's ClusterAuthorizedOperations becomes
    ``authorized_operations``, typed as a set of bits).
    """
    return _render_struct(cls._struct, _pristine_fields(cls._json["name"]), obj, version,
                          their_flexible(cls, version))


@cache
def _pristine_fields(name: str) -> list[dict[str, Any]]:
    from kafka.protocol.schemas import load_json

    with warnings.catch_warnings():  # their loader uses deprecated importlib.resources calls
        warnings.simplefilter("ignore", DeprecationWarning)
        return load_json(name)["fields"]  # type: ignore[no-any-return]


def _name(n: str) -> str:
    return n.replace("_", "").lower()


def _render_struct(sf: Any, js: list[dict[str, Any]], obj: Any, version: int,
                   flexible: bool) -> str:
    parts: list[str] = []
    tagged: list[tuple[int, str]] = []
    assert len(js) == len(sf._fields)
    for f, fj in zip(sf._fields, js):
        if not f.for_version_q(version):
            continue
        value = getattr(obj, f.name)
        sub = fj.get("fields", [])
        if flexible and f.tagged_field_q(version):
            if value != f.default:
                tagged.append((f.tag, f"{_name(fj['name'])}:"
                                      f"{_render(f, sub, value, version, flexible)}"))
            continue
        parts.append(f"{_name(fj['name'])}:{_render(f, sub, value, version, flexible)}")
    if flexible:
        for key, payload in (obj.unknown_tags or {}).items():
            tagged.append((int(key.lstrip("_")), "?" + bytes(payload).hex()))
        tagged.sort(key=lambda t: t[0])
        parts.append("#[" + ",".join(f"{t}={r}" for t, r in tagged) + "]")
    return "{" + ",".join(parts) + "}"


def _render(f: Any, js: list[dict[str, Any]], value: Any, version: int, flexible: bool) -> str:
    if value is None and not f.is_array() and not f.is_struct():
        return _render_simple(f._type_str, value)
    if value is None:
        return "null"
    if f.is_struct_array():
        return "[" + ",".join(_render_struct(f.array_of, js, v, version, flexible)
                              for v in value) + "]"
    if f.is_struct():
        return _render_struct(f, js, value, version, flexible)
    if f.is_array():
        return "[" + ",".join(_render_simple(f.array_of._type_str, v) for v in value) + "]"
    return _render_simple(f._type_str, value)


def _render_simple(t: str, value: Any) -> str:
    if value is None:
        # Their decoders turn INT32_MIN bitfields and the zero UUID into None.
        if t == "bitfield":
            return "-2147483648"
        return "00" * 16 if t == "uuid" else "null"
    if t == "bool":
        return "true" if value else "false"
    if t == "float64":
        return str(struct.unpack(">q", struct.pack(">d", value))[0])
    if t == "string":
        return value.encode("utf-8").hex()
    if t in ("bytes", "records"):
        return bytes(value).hex()
    if t == "uuid":
        return value.hex
    if t == "bitfield":
        bits = sum(1 << b for b in value)
        return str(bits - (1 << 32) if bits >= 1 << 31 else bits)
    return str(int(value))
