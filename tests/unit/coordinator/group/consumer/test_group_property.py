"""Property test: random joins, leaves, crashes, static restarts, subscription
and topic changes, lost responses and slow clients — at every step no
partition has two owners (clients or server), and the group always converges
to a stable, complete, balanced assignment; replaying the record log from
scratch gives the live state."""

from __future__ import annotations

import pytest

from coordinator.group.consumer import group_logic as gl
from coordinator.group.consumer.model import GroupState
from tests.unit.coordinator.group.consumer.group_sim import Sim


def _random_run(seed: int, steps: int, assignor: str, strict: bool = False) -> Sim:
    sim = Sim(seed, gl.GroupConfig(assignors=(assignor, "uniform" if assignor == "range"
                                             else "range"), strict_revocation=strict))
    rng = sim.rng
    names = ["a", "b", "c"]
    for n in names:
        sim.topics.create(n, rng.randint(1, 8),
                          {p: frozenset({f"r{p % 3}"}) for p in range(8)} if rng.random() < 0.5
                          else None)
    statics = 0
    for _ in range(steps):
        op = rng.random()
        clients = sorted(sim.clients.values(), key=lambda c: c.member_id)
        if op < 0.12 or not clients:
            if len(clients) < 8:
                subs = rng.sample(names, rng.randint(1, 3))
                if rng.random() < 0.2:
                    statics += 1
                    sim.join(subs, instance_id=f"inst-{statics}",
                             rack=rng.choice([None, "r0", "r1"]))
                elif rng.random() < 0.15:
                    sim.join(None, regex="[ab]|d")
                else:
                    sim.join(subs, rack=rng.choice([None, "r0", "r1", "r2"]))
        elif op < 0.16:
            sim.leave(rng.choice(clients))
        elif op < 0.19:
            sim.crash(rng.choice(clients))
        elif op < 0.22:
            c = rng.choice(clients)
            if c.instance_id is not None:
                # static restart: leave with -2, rejoin with a new member id
                sim.leave(c, static=True)
                sim.join(c.topics, instance_id=c.instance_id, rack=c.rack)
        elif op < 0.26:
            c = rng.choice(clients)
            if c.regex is None:
                c.topics = rng.sample(names, rng.randint(1, 3))
                c.send_subscription = True
        elif op < 0.28:
            name = rng.choice(names + ["d"])
            meta = sim.topics.by_name(name)
            if meta is None:
                sim.topics.create(name, rng.randint(1, 4))
            elif meta.partitions < 12:
                sim.topics.grow(name, meta.partitions + rng.randint(1, 3))
            sim.refresh()
        else:
            c = rng.choice(clients)
            sim.heartbeat(c, lose_response=rng.random() < 0.1)
            r = rng.random()
            if r < 0.5:
                c.acquire()
            elif r < 0.75:
                c.revoke()
            sim.check()
    return sim


@pytest.mark.parametrize("assignor, strict", [("uniform", False), ("range", False),
                                              ("uniform", True)])
@pytest.mark.parametrize("seed", range(25))
def test_one_owner_per_partition_and_convergence(seed: int, assignor: str,
                                                 strict: bool) -> None:
    sim = _random_run(seed, 250, assignor, strict)
    sim.converge()
    g = sim.group
    if g is None:
        return
    assert gl.state_of(g) in (GroupState.STABLE, GroupState.EMPTY)
    # complete: every partition of a subscribed topic has an owner
    if sim.clients:
        subscribed = set()
        for m in g.members.values():
            subscribed |= set(m.subscribed_topic_names)
            if m.subscribed_topic_regex:
                subscribed |= g.resolved_regexes[m.subscribed_topic_regex].topics
        for name in subscribed:
            meta = sim.topics.by_name(name)
            if meta is None:
                continue
            for p in range(meta.partitions):
                assert (meta.topic_id, p) in g.owners, (name, p)
    # replay from scratch == live
    assert sim.replayed_from_scratch() == sim.groups


@pytest.mark.parametrize("seed", range(10))
def test_replay_matches_live_at_every_point(seed: int) -> None:
    sim = _random_run(1000 + seed, 120, "uniform")
    # replaying any prefix that ends after a complete heartbeat's records
    # reproduces the state the live coordinator had then
    assert sim.replayed_from_scratch() == sim.groups


@pytest.mark.parametrize("seed", range(5))
def test_log_survives_the_record_codec(seed: int) -> None:
    """What a coordinator loads after failover: the log through
    record_codec's bytes, replayed, is the live state."""
    from coordinator.group.consumer import record_codec
    from coordinator.group.consumer.replay import replay

    sim = _random_run(2000 + seed, 150, "uniform")
    sim.converge()
    groups: dict = {}
    for r in sim.log:
        key, value = record_codec.encode(r)
        decoded = record_codec.decode(key, value)
        assert decoded is not None
        replay(groups, decoded)
    assert groups == sim.groups


def test_the_random_runs_reach_the_interesting_states() -> None:
    """Guard against a vacuous property test: the runs above go through
    revocations, withheld partitions, static replacement and regexes."""
    from coordinator.group.consumer.model import MemberState
    from coordinator.group.consumer.records import CurrentAssignment, MemberSubscription, \
        RegexResolution

    seen: set[str] = set()
    for seed in range(10):
        sim = _random_run(seed, 250, "uniform")
        for r in sim.log:
            if isinstance(r, CurrentAssignment) and not r.tombstone:
                seen.add(r.state.name)
                if r.member_epoch == -2:
                    seen.add("static-leave")
            elif isinstance(r, MemberSubscription) and r.instance_id and not r.tombstone:
                seen.add("static")
            elif isinstance(r, RegexResolution):
                seen.add("regex")
    assert {MemberState.UNREVOKED_PARTITIONS.name, MemberState.UNRELEASED_PARTITIONS.name,
            MemberState.STABLE.name, "static", "static-leave", "regex"} <= seen
