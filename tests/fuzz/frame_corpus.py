"""The seeds the mutators start from: requests of every API and version, and the
golden frames of stock clients.

* Schema-built: for each (api key, version) in ``protocol.spec.all_apis()``, a
  request whose fields take plausible values (``_value``): small ints, arrays
  of 0-3 elements, strings from small pools, UUIDs from a pool, record batches
  from ``record_mutators`` (clean here: the mutators spoil them later).
* Golden: every frame under tests/golden/<client>/ (librdkafka, the Java
  client, kafka-python, aiokafka), decoded with our codec and laid out again.

Names are bounded on purpose (``TOPIC_POOL``, ``ID_POOL``): a fuzzer that
invented a fresh topic name per frame would auto-create a topic per frame
(each a directory, a segment and two preallocated indexes), and measure disk
churn rather than decoding. The protected names (the well-behaved clients'
topic and group, ``PROTECTED``) are never in a pool; ``frame_guard`` (in
mutators.py) drops any frame whose bytes contain them.

Inter-broker APIs (``CONTROLLER_ONLY``: LeaderAndIsr, StopReplica,
UpdateMetadata, ControlledShutdown) are laid out for the in-process decoder
runs but not sent to the broker: on a PLAINTEXT listener without an
authorizer a forged request with a higher controller epoch is obeyed (as in
Kafka, where the inter-broker listener is trusted), so it could re-lead or
stop the protected topic's partitions by fencing the real controller; that
would be the fuzzer destroying the clients' topic through a legitimate
request, not a finding.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.headers import decode_request
from protocol.schema import FieldSpec, StructSpec, Struct
from protocol.spec import all_apis
from tests.fuzz.frame_layout import Slot, layout
from tests.fuzz.record_mutators import make_records

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PROTECTED = (b"fuzz-steady",)                 # prefix of the protected topic and group
TOPIC_POOL = tuple(f"fz-t{i}" for i in range(12))
ID_POOL = tuple(f"fz-id{i}" for i in range(8))
UUID_POOL = tuple(uuid.UUID(int=random.Random(i).getrandbits(128)) for i in range(4)) + (
    uuid.UUID(int=0),)
CONTROLLER_ONLY = frozenset({4, 5, 6, 7})
# fields whose ints are kept small in the seeds: waits and counts that would
# hold a connection or make the broker create many partitions
_SMALL_INT_HINTS = ("timeout", "wait", "partitions", "count", "replication")


@dataclass(frozen=True, slots=True)
class Seed:
    api_key: int
    version: int
    body: bytes
    slots: tuple[Slot, ...]
    origin: str               # "schema" or "golden:<client>/<file>"
    client_id: str | None = "fuzz"


def _int_value(rng: random.Random, f: FieldSpec) -> int:
    name = f.attr
    if any(h in name for h in _SMALL_INT_HINTS):
        return rng.choice((0, 1, 2, -1, 10, 100))
    if name.endswith("partition") or name.endswith("index") or name == "partition_index":
        return rng.randrange(0, 3)
    if name in ("acks",):
        return rng.choice((0, 1, -1))
    if "epoch" in name or "producer_id" in name:
        return rng.choice((-1, 0, 1))
    return rng.choice((0, 1, 2, 3, -1, 7))


def _string_value(rng: random.Random, f: FieldSpec) -> str:
    name = f.attr
    if "topic" in name or name in ("name", "resource_name"):
        return rng.choice(TOPIC_POOL)
    return rng.choice(ID_POOL)


def _primitive(rng: random.Random, f: FieldSpec, t: str) -> Any:
    if t in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        v = _int_value(rng, f)
        return abs(v) if t.startswith("uint") else v
    if t == "float64":
        return rng.choice((0.0, 1.5))
    if t == "bool":
        return rng.random() < 0.5
    if t == "uuid":
        return rng.choice(UUID_POOL)
    if t == "string":
        return _string_value(rng, f)
    if t == "bytes":
        return rng.randbytes(rng.randrange(0, 16))
    return make_records(rng, mutate=False)[0]


def build_struct(rng: random.Random, spec: StructSpec, version: int, depth: int = 0) -> Struct:
    values: dict[str, Any] = {}
    for f in spec.fields:
        if version not in f.versions:
            continue
        if version in f.nullable and rng.random() < 0.1:
            values[f.attr] = None
            continue
        if f.is_array:
            n = rng.choice((0, 1, 1, 2, 3)) if depth < 3 else 0
            if f.is_struct:
                assert f.struct is not None
                values[f.attr] = [build_struct(rng, f.struct, version, depth + 1)
                                  for _ in range(n)]
            else:
                values[f.attr] = [_primitive(rng, f, f.element_type) for _ in range(n)]
        elif f.is_struct:
            assert f.struct is not None
            values[f.attr] = build_struct(rng, f.struct, version, depth + 1)
        else:
            values[f.attr] = _primitive(rng, f, f.type)
    return spec.cls(**values)


def schema_seeds(rng: random.Random, per_version: int = 3) -> list[Seed]:
    """``per_version`` requests for every (api, version)."""
    seeds: list[Seed] = []
    for key, api in all_apis().items():
        spec = api.request
        for version in spec.versions():
            for _ in range(per_version):
                msg = build_struct(rng, spec.struct, version)
                body, slots = layout(spec, msg, version)
                seeds.append(Seed(key, version, body, tuple(slots), "schema"))
    return seeds


def golden_seeds() -> list[Seed]:
    """Every golden frame that our codec decodes, laid out again."""
    seeds: list[Seed] = []
    for index in sorted(GOLDEN.glob("*/index.json")):
        for entry in json.loads(index.read_text()):
            frame = bytes.fromhex((index.parent / entry["file"]).read_text().strip())
            try:
                header, body = decode_request(frame)
            except ValueError:
                continue
            spec = all_apis()[header.api_key].request
            data, slots = layout(spec, body, header.api_version)
            seeds.append(Seed(header.api_key, header.api_version, data, tuple(slots),
                              f"golden:{index.parent.name}/{entry['file']}",
                              header.client_id))
    return seeds
