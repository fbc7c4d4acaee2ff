"""The server-side assignors: complete, balanced, sticky, rack-aware, deterministic."""

from __future__ import annotations

import random
import time
import uuid

import pytest

from coordinator.group.consumer.assignors import ASSIGNORS, GroupSpec, MemberSpec, assignor_named
from coordinator.group.consumer.assignors.range import RangeAssignor
from coordinator.group.consumer.assignors.uniform import UniformAssignor
from coordinator.group.consumer.model import Assignment, TopicMeta


def topic(name: str, partitions: int, racks: dict[int, frozenset[str]] | None = None) -> TopicMeta:
    return TopicMeta(uuid.uuid5(uuid.NAMESPACE_DNS, name), name, partitions, racks or {})


def spec(topics: list[TopicMeta], members: dict[str, MemberSpec]) -> GroupSpec:
    return GroupSpec(members=members, topics={t.topic_id: t for t in topics})


def counts(result: dict[str, Assignment]) -> dict[str, int]:
    return {m: sum(len(ps) for ps in a.values()) for m, a in result.items()}


def owners(result: dict[str, Assignment]) -> dict[tuple[uuid.UUID, int], str]:
    out: dict[tuple[uuid.UUID, int], str] = {}
    for m, a in result.items():
        for t, ps in a.items():
            for p in ps:
                assert (t, p) not in out, f"{(t, p)} given twice"
                out[(t, p)] = m
    return out


def assert_complete(s: GroupSpec, result: dict[str, Assignment]) -> None:
    own = owners(result)
    for m, a in result.items():
        for t in a:
            assert t in s.members[m].topics, f"{m} got unsubscribed topic"
    for t in s.topics.values():
        if any(t.topic_id in m.topics for m in s.members.values()):
            for p in range(t.partitions):
                assert (t.topic_id, p) in own


def test_registry() -> None:
    assert set(ASSIGNORS) == {"uniform", "range"}
    assert assignor_named("range").name == "range"
    with pytest.raises(KeyError, match="known: uniform, range"):
        assignor_named("sticky")


@pytest.mark.parametrize("assignor", [UniformAssignor(), RangeAssignor()])
def test_empty_group_and_no_topics(assignor: object) -> None:
    a = topic("a", 3)
    assert assignor.assign(spec([a], {})) == {}  # type: ignore[attr-defined]
    s = spec([a], {"m1": MemberSpec(frozenset())})
    assert assignor.assign(s) == {"m1": {}}  # type: ignore[attr-defined]


def test_uniform_homogeneous_is_balanced_and_complete() -> None:
    ts = [topic("a", 7), topic("b", 5)]
    ids = frozenset(t.topic_id for t in ts)
    s = spec(ts, {f"m{i}": MemberSpec(ids) for i in range(5)})
    result = UniformAssignor().assign(s)
    assert_complete(s, result)
    c = counts(result)
    assert max(c.values()) - min(c.values()) <= 1
    assert sum(c.values()) == 12


def test_uniform_sticky_when_a_member_joins() -> None:
    a = topic("a", 12)
    ids = frozenset({a.topic_id})
    s1 = spec([a], {f"m{i}": MemberSpec(ids) for i in range(3)})
    first = UniformAssignor().assign(s1)
    members = {m: MemberSpec(ids, current=first[m]) for m in first}
    members["m9"] = MemberSpec(ids)
    second = UniformAssignor().assign(spec([a], members))
    assert counts(second) == {"m0": 3, "m1": 3, "m2": 3, "m9": 3}
    # each old member keeps 3 of its 4: only 3 partitions move, all to m9
    for m in first:
        assert second[m][a.topic_id] <= first[m][a.topic_id]


def test_uniform_sticky_when_a_member_leaves() -> None:
    a = topic("a", 9)
    ids = frozenset({a.topic_id})
    first = UniformAssignor().assign(spec([a], {f"m{i}": MemberSpec(ids) for i in range(3)}))
    members = {m: MemberSpec(ids, current=first[m]) for m in ("m0", "m1")}
    second = UniformAssignor().assign(spec([a], members))
    for m in members:
        assert first[m][a.topic_id] <= second[m][a.topic_id]
    assert sorted(counts(second).values()) == [4, 5]


def test_uniform_drops_partitions_of_deleted_or_shrunk_topics() -> None:
    a = topic("a", 2)
    gone = uuid.uuid4()
    ids = frozenset({a.topic_id})
    s = spec([a], {"m1": MemberSpec(ids, current={a.topic_id: frozenset({0, 1, 5}),
                                                   gone: frozenset({0})})})
    assert UniformAssignor().assign(s) == {"m1": {a.topic_id: frozenset({0, 1})}}


def test_uniform_heterogeneous_is_complete_and_balanced_per_topic() -> None:
    a, b, c = topic("a", 6), topic("b", 6), topic("c", 2)
    s = spec([a, b, c], {
        "m1": MemberSpec(frozenset({a.topic_id})),
        "m2": MemberSpec(frozenset({a.topic_id, b.topic_id})),
        "m3": MemberSpec(frozenset({b.topic_id, c.topic_id})),
    })
    result = UniformAssignor().assign(s)
    assert_complete(s, result)
    cnt = counts(result)
    # 14 partitions over 3 members, everyone can take from a or b: balanced
    assert max(cnt.values()) - min(cnt.values()) <= 1


def test_uniform_heterogeneous_sticky() -> None:
    a, b = topic("a", 4), topic("b", 4)
    subs = {"m1": frozenset({a.topic_id}), "m2": frozenset({a.topic_id, b.topic_id}),
            "m3": frozenset({b.topic_id})}
    first = UniformAssignor().assign(spec([a, b], {m: MemberSpec(t) for m, t in subs.items()}))
    again = UniformAssignor().assign(spec([a, b], {m: MemberSpec(t, current=first[m])
                                                   for m, t in subs.items()}))
    assert again == first


def test_uniform_rack_preference_for_moved_partitions() -> None:
    racks = {p: frozenset({"r0" if p % 2 == 0 else "r1"}) for p in range(8)}
    a = topic("a", 8, racks)
    ids = frozenset({a.topic_id})
    s = spec([a], {"m0": MemberSpec(ids, rack="r0"), "m1": MemberSpec(ids, rack="r1")})
    result = UniformAssignor().assign(s)
    assert result["m0"][a.topic_id] == frozenset({0, 2, 4, 6})
    assert result["m1"][a.topic_id] == frozenset({1, 3, 5, 7})


def test_uniform_rack_never_beats_balance() -> None:
    a = topic("a", 6, {p: frozenset({"r0"}) for p in range(6)})
    ids = frozenset({a.topic_id})
    s = spec([a], {"m0": MemberSpec(ids, rack="r0"), "m1": MemberSpec(ids, rack="r1"),
                   "m2": MemberSpec(ids)})
    assert sorted(counts(UniformAssignor().assign(s)).values()) == [2, 2, 2]


def test_uniform_rack_keeps_in_rack_partitions_when_shedding() -> None:
    racks = {p: frozenset({"r0" if p < 2 else "r1"}) for p in range(4)}
    a = topic("a", 4, racks)
    ids = frozenset({a.topic_id})
    # m0 (rack r0) held all four; m1 (r1) joins: m0 keeps the r0 ones
    s = spec([a], {"m0": MemberSpec(ids, rack="r0", current={a.topic_id: frozenset(range(4))}),
                   "m1": MemberSpec(ids, rack="r1")})
    result = UniformAssignor().assign(s)
    assert result["m0"][a.topic_id] == frozenset({0, 1})


@pytest.mark.parametrize("assignor", [UniformAssignor(), RangeAssignor()])
def test_deterministic(assignor: object) -> None:
    rng = random.Random(7)
    ts = [topic(f"t{i}", rng.randint(1, 9), {p: frozenset({f"r{p % 3}"}) for p in range(9)})
          for i in range(4)]
    members = {f"m{i}": MemberSpec(frozenset(t.topic_id for t in rng.sample(ts, 2)),
                                   rack=rng.choice([None, "r0", "r1"])) for i in range(6)}
    s = spec(ts, members)
    shuffled = dict(reversed(list(members.items())))
    r1 = assignor.assign(s)  # type: ignore[attr-defined]
    r2 = assignor.assign(spec(list(reversed(ts)), shuffled))  # type: ignore[attr-defined]
    assert r1 == r2
    assert_complete(s, r1)


def test_range_ranges_and_co_partitioning() -> None:
    a, b = topic("a", 7), topic("b", 7)
    ids = frozenset({a.topic_id, b.topic_id})
    s = spec([a, b], {m: MemberSpec(ids) for m in ("m2", "m1", "m3")})
    r = RangeAssignor().assign(s)
    assert r["m1"][a.topic_id] == frozenset({0, 1, 2})
    assert r["m2"][a.topic_id] == frozenset({3, 4})
    assert r["m3"][a.topic_id] == frozenset({5, 6})
    for m in r:
        assert r[m][a.topic_id] == r[m][b.topic_id]


def test_range_static_members_first_by_instance_id() -> None:
    a = topic("a", 4)
    ids = frozenset({a.topic_id})
    s = spec([a], {"aaa": MemberSpec(ids), "zzz": MemberSpec(ids, instance_id="i1")})
    r = RangeAssignor().assign(s)
    assert r["zzz"][a.topic_id] == frozenset({0, 1})
    # the static member restarted with a new member id gets the same range
    s2 = spec([a], {"aaa": MemberSpec(ids), "new": MemberSpec(ids, instance_id="i1")})
    assert RangeAssignor().assign(s2)["new"][a.topic_id] == frozenset({0, 1})


def test_range_heterogeneous() -> None:
    a, b = topic("a", 4), topic("b", 2)
    s = spec([a, b], {"m1": MemberSpec(frozenset({a.topic_id, b.topic_id})),
                      "m2": MemberSpec(frozenset({a.topic_id}))})
    r = RangeAssignor().assign(s)
    assert r == {"m1": {a.topic_id: frozenset({0, 1}), b.topic_id: frozenset({0, 1})},
                 "m2": {a.topic_id: frozenset({2, 3})}}


def test_range_rack_aware() -> None:
    racks = {0: frozenset({"r1"}), 1: frozenset({"r1"}), 2: frozenset({"r0"}),
             3: frozenset({"r0"})}
    a = topic("a", 4, racks)
    ids = frozenset({a.topic_id})
    s = spec([a], {"m0": MemberSpec(ids, rack="r0"), "m1": MemberSpec(ids, rack="r1")})
    r = RangeAssignor().assign(s)
    assert r["m0"][a.topic_id] == frozenset({2, 3})
    assert r["m1"][a.topic_id] == frozenset({0, 1})
    # racks everywhere: the plain ranges
    full = topic("a", 4, {p: frozenset({"r0", "r1"}) for p in range(4)})
    r = RangeAssignor().assign(spec([full], {"m0": MemberSpec(ids, rack="r0"),
                                             "m1": MemberSpec(ids, rack="r1")}))
    assert r["m0"][a.topic_id] == frozenset({0, 1})


@pytest.mark.parametrize("assignor", [UniformAssignor(), RangeAssignor()])
def test_hundred_members_hundred_partitions_is_fast(assignor: object) -> None:
    a = topic("a", 100, {p: frozenset({f"r{p % 3}"}) for p in range(100)})
    ids = frozenset({a.topic_id})
    s = spec([a], {f"m{i:03d}": MemberSpec(ids, rack=f"r{i % 3}") for i in range(100)})
    start = time.perf_counter()
    r = assignor.assign(s)  # type: ignore[attr-defined]
    assert time.perf_counter() - start < 0.05
    assert_complete(s, r)
    assert set(counts(r).values()) == {1}
