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

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

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


@dataclass
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


class _Log:
    """One partition's version order: offset -> value -> its first observation."""

    def __init__(self) -> None:
        self.at: dict[int, dict[Value, Seen]] = {}
        self.offsets: list[int] = []                 # sorted offsets holding a value
        self.rank: dict[int, int] = {}               # offset -> dense index
        self.where: dict[Value, list[int]] = {}      # value -> its sorted offsets

    def add(self, seen: Seen) -> None:
        assert seen.offset is not None
        self.at.setdefault(seen.offset, {}).setdefault(seen.value, seen)

    def freeze(self) -> None:
        self.offsets = sorted(self.at)
        self.rank = {o: i for i, o in enumerate(self.offsets)}
        for o in self.offsets:
            for v in self.at[o]:
                self.where.setdefault(v, []).append(o)

    def position(self, value: Value) -> int | None:
        """The lowest offset holding ``value``; None when nobody placed it."""
        offsets = self.where.get(value)
        return offsets[0] if offsets else None

    def offsets_between(self, lo: int, hi: int) -> list[int]:
        """Offsets holding a value strictly between ``lo`` and ``hi`` ([] if hi <= lo+1)."""
        return self.offsets[bisect_right(self.offsets, lo):bisect_left(self.offsets, hi)]

    def first_seen(self, offset: int) -> Seen:
        return next(iter(self.at[offset].values()))


def _fold_sends(ops: Sequence[Op]) -> list[_Send]:
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


def _observe(ops: Sequence[Op], sends: Mapping[int, _Send], finals: FinalReads | None
             ) -> tuple[dict[Part, _Log], dict[Part, dict[Value, Seen]]]:
    """The version orders, and per partition each value read (by a poll or the final
    reads) with its first read."""
    logs: dict[Part, _Log] = {}
    reads: dict[Part, dict[Value, Seen]] = {}

    def log(p: Part) -> _Log:
        return logs.setdefault(p, _Log())

    for op in ops:
        if op.kind == "send" and op.type == "ok" and op.id is not None:
            s = sends[op.id]
            for i in range(len(s.values)):
                log(s.partition).add(s.seen(i))
        elif op.kind == "poll" and op.type == "ok":
            for p, o, v in op.records:
                seen = Seen(p, o, v, op.process, op.time, "read")
                log(p).add(seen)
                reads.setdefault(p, {}).setdefault(v, seen)
    for p, recs in (finals or {}).items():
        for o, v in recs:
            seen = Seen(p, o, v, "final", None, "final")
            log(p).add(seen)
            reads.setdefault(p, {}).setdefault(v, seen)
    for lg in logs.values():
        lg.freeze()
    return logs, reads


def _offset_cases(logs: Mapping[Part, _Log]) -> Iterable[Case]:
    for p, lg in logs.items():
        for o in lg.offsets:
            if len(lg.at[o]) > 1:
                yield Case("inconsistent-offsets", p, tuple(lg.at[o].values()),
                           f"offset {o} holds {len(lg.at[o])} values")
        for v, offsets in lg.where.items():
            if len(offsets) > 1:
                yield Case("duplicate", p, tuple(lg.at[o][v] for o in offsets),
                           f"value {v!r} at offsets {offsets}")


def _unread_cases(sends: Iterable[_Send], logs: Mapping[Part, _Log],
                  reads: Mapping[Part, Mapping[Value, Seen]], judge_unseen: bool
                  ) -> Iterable[Case]:
    """lost-write, unseen and G1a: which acknowledged values nobody read, and which
    failed ones somebody did."""
    bounds: dict[Part, tuple[int, Seen | None]] = {}
    for p, lg in logs.items():
        best: tuple[int, Seen | None] = (-1, None)
        for v, seen in reads.get(p, {}).items():
            r = lg.rank[lg.where[v][0]]
            if r > best[0]:
                best = (r, seen)
        bounds[p] = best
    for s in sends:
        read = reads.get(s.partition, {})
        if s.outcome == "fail":
            for i, v in enumerate(s.values):
                if v in read:
                    yield Case("G1a", s.partition, (s.seen(i), read[v]),
                               f"value {v!r} of a failed send was read")
            continue
        if s.outcome != "ok":
            continue
        lg = logs[s.partition]
        bound, top = bounds[s.partition]
        for i, v in enumerate(s.values):
            if v in read:
                continue
            if lg.rank[lg.where[v][-1]] <= bound:
                assert top is not None
                yield Case("lost-write", s.partition, (s.seen(i), top),
                           f"acked value {v!r} never read, though offset {top.offset} "
                           f"above it was")
            elif judge_unseen:
                yield Case("unseen", s.partition, (s.seen(i),),
                           f"acked value {v!r} never read, not even by the final read")


def _send_order_cases(sends: Sequence[_Send], logs: Mapping[Part, _Log]) -> Iterable[Case]:
    """nonmonotonic-send (between send ops of a process), int-send-skip and
    int-nonmonotonic-send (within one send op)."""
    groups: dict[tuple[str, Part], list[_Send]] = {}
    for s in sorted(sends, key=lambda s: s.invoked):
        groups.setdefault((s.process, s.partition), []).append(s)
        lg = logs.get(s.partition)
        if s.outcome == "fail" or lg is None:
            continue
        for i in range(len(s.values) - 1):
            a, b = lg.position(s.values[i]), lg.position(s.values[i + 1])
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
        lg = logs.get(p)
        if lg is not None:
            yield from _nonmonotonic_sends(group, lg)


def _nonmonotonic_sends(group: Sequence[_Send], lg: _Log) -> Iterable[Case]:
    """``group``: one process's sends to one partition, in invocation order. Each send
    is compared with the highest-placed send acknowledged before it was invoked, and in
    an idempotent session with the previous acknowledged send too."""
    acked = sorted((s for s in group if s.outcome == "ok"), key=lambda s: s.done or 0)
    k = 0
    rt: tuple[int, _Send] | None = None                 # (position of last value, send)
    idem: dict[int, tuple[int, _Send]] = {}             # session -> previous acked send
    for b in group:
        while k < len(acked) and (acked[k].done or 0) < b.invoked:
            pos = lg.position(acked[k].values[-1])
            if pos is not None and (rt is None or pos > rt[0]):
                rt = (pos, acked[k])
            k += 1
        if b.outcome == "fail":
            continue
        first = lg.position(b.values[0])
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
        last = lg.position(b.values[-1])
        if b.idempotent and b.outcome == "ok" and last is not None:
            idem[b.session] = (last, b)


def _poll_order_cases(ops: Sequence[Op], logs: Mapping[Part, _Log]) -> Iterable[Case]:
    """nonmonotonic-poll / poll-skip (between polls of a process) and their int-
    forms (within one poll)."""
    last: dict[str, dict[Part, Seen]] = {}      # process -> partition -> last read
    for op in ops:
        if op.kind in ("open", "assign", "subscribe") or (
                op.kind in ("rebalance", "seek") and op.partitions is None):
            last.pop(op.process, None)
        elif op.kind in ("rebalance", "seek"):
            for p in op.partitions or ():
                last.get(op.process, {}).pop(p, None)
        elif op.kind == "poll" and op.type == "ok":
            mine = last.setdefault(op.process, {})
            by_part: dict[Part, list[Seen]] = {}
            for p, o, v in op.records:
                by_part.setdefault(p, []).append(Seen(p, o, v, op.process, op.time, "read"))
            for p, seens in by_part.items():
                lg = logs[p]
                if p in mine:
                    yield from _compare_reads(lg, mine[p], seens[0], "")
                for a, b in pairwise(seens):
                    yield from _compare_reads(lg, a, b, "int-")
                mine[p] = seens[-1]


def _compare_reads(lg: _Log, a: Seen, b: Seen, prefix: str) -> Iterable[Case]:
    assert a.offset is not None and b.offset is not None
    where = "within one poll" if prefix else "between polls"
    if b.offset <= a.offset:
        yield Case(f"{prefix}nonmonotonic-poll", a.partition, (a, b),
                   f"{b.process} read offset {b.offset} after {a.offset} {where}")
    elif skipped := lg.offsets_between(a.offset, b.offset):
        yield Case(f"{prefix}poll-skip", a.partition,
                   (a, *map(lg.first_seen, skipped), b),
                   f"{b.process} skipped {len(skipped)} values from {a.offset} to "
                   f"{b.offset} {where}")


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
    sends = _fold_sends(ops)
    logs, reads = _observe(ops, {s.id: s for s in sends}, final_reads)
    for s in sends:
        logs.setdefault(s.partition, _Log())
    polls = [op for op in ops if op.kind == "poll" and op.type == "ok"]
    report = QueueReport(
        sends=len(sends), acked=sum(s.outcome == "ok" for s in sends),
        unknown=sum(s.outcome == "info" for s in sends),
        failed=sum(s.outcome == "fail" for s in sends), polls=len(polls),
        records_read=sum(len(op.records) for op in polls),
        final_records=(None if final_reads is None
                       else sum(len(r) for r in final_reads.values())))
    for source in (_offset_cases(logs),
                   _unread_cases(sends, logs, reads, final_reads is not None),
                   _send_order_cases(sends, logs), _poll_order_cases(ops, logs)):
        for case in source:
            report.cases[case.anomaly].append(case)
    return report


__all__ = ["ANOMALIES", "Case", "FinalReads", "Op", "Part", "QueueHistory",
           "QueueReport", "Rec", "Seen", "Value", "check"]
