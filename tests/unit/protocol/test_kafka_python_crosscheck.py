"""Cross-check our codec against kafka-python 3.0.12's JSON-driven codec.

For every API both declare and every version in both our range and the range
kafka-python's JSON declares, requests and responses:

* ours -> kafka-python: a random message from our spec, encoded by us; their
  decode + their encode must give the identical bytes, and their decoded
  object must match ours field by field (names, order, values, tags).
* kafka-python -> ours: a random message built from their parsed JSON with
  their classes, encoded by them; our decode + our encode must give the
  identical bytes and the same fields.

kafka-python drops unknown tagged fields on encode, so no unknown tags are
generated here (the Java cross-check covers them).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from protocol.codec import decode, encode
from protocol.schema import MessageSpec
from protocol.spec import all_apis
from tests.oracle.java_oracle import render_ours
from tests.oracle.kafka_python_oracle import (
    random_theirs, render_theirs, their_classes, their_decode, their_encode, their_versions,
)
from tests.protocol_gen import random_message

SEEDS = 12
KINDS = ("request", "response")

# (api key, kind, version, direction) -> reason: cases that cannot agree, each with
# the precise reason (a codec bug found here, or a kafka-python limitation).
KNOWN_FAILURES: dict[tuple[int, str, int, str], str] = {}


def _ours(api_key: int, kind: str) -> MessageSpec:
    a = all_apis()[api_key]
    return a.request if kind == "request" else a.response


def _theirs(api_key: int, kind: str) -> type:
    return their_classes()[api_key][KINDS.index(kind)]


def _cases() -> list[tuple[int, str, int]]:
    out = []
    for k, a in all_apis().items():
        if k not in their_classes():
            continue
        for kind in KINDS:
            lo, hi = their_versions(_theirs(k, kind))
            out += [(k, kind, v) for v in a.request.versions() if lo <= v <= hi]
    return out


def _param(case: tuple[int, str, int], direction: str) -> Any:
    k, kind, v = case
    reason = KNOWN_FAILURES.get((*case, direction))
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case, marks=marks, id=f"{all_apis()[k].name}-{kind}-v{v}")


def _diff_at(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


@pytest.mark.parametrize("case", [_param(c, "ours_to_theirs") for c in _cases()])
def test_ours_to_kafka_python(case: tuple[int, str, int]) -> None:
    k, kind, v = case
    spec, cls = _ours(k, kind), _theirs(k, kind)
    for i in range(SEEDS):
        rng = random.Random(f"ours-{k}-{kind}-{v}-{i}")
        msg = random_message(spec, v, rng)
        ours = encode(msg, v)
        obj = their_decode(cls, ours, v)
        theirs = their_encode(obj, v)
        assert theirs == ours, (f"seed {i}: bytes differ at {_diff_at(ours, theirs)}\n"
                                f" ours  ={ours.hex()}\n theirs={theirs.hex()}")
        assert render_theirs(cls, obj, v) == render_ours(spec, msg, v), f"seed {i}: fields differ"


@pytest.mark.parametrize("case", [_param(c, "theirs_to_ours") for c in _cases()])
def test_kafka_python_to_ours(case: tuple[int, str, int]) -> None:
    k, kind, v = case
    spec, cls = _ours(k, kind), _theirs(k, kind)
    for i in range(SEEDS):
        rng = random.Random(f"theirs-{k}-{kind}-{v}-{i}")
        obj = random_theirs(cls, v, rng)
        theirs = their_encode(obj, v)
        msg = decode(spec, theirs, v)
        ours = encode(msg, v)
        assert ours == theirs, (f"seed {i}: bytes differ at {_diff_at(ours, theirs)}\n"
                                f" ours  ={ours.hex()}\n theirs={theirs.hex()}")
        assert render_ours(spec, msg, v) == render_theirs(cls, obj, v), f"seed {i}: fields differ"


def test_overlap_is_what_we_expect() -> None:
    """Guard the parametrization: kafka-python covers the client-facing APIs."""
    shared = set(all_apis()) & set(their_classes())
    assert {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18, 19, 20, 22} <= shared
    assert len(_cases()) > 150
