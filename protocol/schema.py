"""Declarative message schemas in Kafka's field vocabulary.

Every API's request and response is declared once, for all of its versions, in
``protocol/spec/<api>.py`` with the two constructors below::

    REQUEST = message("ProduceRequest", api_key=0, valid="0-11", flexible="9+", fields=[
        field("TransactionalId", "string", "3+", nullable="3+", default=None),
        field("Acks", "int16", "0+"),
        field("TopicData", "[]TopicProduceData", "0+", fields=[
            field("Name", "string", "0+"),
            ...
        ]),
    ])

Vocabulary (as Kafka's message JSON, written in our own form):

* ``type``: ``bool int8 int16 uint16 int32 uint32 int64 float64 string bytes
  records uuid``; ``[]<primitive>`` (array of a primitive); ``<StructName>`` (a
  nested struct, ``fields=`` required); ``[]<StructName>`` (array of structs).
* ``versions``: the versions in which the field is present on the wire.
* ``nullable``: versions in which the value may be null (strings, bytes,
  records, arrays, structs).
* ``tagged`` + ``tag``: versions in which the field travels in the tagged-field
  section instead of in line; it is written only when it differs from its
  default.
* ``default``: the value when the field is absent (older version, or a tagged
  field not sent). Omitted: 0, False, "", b"", zero UUID, [] or a default
  struct; records default to None.
* ``ignorable``: documentation only (Kafka refuses to drop non-ignorable fields
  on encode; we drop silently and the cross-checks catch real mistakes).

Names are Kafka's CamelCase; Python attributes are their snake_case
(``attr_name``), and Kafka's JSON form is lower-camel (``json_name``).
"""

from __future__ import annotations

import re
import uuid as _uuid
from dataclasses import dataclass, field as dc_field
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from protocol.versions import NONE, VersionRange

PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
     "string", "bytes", "records", "uuid"}
)
ZERO_UUID = _uuid.UUID(int=0)

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def attr_name(kafka_name: str) -> str:
    """'TopicId' -> 'topic_id', 'IsKRaftController' -> 'is_k_raft_controller'."""
    return _CAMEL_BOUNDARY.sub("_", kafka_name).lower()


def json_name(kafka_name: str) -> str:
    """Kafka's JSON converter form: 'TopicId' -> 'topicId'."""
    return kafka_name[:1].lower() + kafka_name[1:]


@dataclass(frozen=True, eq=False)
class FieldSpec:
    """One field of a struct. ``fields`` is set for struct and struct-array types."""

    name: str                       # Kafka CamelCase name
    type: str                       # as written in the spec, e.g. "[]int32", "[]Topic"
    versions: VersionRange
    nullable: VersionRange = NONE
    tagged: VersionRange = NONE
    tag: int | None = None
    default: Any = None             # None here means "type default" unless has_default
    has_default: bool = False
    ignorable: bool = False
    fields: tuple[FieldSpec, ...] = ()
    about: str = ""
    attr: str = ""                  # snake_case attribute name, derived
    struct: StructSpec | None = None  # derived for struct types

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES

    def default_value(self) -> Any:
        """A fresh default (fresh because lists and structs are mutable)."""
        if self.has_default:
            if self.default is None:
                return None
            if self.is_array:
                return list(self.default)
            return self.default
        if self.is_array:
            return []
        if self.is_struct:
            assert self.struct is not None
            return self.struct.new()
        return primitive_default(self.type)


def primitive_default(type_name: str) -> Any:
    if type_name == "bool":
        return False
    if type_name in ("string",):
        return ""
    if type_name == "bytes":
        return b""
    if type_name == "records":
        return None
    if type_name == "uuid":
        return ZERO_UUID
    if type_name == "float64":
        return 0.0
    return 0


class Struct:
    """Base of every generated message class.

    Subclasses get ``__slots__`` = the struct's attribute names plus
    ``unknown_tags`` (tag -> raw bytes of tagged fields we do not know, kept so
    they round-trip).
    """

    __slots__ = ("unknown_tags",)
    SPEC: StructSpec
    # the request or response a top-level struct's class encodes (``message`` sets it)
    MESSAGE: ClassVar[MessageSpec | None] = None
    unknown_tags: dict[int, bytes] | None

    if TYPE_CHECKING:
        # The fields are generated per message (StructSpec makes a subclass with them as
        # slots): to a type checker every field of a message is Any.
        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...

    def __init__(self, **values: Any) -> None:
        # Each subclass gets a generated keyword-only __init__ (_compile_init); this
        # generic one serves field names that are not Python identifiers.
        spec = self.SPEC
        for f in spec.fields:
            if f.attr in values:
                object.__setattr__(self, f.attr, values.pop(f.attr))
            else:
                object.__setattr__(self, f.attr, f.default_value())
        self.unknown_tags = values.pop("unknown_tags", None)
        if values:
            raise TypeError(f"{spec.name}: unknown fields {sorted(values)}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.SPEC.attrs) and (
            (self.unknown_tags or None) == (other.unknown_tags or None))

    # mutable and compared by value: unhashable, the way Python spells it (typeshed
    # declares object.__hash__ a method, hence the one ignore of our own code)
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{a}={getattr(self, a)!r}" for a in self.SPEC.attrs)
        return f"{self.SPEC.name}({inner})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for a in self.SPEC.attrs:
            v = getattr(self, a)
            if isinstance(v, Struct):
                v = v.to_dict()
            elif isinstance(v, list):
                v = [x.to_dict() if isinstance(x, Struct) else x for x in v]
            out[a] = v
        return out


@dataclass(eq=False)
class StructSpec:
    name: str
    fields: tuple[FieldSpec, ...]
    cls: type[Struct] = dc_field(init=False)
    attrs: tuple[str, ...] = dc_field(init=False)

    def __post_init__(self) -> None:
        self.attrs = tuple(f.attr for f in self.fields)
        seen: set[str] = set()
        for f in self.fields:
            if f.attr in seen:
                raise ValueError(f"{self.name}: duplicate field {f.name}")
            seen.add(f.attr)
        namespace: dict[str, Any] = {"__slots__": self.attrs, "SPEC": self}
        init = _compile_init(self)
        if init is not None:
            namespace["__init__"] = init
            namespace["__eq__"] = _compile_eq(self)
        self.cls = type(self.name, (Struct,), namespace)

    def new(self, **values: Any) -> Struct:
        return self.cls(**values)


_IMMUTABLE_DEFAULTS = (bool, int, float, str, bytes, _uuid.UUID, type(None))


def _compile_init(spec: StructSpec) -> Any:
    """A keyword-only ``__init__`` for ``spec``'s class, or None when a field name
    is not an identifier. Structs are built per partition on the hot paths
    (Fetch responses, replica fetches), where the generic loop over FieldSpecs
    cost more than encoding them. Immutable defaults are bound as parameter
    defaults; lists and nested structs get a fresh value per instance."""
    import keyword

    names = [f.attr for f in spec.fields]
    if any(not n.isidentifier() or keyword.iskeyword(n) or n in ("self", "unknown_tags")
           for n in names):
        return None
    env: dict[str, Any] = {"_MISSING": _MISSING}
    params, body = [], []
    for i, f in enumerate(spec.fields):
        value = f.default_value()
        if isinstance(value, _IMMUTABLE_DEFAULTS):
            env[f"_d{i}"] = value
            params.append(f"{f.attr}=_d{i}")
            body.append(f"    self.{f.attr} = {f.attr}")
        else:
            env[f"_f{i}"] = _fresh_default(f)
            params.append(f"{f.attr}=_MISSING")
            body.append(f"    self.{f.attr} = _f{i}() if {f.attr} is _MISSING else {f.attr}")
    src = ("def __init__(self, *, " + "".join(p + ", " for p in params) + "unknown_tags=None):\n"
           + "".join(line + "\n" for line in body) + "    self.unknown_tags = unknown_tags\n")
    exec(compile(src, f"<struct {spec.name}>", "exec"), env)
    return env["__init__"]


def _compile_eq(spec: StructSpec) -> Any:
    """``Struct.__eq__`` unrolled for ``spec``'s fields (same order, same result):
    the encoders compare every tagged struct field with its default."""
    terms = "".join(f"self.{a} == other.{a} and " for a in spec.attrs)
    src = ("def __eq__(self, other):\n"
           "    if type(other) is not type(self):\n"
           "        return NotImplemented\n"
           f"    return {terms}(self.unknown_tags or None) == (other.unknown_tags or None)\n")
    env: dict[str, Any] = {}
    exec(compile(src, f"<struct {spec.name}>", "exec"), env)
    return env["__eq__"]


def _fresh_default(f: FieldSpec) -> Callable[[], Any]:
    """A maker of ``f``'s mutable default, as ``f.default_value`` gives it, without
    its type tests on each call (called per absent field of every struct built)."""
    if f.is_array:
        if f.has_default:
            items = tuple(f.default)
            return lambda: list(items)
        return list
    if f.is_struct and not f.has_default:
        def struct_default() -> Any:
            assert f.struct is not None         # resolved once the message is loaded
            return f.struct.new()
        return struct_default
    return f.default_value


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


@dataclass(eq=False)
class MessageSpec:
    """A request or response: the top-level struct plus its version facts."""

    name: str
    api_key: int
    kind: str                       # "request" | "response" | "data"
    valid: VersionRange
    flexible: VersionRange
    struct: StructSpec
    _structs: dict[str, StructSpec] | None = dc_field(default=None, init=False, repr=False)

    @property
    def cls(self) -> type[Struct]:
        return self.struct.cls

    def new(self, **values: Any) -> Struct:
        return self.struct.cls(**values)

    @property
    def structs(self) -> dict[str, StructSpec]:
        """Every nested struct of this message by its name, e.g.
        ``api(1).response.structs["PartitionData"].new(...)``. Found once (the tree
        is complete when the message is declared: ``field`` builds nested structs) and
        shared: callers look up, never change it; request builders ask per call."""
        found = self._structs
        if found is None:
            found = self._structs = self._find_structs()
        return found

    def _find_structs(self) -> dict[str, StructSpec]:
        found: dict[str, StructSpec] = {}
        stack = [self.struct]
        while stack:
            st = stack.pop()
            for f in st.fields:
                if f.struct is not None:
                    found.setdefault(f.struct.name, f.struct)
                    stack.append(f.struct)
        return found

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def versions(self) -> range:
        return range(self.valid.lo, self.valid.hi + 1)


def field(name: str, type: str, versions: str = "0+", *, nullable: str | None = None,
          tagged: str | None = None, tag: int | None = None, default: Any = ...,
          ignorable: bool = False, fields: list[FieldSpec] | tuple[FieldSpec, ...] = (),
          about: str = "") -> FieldSpec:
    """Declare a field. See the module docstring for the vocabulary."""
    elem = type[2:] if type.startswith("[]") else type
    if elem not in PRIMITIVES and not fields:
        raise ValueError(f"field {name}: struct type {type} needs fields=")
    if elem in PRIMITIVES and fields:
        raise ValueError(f"field {name}: primitive type {type} takes no fields")
    if (tagged is None) != (tag is None):
        raise ValueError(f"field {name}: tagged= and tag= go together")
    f = FieldSpec(
        name=name, type=type, versions=VersionRange.parse(versions),
        nullable=VersionRange.parse(nullable), tagged=VersionRange.parse(tagged), tag=tag,
        default=None if default is ... else default, has_default=default is not ...,
        ignorable=ignorable, fields=tuple(fields), about=about, attr=attr_name(name),
    )
    if f.is_struct:
        object.__setattr__(f, "struct", StructSpec(elem, f.fields))
    return f


def message(name: str, *, api_key: int, valid: str, flexible: str,
            fields: list[FieldSpec], kind: str | None = None) -> MessageSpec:
    """Declare a request or response (kind from the name's suffix unless given)."""
    if kind is None:
        kind = ("request" if name.endswith("Request")
                else "response" if name.endswith("Response") else "data")
    spec = MessageSpec(name=name, api_key=api_key, kind=kind, valid=VersionRange.parse(valid),
                       flexible=VersionRange.parse(flexible), struct=StructSpec(name, tuple(fields)))
    spec.struct.cls.MESSAGE = spec
    return spec
