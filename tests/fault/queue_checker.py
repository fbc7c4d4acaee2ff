"""A checker for queue histories that uses the anomaly names of Jepsen's Kafka workload
(jepsen.tests.kafka). It takes a history and returns the anomalies found. Pure logic.
The history model and its recorder (``QueueHistory``, with JSON-lines save/load) are in
tests/fault/queue_history.py; they are re-exported here.

Version order
-------------
For each partition, the version order maps each offset to the set of values put there by
an acknowledged send (its acked offsets) or by a read (every poll and the final reads).
A value's *position* is the lowest offset it holds. Offsets that hold no value (markers,
offsets nobody saw) are not gaps: a skip means some value sat strictly between two offsets.

Anomalies (Jepsen's names; the differences from Jepsen are marked *)
---------
  inconsistent-offsets   one offset of a partition holds two different values
  duplicate              one value holds more than one offset of a partition
  lost-write             an acknowledged value never read, whose last offset is at or below the
                         highest position read on its partition (bound = max over
                         values read of their first offset)
  unseen                 * an acknowledged value never read that is above that bound.
                         Judged only when final reads are supplied. Jepsen's unseen also
                         counts the lost writes; here each unread acknowledged value gets
                         exactly one of the two names
  G1a                    a value of a failed (type fail) send was read
  nonmonotonic-send      * one producer's send got a position at or below an earlier send
                         of the same process and partition that was acknowledged before
                         it was invoked (real time), or, in an idempotent session, the
                         previous acknowledged send in invocation order. Jepsen's
                         processes are sequential, so "previous op" covers both. Our
                         producers pipeline, and only idempotence orders in-flight sends
  int-send-skip          two consecutive values of one send op (a batch) to a partition have
                         other values between their positions. Jepsen allows this for
                         transactions. A single produce batch gets contiguous offsets, so
                         here it counts
  int-nonmonotonic-send  consecutive values of one send op are at non-increasing positions
  nonmonotonic-poll      a consumer's poll of a partition starts at or before the offset
                         where its previous poll of it ended, with no open / assign /
                         subscribe / rebalance / seek of that partition in between
  poll-skip              as above, but values sit strictly between those two offsets
  int-nonmonotonic-poll  within one poll, consecutive records of a partition do not advance
  int-poll-skip          within one poll, values sit strictly between consecutive records
* Polls are compared by the offsets they returned. Jepsen compares the values' indexes
  in the version order, after first checking that offsets agree. The two agree when
  offsets are consistent; ours also stays well defined when a value is duplicated.
* info sends: never lost-write or unseen (no acked offset, and nobody must read them),
  but whatever appears is judged (duplicate, inconsistent-offsets, send order).
"""

from __future__ import annotations

import gc
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter, ne

from tests.fault.queue_history import FinalReads, Op, Part, QueueHistory, Rec, Value

ANOMALIES = ("lost-write", "unseen", "duplicate", "inconsistent-offsets", "G1a",
             "nonmonotonic-send", "int-send-skip", "int-nonmonotonic-send",
             "nonmonotonic-poll", "poll-skip", "int-nonmonotonic-poll", "int-poll-skip")


# --------------------------------------------------------------------------------------
# report


@dataclass(frozen=True)
class Seen:
    """One record in a case: ``value`` at ``offset`` as ``how`` puts it ("acked",
    "unknown" and "failed" are the sender's view; "read" and "final" are readers')."""

    partition: Part
    offset: int | None
    value: Value
    process: str | None
    time: float | None
    how: str

    def __str__(self) -> str:
        at = "" if self.offset is None else f"@{self.offset}"
        when = "" if self.time is None else f" t={self.time:.3f}"
        return f"{self.partition}{at}={self.value!r} {self.how} by {self.process}{when}"


@dataclass(frozen=True)
class Case:
    anomaly: str
    partition: Part
    records: tuple[Seen, ...]
    note: str = ""

    def __str__(self) -> str:
        return f"{self.anomaly} {self.partition}: {self.note} [{'; '.join(map(str, self.records))}]"


@dataclass
class QueueReport:
    """The verdict: ``cases[anomaly]`` lists what was found; ``ok`` when none was.
    ``final_records`` is None when no final reads were given (unseen not judged)."""

    cases: dict[str, list[Case]] = field(default_factory=lambda: {a: [] for a in ANOMALIES})
    sends: int = 0
    acked: int = 0
    unknown: int = 0
    failed: int = 0
    polls: int = 0
    records_read: int = 0
    final_records: int | None = None

    def __getitem__(self, anomaly: str) -> list[Case]:
        return self.cases[anomaly]

    @property
    def ok(self) -> bool:
        return not any(self.cases.values())

    @property
    def counts(self) -> dict[str, int]:
        return {a: len(cs) for a, cs in self.cases.items()}

    def found(self) -> list[str]:
        """The anomalies with at least one case, in ``ANOMALIES`` order."""
        return [a for a, cs in self.cases.items() if cs]

    def summary(self, limit: int = 5) -> str:
        final = ("no final reads, unseen not judged" if self.final_records is None
                 else f"final reads {self.final_records} records")
        lines = [f"{self.sends} sends ({self.acked} acked, {self.unknown} unknown, "
                 f"{self.failed} failed); {self.polls} polls read {self.records_read} "
                 f"records; {final}: {'OK' if self.ok else 'ANOMALIES'}",
                 ", ".join(f"{a} {n}" for a, n in self.counts.items())]
        for anomaly, cases in self.cases.items():
            lines += [f"  {case}" for case in cases[:limit]]
            if len(cases) > limit:
                lines.append(f"  {anomaly}: ... {len(cases) - limit} more")
        return "\n".join(lines)


# --------------------------------------------------------------------------------------
# analysis
#
# Cost: a campaign's history has ~10^6 values and ~2 * 10^6 poll records, so each pass
# over records is written for CPython: no object per record (an observation is the
# tuple (offset, value, src), src being the index of the op that made it), version
# orders built with dict(zip(...)) in C, a ``Seen`` made only for a reported case, and
# the cyclic garbage collector paused meanwhile (``_gc_paused``). Such a history is
# checked in about 9 s on this project's machines (``main`` in
# tests/fault/test_queue_checker.py makes one and times it).


@dataclass(slots=True)
class _Send:
    """A send op with its completion folded in."""

    id: int
    process: str
    partition: Part
    values: tuple[Value, ...]
    session: int                  # which open() of the process it was sent in
    idempotent: bool
    invoked: int                  # op index of the invocation
    invoke_time: float
    outcome: str = "info"         # ok | fail | info (never completed counts as info)
    done: int | None = None       # op index of the completion
    done_time: float | None = None
    offsets: tuple[int, ...] = ()

    def seen(self, i: int, offset: int | None = None) -> Seen:
        how = {"ok": "acked", "fail": "failed", "info": "unknown"}[self.outcome]
        at = offset if offset is not None else (self.offsets[i] if self.offsets else None)
        t = self.done_time if self.done_time is not None else self.invoke_time
        return Seen(self.partition, at, self.values[i], self.process, t, how)


Obs = tuple[int, Value, int]      # (offset, value, src): src = op index; len(ops) = final


class _Log:
    """One partition's version order, from its observations in history order (acked
    sends' offsets, polls, then the final reads):

      value_at[o], src_at[o]  the first value observed at offset o, and where
      extra[o]                only for an offset holding several values: each value ->
                              its first observation, in order of first observation
      offsets                 the offsets holding a value, sorted
      first[v], last[v]       a value's lowest and highest offset (its position: first)
    """

    def __init__(self, p: Part, ops: Sequence[Op], obs: Sequence[Obs]) -> None:
        self.p, self.ops = p, ops
        offs, vals = list(map(itemgetter(0), obs)), list(map(itemgetter(1), obs))
        srcs = map(itemgetter(2), reversed(obs))
        self.value_at: dict[int, Value] = dict(zip(offs[::-1], vals[::-1], strict=True))
        self.src_at: dict[int, int] = dict(zip(offs[::-1], srcs, strict=True))
        self.extra: dict[int, dict[Value, int]] = {}
        if any(map(ne, map(self.value_at.__getitem__, offs), vals)):
            for o, v, src in obs:
                if self.value_at[o] != v:
                    self.extra.setdefault(o, {self.value_at[o]: self.src_at[o]}).setdefault(
                        v, src)
        self.offsets = sorted(self.value_at)
        if self.extra:        # every (offset, value) pair, by offset
            pairs = [(o, v) for o in self.offsets for v in self.values_at(o)]
            pair_offs, pair_vals = [o for o, _ in pairs], [v for _, v in pairs]
        else:
            pair_offs, pair_vals = self.offsets, [self.value_at[o] for o in self.offsets]
        self.first: dict[Value, int] = dict(zip(pair_vals[::-1], pair_offs[::-1], strict=True))
        self.last: dict[Value, int] = dict(zip(pair_vals, pair_offs, strict=True))
        self.pairs = len(pair_vals)

    def values_at(self, o: int) -> dict[Value, int]:
        """Each value at offset ``o`` -> the src of its first observation there."""
        return self.extra.get(o) or {self.value_at[o]: self.src_at[o]}

    def duplicated(self) -> dict[Value, list[int]]:
        """Each value at more than one offset -> those offsets, by its first offset."""
        if len(self.first) == self.pairs:
            return {}
        dup = {v for v, o in self.first.items() if self.last[v] != o}
        out: dict[Value, list[int]] = {}
        for o in self.offsets:
            for v in self.values_at(o):
                if v in dup:
                    out.setdefault(v, []).append(o)
        return out

    def offsets_between(self, lo: int, hi: int) -> list[int]:
        """Offsets holding a value strictly between ``lo`` and ``hi`` ([] if hi <= lo+1)."""
        return self.offsets[bisect_right(self.offsets, lo):bisect_left(self.offsets, hi)]

    def seen(self, o: int, v: Value, src: int) -> Seen:
        """The observation ``src`` of ``v`` at ``o`` as a report record."""
        if src >= len(self.ops):
            return Seen(self.p, o, v, "final", None, "final")
        op = self.ops[src]
        return Seen(self.p, o, v, op.process, op.time, "acked" if op.kind == "send" else "read")

    def first_seen(self, o: int) -> Seen:
        return self.seen(o, self.value_at[o], self.src_at[o])


def _fold_sends(ops: Sequence[Op]) -> list[_Send]:
    """The sends, in invocation order."""
    sessions: dict[str, tuple[int, bool]] = {}
    sends: dict[int, _Send] = {}
    for i, op in enumerate(ops):
        if op.kind == "open":
            sessions[op.process] = (sessions.get(op.process, (0, False))[0] + 1, op.idempotent)
        elif op.kind == "send" and op.type == "invoke":
            if op.id is None or op.id in sends or op.partition is None:
                raise ValueError(f"send invocation without a fresh id/partition: {op}")
            session, idem = sessions.get(op.process, (0, False))
            sends[op.id] = _Send(op.id, op.process, op.partition, op.values, session, idem,
                                 i, op.time)
        elif op.kind == "send":
            s = sends.get(op.id) if op.id is not None else None
            if s is None or s.done is not None:
                raise ValueError(f"send completion without a pending invocation: {op}")
            if op.type == "ok" and len(op.offsets) != len(s.values):
                raise ValueError(f"send {op.id} acked {len(op.offsets)} offsets for "
                                 f"{len(s.values)} values")
            s.outcome, s.done, s.done_time, s.offsets = op.type, i, op.time, op.offsets
    return list(sends.values())


def _observe(ops: Sequence[Op], finals: FinalReads | None, parts: Iterable[Part]
             ) -> tuple[dict[Part, _Log], dict[Part, list[Obs]], dict[Part, dict[Value, Obs]]]:
    """The version orders (one for each partition observed or in ``parts``), and per
    partition the reads (by polls, then the final reads) in order and each value read
    -> its first read."""
    acks: dict[Part, list[Obs]] = {}
    reads: dict[Part, list[Obs]] = {}
    for i, op in enumerate(ops):
        if op.type != "ok":
            continue
        if op.kind == "poll":
            for p, o, v in op.records:
                got = reads.get(p)
                if got is None:
                    got = reads[p] = []
                got.append((o, v, i))
        elif op.kind == "send" and op.partition is not None:
            acks.setdefault(op.partition, []).extend(
                (o, v, i) for o, v in zip(op.offsets, op.values, strict=True))
    final = len(ops)
    for p, recs in (finals or {}).items():
        reads.setdefault(p, []).extend((o, v, final) for o, v in recs)
    logs = {p: _Log(p, ops, sorted(acks.get(p, []) + reads.get(p, []), key=itemgetter(2)))
            for p in dict.fromkeys([*acks, *reads, *parts])}
    first_reads = {p: dict(zip(map(itemgetter(1), reversed(obs)), reversed(obs), strict=True))
                   for p, obs in reads.items()}
    return logs, reads, first_reads


def _offset_cases(logs: Mapping[Part, _Log]) -> Iterable[Case]:
    for p, lg in logs.items():
        for o, vals in sorted(lg.extra.items()):
            yield Case("inconsistent-offsets", p,
                       tuple(lg.seen(o, v, src) for v, src in vals.items()),
                       f"offset {o} holds {len(vals)} values")
        for v, offsets in lg.duplicated().items():
            yield Case("duplicate", p,
                       tuple(lg.seen(o, v, lg.values_at(o)[v]) for o in offsets),
                       f"value {v!r} at offsets {offsets}")


def _unread_cases(sends: Iterable[_Send], logs: Mapping[Part, _Log],
                  in_order: Mapping[Part, Sequence[Obs]],
                  reads: Mapping[Part, Mapping[Value, Obs]], judge_unseen: bool
                  ) -> Iterable[Case]:
    """lost-write, unseen and G1a: which acknowledged values nobody read, and which
    failed ones somebody did. A lost write's bound is the highest position of a value
    read on its partition; the case shows the first read of a value there."""
    bounds = {p: max(map(logs[p].first.__getitem__, got), default=-1)
              for p, got in reads.items()}
    tops: dict[Part, Obs] = {}                          # the read at the bound
    empty: dict[Value, Obs] = {}
    for s in sends:
        read = reads.get(s.partition, empty)
        lg = logs[s.partition]
        if s.outcome == "fail":
            for i, v in enumerate(s.values):
                if v in read:
                    yield Case("G1a", s.partition, (s.seen(i), lg.seen(*read[v])),
                               f"value {v!r} of a failed send was read")
            continue
        if s.outcome != "ok":
            continue
        bound = bounds.get(s.partition, -1)
        for i, v in enumerate(s.values):
            if v in read:
                continue
            if lg.last[v] <= bound:
                top = tops.get(s.partition) or tops.setdefault(s.partition, next(
                    r for r in in_order[s.partition] if lg.first[r[1]] == bound))
                yield Case("lost-write", s.partition, (s.seen(i), lg.seen(*top)),
                           f"acked value {v!r} never read, though offset {top[0]} "
                           f"above it was")
            elif judge_unseen:
                yield Case("unseen", s.partition, (s.seen(i),),
                           f"acked value {v!r} never read, not even by the final read")


def _send_order_cases(sends: Sequence[_Send], logs: Mapping[Part, _Log]) -> Iterable[Case]:
    """nonmonotonic-send (between send ops of a process), int-send-skip and
    int-nonmonotonic-send (within one send op). ``sends`` in invocation order."""
    groups: dict[tuple[str, Part], list[_Send]] = {}
    for s in sends:
        groups.setdefault((s.process, s.partition), []).append(s)
        if s.outcome == "fail" or len(s.values) < 2:
            continue
        lg = logs[s.partition]
        for i in range(len(s.values) - 1):
            a, b = lg.first.get(s.values[i]), lg.first.get(s.values[i + 1])
            if a is None or b is None:
                continue
            if b <= a:
                yield Case("int-nonmonotonic-send", s.partition,
                           (s.seen(i, a), s.seen(i + 1, b)),
                           f"one send op: value {s.values[i + 1]!r} at {b} after "
                           f"{s.values[i]!r} at {a}")
            elif skipped := lg.offsets_between(a, b):
                yield Case("int-send-skip", s.partition,
                           (s.seen(i, a), *map(lg.first_seen, skipped), s.seen(i + 1, b)),
                           f"one send op: {len(skipped)} other values between its "
                           f"{s.values[i]!r} at {a} and {s.values[i + 1]!r} at {b}")
    for (_, p), group in groups.items():
        yield from _nonmonotonic_sends(group, logs[p])


def _nonmonotonic_sends(group: Sequence[_Send], lg: _Log) -> Iterable[Case]:
    """``group``: one process's sends to one partition, in invocation order. Each send
    is compared with the highest-placed send acknowledged before it was invoked, and in
    an idempotent session with the previous acknowledged send too."""
    position = lg.first.get
    acked = sorted((s for s in group if s.outcome == "ok"), key=lambda s: s.done or 0)
    k = 0
    rt: tuple[int, _Send] | None = None                 # (position of last value, send)
    idem: dict[int, tuple[int, _Send]] = {}             # session -> previous acked send
    for b in group:
        while k < len(acked) and (acked[k].done or 0) < b.invoked:
            pos = position(acked[k].values[-1])
            if pos is not None and (rt is None or pos > rt[0]):
                rt = (pos, acked[k])
            k += 1
        if b.outcome == "fail":
            continue
        first = position(b.values[0])
        pred = rt
        prev = idem.get(b.session) if b.idempotent and b.outcome == "ok" else None
        if prev is not None and (pred is None or prev[0] > pred[0]):
            pred = prev
        if first is not None and pred is not None and first <= pred[0]:
            a = pred[1]
            yield Case("nonmonotonic-send", b.partition,
                       (a.seen(len(a.values) - 1, pred[0]), b.seen(0, first)),
                       f"{b.process} sent {b.values[0]!r} (at {first}) after "
                       f"{a.values[-1]!r} (at {pred[0]})")
        if b.idempotent and b.outcome == "ok":
            last = position(b.values[-1])
            if last is not None:
                idem[b.session] = (last, b)


def _poll_order_cases(ops: Sequence[Op], logs: Mapping[Part, _Log]) -> Iterable[Case]:
    """nonmonotonic-poll / poll-skip (between polls of a process) and their int-
    forms (within one poll): each record read is compared with the process's previous
    read of its partition since that partition's position was last reset. The next
    offset is the common case, and needs no look-up."""
    last: dict[str, dict[Part, tuple[Rec, int]]] = {}     # process -> p -> (read, op)
    for i, op in enumerate(ops):
        kind = op.kind
        if kind == "poll":
            if op.type != "ok":
                continue
            mine = last.get(op.process)
            if mine is None:
                mine = last[op.process] = {}
            for rec in op.records:
                p, o, _ = rec
                prev = mine.get(p)
                if prev is not None:
                    po = prev[0][1]
                    if o != po + 1:
                        yield from _compare_reads(logs[p], ops, prev, (rec, i))
                mine[p] = (rec, i)
        elif kind in ("open", "assign", "subscribe") or (
                kind in ("rebalance", "seek") and op.partitions is None):
            last.pop(op.process, None)
        elif kind in ("rebalance", "seek"):
            mine = last.get(op.process)
            if mine:
                for p in op.partitions or ():
                    mine.pop(p, None)


def _compare_reads(lg: _Log, ops: Sequence[Op], a: tuple[Rec, int], b: tuple[Rec, int]
                   ) -> Iterable[Case]:
    """Read ``b`` came after read ``a`` of the same partition by the same process:
    within one poll when both are of the same op."""
    (p, ao, av), ai = a
    (_, bo, bv), bi = b
    prefix, where = ("int-", "within one poll") if ai == bi else ("", "between polls")
    sa = Seen(p, ao, av, ops[ai].process, ops[ai].time, "read")
    sb = Seen(p, bo, bv, ops[bi].process, ops[bi].time, "read")
    if bo <= ao:
        yield Case(f"{prefix}nonmonotonic-poll", p, (sa, sb),
                   f"{sb.process} read offset {bo} after {ao} {where}")
    elif skipped := lg.offsets_between(ao, bo):
        yield Case(f"{prefix}poll-skip", p, (sa, *map(lg.first_seen, skipped), sb),
                   f"{sb.process} skipped {len(skipped)} values from {ao} to {bo} {where}")


def check(history: QueueHistory | Iterable[Op], final_reads: FinalReads | None = None
          ) -> QueueReport:
    """Every anomaly in the module docstring. ``final_reads``: each partition read in
    full after the run (default: those recorded in ``history``). Unseen is judged only
    with them. A partition that was sent to but is missing from them counts as read
    empty."""
    if isinstance(history, QueueHistory):
        ops = history.snapshot()
        if final_reads is None and history.final_reads:
            final_reads = history.final_reads
    else:
        ops = list(history)
    with _gc_paused():
        return _check(ops, final_reads)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The analysis makes millions of tuples and no reference cycles; CPython's cyclic
    collector, run every few thousand allocations, would walk them again and again
    (a third of the time on a campaign-sized history)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _check(ops: Sequence[Op], final_reads: FinalReads | None) -> QueueReport:
    sends = _fold_sends(ops)
    logs, in_order, reads = _observe(ops, final_reads, {s.partition for s in sends})
    polls = [op for op in ops if op.kind == "poll" and op.type == "ok"]
    report = QueueReport(
        sends=len(sends), acked=sum(s.outcome == "ok" for s in sends),
        unknown=sum(s.outcome == "info" for s in sends),
        failed=sum(s.outcome == "fail" for s in sends), polls=len(polls),
        records_read=sum(len(op.records) for op in polls),
        final_records=(None if final_reads is None
                       else sum(len(r) for r in final_reads.values())))
    for source in (_offset_cases(logs),
                   _unread_cases(sends, logs, in_order, reads, final_reads is not None),
                   _send_order_cases(sends, logs), _poll_order_cases(ops, logs)):
        for case in source:
            report.cases[case.anomaly].append(case)
    return report


__all__ = ["ANOMALIES", "Case", "FinalReads", "Op", "Part", "QueueHistory",
           "QueueReport", "Rec", "Seen", "Value", "check"]
