"""Cross-check our codec against the Java client's own (kafka-clients 3.9.1).

For every API in ``protocol.spec.all_apis()``, every version both sides support,
requests and responses, in both directions:

* ours -> Java: a random message from our spec (tests/protocol_gen.py), encoded
  by us; Kafka's generated ``*Data.read`` + ``MessageUtil`` re-encode must give
  the identical bytes (so Kafka reads every field where we put it, and we write
  what Kafka would write).
* Java -> ours: random bytes from Kafka's side (its Schema for that version,
  normalized by Data.read + MessageUtil); our decode then our encode must give
  the identical bytes.

Byte equality alone would miss two same-typed fields swapped, or a tag number
that each side keeps as an "unknown" tag; so each case also compares the
message field by field (names, order, values, tags) as Kafka's generic Schema
reads it against our decoded/original Struct (``render_ours``).

All cases run in one JVM, in one batched round trip per direction, computed
once per session; each parametrized test then checks its slice.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from protocol.codec import decode, encode
from protocol.schema import MessageSpec
from protocol.spec import all_apis
from tests.oracle.java_oracle import JavaOracle, java_available, render_ours
from tests.protocol_gen import random_message

SEEDS = 25          # random messages per (api, kind, version, direction)
KINDS = ("request", "response")

# (api key, kind, version, direction) -> reason. Codec or spec bugs found by this
# file, marked xfail (strict: a fixed one fails until its entry goes) until fixed.
KNOWN_FAILURES: dict[tuple[int, str, int, str], str] = {}

# Versions the Java client cannot check, with the precise reason.
JAVA_SKIPS: dict[tuple[int, str, int], str] = {
    # Kafka's generic Schema (which the oracle renders <fields> with) reads a nullable
    # struct without its int8 presence marker, unlike the generated Data.read; our bytes
    # were checked byte-exact against ConsumerGroupHeartbeatResponseData by hand.
    (68, "response", 0): "kafka-clients' generic Schema cannot read a nullable struct",
}

# APIs we declare up to Kafka 4.0's versions, newer than kafka-clients 3.9.1's: api key ->
# the highest version 3.9.1 knows (the newer versions are skipped above).
NEWER_THAN_JAVA: dict[int, int] = {
    68: 0,  # ConsumerGroupHeartbeat v1 (SubscribedTopicRegex) is Kafka 4.0's
    69: 0,  # ConsumerGroupDescribe v1 (MemberType, KIP-1099) is Kafka 4.0's
}


def _spec(api_key: int, kind: str) -> MessageSpec:
    a = all_apis()[api_key]
    return a.request if kind == "request" else a.response


def _seed(api_key: int, kind: str, version: int, i: int) -> int:
    return ((api_key * 100 + version) * 2 + KINDS.index(kind)) * 1000 + i


@dataclass
class Outcome:
    seed: int
    ours: bytes | None      # our bytes (ours->Java) or our re-encode (Java->ours)
    theirs: bytes | None    # Java's re-encode (ours->Java) or Java's bytes (Java->ours)
    error: str = ""
    our_fields: str = ""    # render_ours of our message
    their_fields: str = ""  # Kafka's Schema view of Java's bytes


# Java's ranges are read from the JVM at session start; parametrization needs them
# earlier, so ids come from our specs and the test skips versions Java lacks.
def _cases() -> list[tuple[int, str, int]]:
    return [(k, kind, v) for k, a in all_apis().items() for kind in KINDS
            for v in a.request.versions()]


def _id(case: tuple[int, str, int]) -> str:
    k, kind, v = case
    return f"{all_apis()[k].name}-{kind}-v{v}"


@pytest.fixture(scope="session")
def oracle() -> Iterator[JavaOracle]:
    reason = java_available()
    if reason:  # loud on purpose: these cross-checks are part of the definition of done
        pytest.fail(f"the Java oracle cannot run: {reason} (install a JDK 17)")
    o = JavaOracle()
    yield o
    o.close()


@pytest.fixture(scope="session")
def results(oracle: JavaOracle) -> dict[tuple[int, str, int, str], list[Outcome]]:
    jv = oracle.versions()
    cases = [c for c in _cases() if c[0] in jv and jv[c[0]][0] <= c[2] <= jv[c[0]][1]
             and c not in JAVA_SKIPS]
    out: dict[tuple[int, str, int, str], list[Outcome]] = {}

    # ours -> Java
    cmds: list[str] = []
    pending: list[tuple[tuple[int, str, int, str], Outcome]] = []
    for k, kind, v in cases:
        key = (k, kind, v, "ours_to_java")
        out[key] = []
        for i in range(SEEDS):
            seed = _seed(k, kind, v, i)
            rng = random.Random(seed)
            try:
                msg = random_message(_spec(k, kind), v, rng, unknown_tags=i % 2 == 1)
                data = encode(msg, v)
            except Exception as e:  # noqa: BLE001 - reported per case
                out[key].append(Outcome(seed, None, None, f"our encode: {e!r}"))
                continue
            o = Outcome(seed, data, None, our_fields=render_ours(_spec(k, kind), msg, v))
            out[key].append(o)
            pending.append((key, o))
            cmds.append(oracle.decode_encode_cmd(kind, k, v, data))
    for (key, o), ans in zip(pending, oracle.batch(cmds)):
        if ans.ok:
            o.theirs = ans.data
            o.their_fields = ans.fields
        else:
            o.error = f"Java decode/encode: {ans.error}"

    # Java -> ours
    cmds = []
    pending = []
    for k, kind, v in cases:
        key = (k, kind, v, "java_to_ours")
        out[key] = []
        for i in range(SEEDS):
            o = Outcome(_seed(k, kind, v, i), None, None)
            out[key].append(o)
            pending.append((key, o))
            cmds.append(oracle.random_cmd(kind, k, v, o.seed))
    for (key, o), ans in zip(pending, oracle.batch(cmds)):
        if not ans.ok:
            o.error = f"Java random: {ans.error}"
            continue
        o.theirs = ans.data
        o.their_fields = ans.fields
        k, kind, v, _ = key
        try:
            msg = decode(_spec(k, kind), o.theirs, v)
            o.our_fields = render_ours(_spec(k, kind), msg, v)
            o.ours = encode(msg, v)
        except Exception as e:  # noqa: BLE001 - reported per case
            o.error = f"our decode/encode: {e!r}"
    return out


def _first_diff(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _check(outcomes: list[Outcome], label: str) -> None:
    assert outcomes, f"{label}: no cases ran"
    for o in outcomes:
        if o.error:
            data = o.ours if o.ours is not None else o.theirs
            pytest.fail(f"{label} seed={o.seed}: {o.error}\n input={data.hex() if data else ''}")
        assert o.ours is not None and o.theirs is not None
        if o.ours != o.theirs:
            at = _first_diff(o.ours, o.theirs)
            pytest.fail(f"{label} seed={o.seed}: bytes differ at offset {at}\n"
                        f" ours  ={o.ours.hex()}\n theirs={o.theirs.hex()}")
        if o.our_fields != o.their_fields:
            pytest.fail(f"{label} seed={o.seed}: same bytes, different fields\n"
                        f" ours  ={o.our_fields}\n theirs={o.their_fields}")


def _mark(case: tuple[int, str, int], direction: str) -> Any:
    reason = KNOWN_FAILURES.get((*case, direction))
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case, marks=marks, id=_id(case))


@pytest.mark.parametrize("case", [_mark(c, "ours_to_java") for c in _cases()])
def test_ours_to_java(case: tuple[int, str, int], oracle: JavaOracle,
                      results: dict[tuple[int, str, int, str], list[Outcome]]) -> None:
    _skip_if_java_lacks(case, oracle)
    _check(results[(*case, "ours_to_java")], f"{_id(case)} ours->Java")


@pytest.mark.parametrize("case", [_mark(c, "java_to_ours") for c in _cases()])
def test_java_to_ours(case: tuple[int, str, int], oracle: JavaOracle,
                      results: dict[tuple[int, str, int, str], list[Outcome]]) -> None:
    _skip_if_java_lacks(case, oracle)
    _check(results[(*case, "java_to_ours")], f"{_id(case)} Java->ours")


def _skip_if_java_lacks(case: tuple[int, str, int], oracle: JavaOracle) -> None:
    k, kind, v = case
    if case in JAVA_SKIPS:
        pytest.skip(JAVA_SKIPS[case])
    lo, hi = oracle.versions().get(k, (1, 0))
    if not lo <= v <= hi:
        pytest.skip(f"kafka-clients 3.9.1 has no {all_apis()[k].name} v{v} (it has {lo}-{hi})")


def test_version_ranges_match_java(oracle: JavaOracle) -> None:
    """Every API we declare covers exactly the versions kafka-clients 3.9.1 knows."""
    jv = oracle.versions()
    wrong = {a.name: (f"{a.request.valid}", jv.get(k)) for k, a in all_apis().items()
             if jv.get(k) != (a.request.valid.lo, NEWER_THAN_JAVA.get(k, a.request.valid.hi))}
    assert not wrong, f"ours vs Java (lo, hi): {wrong}"


def test_oracle_rejects_garbage(oracle: JavaOracle) -> None:
    """The oracle itself can fail: truncated and trailing bytes are errors."""
    good = encode(all_apis()[18].request.new(client_software_name="x",
                                             client_software_version="1"), 3)
    ok, short, long_ = oracle.batch([
        oracle.decode_encode_cmd("request", 18, 3, good),
        oracle.decode_encode_cmd("request", 18, 3, good[:-1]),
        oracle.decode_encode_cmd("request", 18, 3, good + b"\x00"),
    ])
    assert ok.ok and ok.data == good
    assert not short.ok and not long_.ok
