"""The queue checker (tests/fault/queue_checker.py) on mixed histories, as the
campaign's QueueLoad records them (tests/fault/queue_load.py):

- a partition that moves between group members and back, a rebalance that names only
  some partitions, a restarted member, a poll-skip within one assignment, several
  producers on one partition;
- a made-up campaign-sized history (three producers, an assigned consumer, a group of
  two) passes; ``main`` times the checker on it at full size:
  ``.venv/bin/python -m tests.fault.test_queue_checker_mixed [VALUES]``.
"""

from __future__ import annotations

import random
import sys
import time

from dataclasses import replace

from tests.fault.queue_checker import Op, QueueHistory, check
from tests.fault.test_queue_checker import acked, new, only, recs


# --------------------------------------------------------------------------------------
# mixed histories: several producers per partition, a consumer group


def moved_and_back(rebalances: bool = True) -> QueueHistory:
    """g1 reads p0 to offset 3 and commits 2; p0 moves to g2, which reads 2-4 and
    commits nothing; p0 comes back to g1, which resumes at the group's commit, 2.
    (Without ``rebalances``: the same reads, but g1 was never told of a move.)"""
    h = new()
    for v in range(6):
        acked(h, "a", 0, v, v)
    acked(h, "a", 1, 0, 0)
    for g in ("g1", "g2"):
        h.opened(g, role="consumer")
        h.subscribed(g)
    h.rebalanced("g1", assigned=[0, 1])
    h.polled("g1", [(0, 0, 0), (1, 0, 0), (0, 1, 1), (0, 2, 2), (0, 3, 3)])
    h.committed("g1", {0: 2, 1: 1})
    if rebalances:
        h.rebalanced("g1", revoked=[0, 1])            # eager: all revoked, then
        h.rebalanced("g1", assigned=[1])              # assigned anew
        h.rebalanced("g2", assigned=[0])
    h.polled("g2", [(0, 2, 2), (0, 3, 3), (0, 4, 4)])
    if rebalances:
        h.rebalanced("g2", revoked=[0])
        h.rebalanced("g1", assigned=[0])              # cooperative: only p0 is named
    h.polled("g1", [(0, 2, 2), (0, 3, 3), (0, 4, 4), (0, 5, 5)])
    return h


def test_a_partition_that_moves_to_another_member_and_back_is_read_again_freely() -> None:
    assert check(moved_and_back()).ok
    case = only(check(moved_and_back(rebalances=False)), "nonmonotonic-poll")
    assert recs(case) == [(3, 3, "g1", "read"), (2, 2, "g1", "read")]


def test_a_rebalance_resets_only_the_partitions_it_names() -> None:
    """p1 stays with g1 through a rebalance that moves p0: going back on p1 counts."""
    h = moved_and_back()
    acked(h, "a", 1, 1, 1)
    h.polled("g1", [(1, 1, 1)])
    h.rebalanced("g1", revoked=[0])
    h.polled("g1", [(1, 0, 0)])
    assert recs(only(check(h), "nonmonotonic-poll")) == [(1, 1, "g1", "read"),
                                                          (0, 0, "g1", "read")]


def test_a_restarted_member_is_a_new_session() -> None:
    """g1's new client reads p0 from the group's commit, below what the old one read."""
    h = moved_and_back()
    h.opened("g1", role="consumer")
    h.subscribed("g1")
    h.rebalanced("g1", assigned=[0, 1])
    h.polled("g1", [(0, 2, 2), (1, 0, 0)])
    assert check(h).ok


def test_a_poll_skip_within_one_assignment_is_found() -> None:
    """Other members' rebalances, commits and another partition's moves between the
    polls excuse nothing."""
    h = moved_and_back()
    acked(h, "a", 0, 6, 6)
    acked(h, "a", 0, 7, 7)
    h.committed("g1", {0: 6})
    h.rebalanced("g1", revoked=[1])
    h.rebalanced("g2", assigned=[1])
    h.polled("g1", [(0, 7, 7)])                        # 6 skipped
    h.polled("g2", [(0, 6, 6)])                        # (somebody read it)
    case = only(check(h), "poll-skip")
    assert recs(case) == [(5, 5, "g1", "read"), (6, 6, "a", "acked"), (7, 7, "g1", "read")]


G = 1_000_000_000            # producer k's values start at k * G, as QueueLoad's do


def two_producers() -> QueueHistory:
    """a (idempotent, pipelined) and b (not) on partition 0, their values interleaved."""
    h = new()
    h.opened("a", idempotent=True)
    h.opened("b")
    a0, b0, a1 = h.send_invoked("a", 0, 0), h.send_invoked("b", 0, G), h.send_invoked("a", 0, 1)
    h.send_ok(b0, 0)
    h.send_ok(a0, 1)
    h.send_ok(a1, 2)
    acked(h, "b", 0, G + 1, 3)
    acked(h, "a", 0, 2, 4)
    h.send_failed(h.send_invoked("b", 0, G + 2), "NOT_ENOUGH_REPLICAS")
    acked(h, "b", 0, G + 3, 5)
    return h


def test_two_producers_on_one_partition() -> None:
    log = [(0, G), (1, 0), (2, 1), (3, G + 1), (4, 2), (5, G + 3)]
    h = two_producers()
    h.polled("c", [(0, o, v) for o, v in log[:4]])
    h.polled("c", [(0, o, v) for o, v in log[4:]])
    h.final_read(0, log)
    report = check(h)
    assert report.ok, report.summary()
    assert (report.acked, report.failed) == (6, 1)


def test_two_producers_one_loses_a_write_among_the_others() -> None:
    h = two_producers()
    h.polled("c", [(0, 0, G), (0, 1, 0), (0, 2, 1)])
    h.polled("d", [(0, 4, 2), (0, 5, G + 3)])
    h.final_read(0, [(0, G), (1, 0), (2, 1), (4, 2), (5, G + 3)])
    case = only(check(h), "lost-write")
    assert recs(case) == [(3, G + 1, "b", "acked"), (5, G + 3, "d", "read")]


def test_two_producers_each_judged_on_its_own_order() -> None:
    """b's G+3 was invoked after its G+1 was acked, yet sits below it: nonmonotonic-send
    for b; a's values, interleaved with b's, are not compared with b's."""
    h = two_producers()
    log = [(0, G), (1, 0), (2, 1), (3, G + 3), (4, 2), (5, G + 1)]
    ops = [replace(op, offsets=(3,)) if op.kind == "send" and op.type == "ok"
           and op.values == (G + 3,) else
           replace(op, offsets=(5,)) if op.kind == "send" and op.type == "ok"
           and op.values == (G + 1,) else op for op in h.ops]
    ops.append(Op("c", "poll", "ok", 99.0, records=tuple((0, o, v) for o, v in log)))
    case = only(check(ops, {0: log}), "nonmonotonic-send")
    assert recs(case) == [(5, G + 1, "b", "acked"), (3, G + 3, "b", "acked")]


# --------------------------------------------------------------------------------------
# a campaign-sized history, made up: the checker's running time


def mixed_history(values: int, partitions: int = 6, seed: int = 0) -> QueueHistory:
    """What a QueueLoad run records from a correct broker, ``values`` sends long: three
    producers (two idempotent, pipelining up to 8 sends; one not, one send at a time)
    interleaved on every partition, with failed and unknown sends and the odd marker
    offset; an assigned consumer reading everything, and a group of two whose
    partitions move (eager rebalances, resuming at the group's commits) and whose
    members restart. Every value is read about twice."""
    rnd = random.Random(seed)
    h = new()
    producers = [("producer-0", True), ("producer-1", True), ("producer-2", False)]
    for name, idem in producers:
        h.opened(name, idempotent=idem)
    nxt = {(k, p): k * G for k in range(len(producers)) for p in range(partitions)}
    log: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
    inflight: dict[int, list[tuple[int, int]]] = {k: [] for k in range(len(producers))}
    group = ("group-0", "group-1")
    pos: dict[str, dict[int, int]] = {c: {} for c in ("consumer", *group)}  # index in log
    committed = {p: 0 for p in range(partitions)}
    h.opened("consumer", role="consumer")
    h.assigned("consumer", range(partitions))
    pos["consumer"] = {p: 0 for p in range(partitions)}

    def rebalance(restart: str | None = None) -> None:
        for g in group:
            if pos[g]:
                h.rebalanced(g, revoked=sorted(pos[g]))
            pos[g] = {}
            if g == restart or restart == "all":
                h.opened(g, role="consumer")
                h.subscribed(g)
        for p in range(partitions):
            pos[rnd.choice(group)][p] = committed[p]
        for g in group:
            h.rebalanced(g, assigned=sorted(pos[g]))

    rebalance(restart="all")
    for step in range(values):
        k = rnd.randrange(len(producers))
        p = rnd.randrange(partitions)
        value, nxt[k, p] = nxt[k, p], nxt[k, p] + 1
        sid = h.send_invoked(producers[k][0], p, value)
        if rnd.random() < 0.002:
            h.send_failed(sid, "NOT_ENOUGH_REPLICAS")
        else:
            offset = (log[p][-1][0] + 1 if log[p] else 0) + (rnd.random() < 0.01)
            log[p].append((offset, value))
            inflight[k].append((sid, offset))
        while len(inflight[k]) > (rnd.randint(1, 8) if producers[k][1] else 0):
            done, offset = inflight[k].pop(0)
            if rnd.random() < 0.003:
                h.send_unknown(done, "REQUEST_TIMED_OUT")
            else:
                h.send_ok(done, offset)
        if step % 10 == 0:
            for c, mine in pos.items():
                recs = []
                for q, i in mine.items():
                    run = log[q][i:i + rnd.randint(0, 6)]
                    recs += [(q, o, v) for o, v in run]
                    mine[q] = i + len(run)
                if recs:
                    h.polled(c, recs)
        if step % 1000 == 999:
            for g in group:
                if pos[g]:
                    h.committed(g, {q: log[q][i - 1][0] + 1 for q, i in pos[g].items() if i})
                    committed.update(pos[g])
        if step % 7919 == 7918:
            rebalance(restart=rnd.choice([None, None, *group]))
    for pending in inflight.values():
        for sid, offset in pending:
            h.send_ok(sid, offset)
    for c, mine in pos.items():
        h.polled(c, [(q, o, v) for q, i in mine.items() for o, v in log[q][i:]])
    for p, whole in log.items():
        h.final_read(p, whole)
    return h


def test_a_mixed_synthetic_history_passes() -> None:
    """The history that ``main`` times, small."""
    h = mixed_history(20_000, seed=3)
    report = check(h)
    assert report.ok, report.summary()
    assert report.sends == 20_000 and report.failed > 0 and report.unknown > 0
    assert report.final_records is not None
    assert report.records_read >= 2 * report.final_records     # everything, read twice
    kinds = {op.kind for op in h.ops if op.process == "group-1"}
    assert {"open", "subscribe", "rebalance", "poll", "commit"} <= kinds


def main(argv: list[str]) -> None:
    """Time the checker on a campaign-sized history:
    ``.venv/bin/python -m tests.fault.test_queue_checker [VALUES]`` (default 10^6)."""
    values = int(argv[0]) if argv else 1_000_000
    t0 = time.perf_counter()
    h = mixed_history(values)
    t1 = time.perf_counter()
    report = check(h)
    t2 = time.perf_counter()
    print(report.summary().splitlines()[0])
    print(f"history of {len(h.ops)} ops made in {t1 - t0:.1f}s; checked in {t2 - t1:.1f}s")


if __name__ == "__main__":
    main(sys.argv[1:])
