"""The exactly-one-owner checker: partition ownership over time, from the members' own logs.

Theory of operation
-------------------
Every member process (groups/protocol_member.py for confluent-kafka,
JavaConsumerProtocolMember.java for the Java client) appends one JSON object per line to an
events file of its own. Each carries ``t``: CLOCK_MONOTONIC in nanoseconds
(``time.monotonic_ns()`` in Python, ``System.nanoTime()`` in Java on Linux - the same clock),
so events of different processes on one machine are ordered by ``t``:

    {"t": ns, "ev": "start", "member": NAME, "pid": PID}
    {"t": ns, "ev": "assign", "tps": [[topic, partition], ...]}  entry of the assign callback
    {"t": ns, "ev": "revoke", "tps": [...]}                      exit of the revoke callback
    {"t": ns, "ev": "lost", "tps": [...]}                        exit of the lost callback
    {"t": ns, "ev": "records", "t0": ns, "recs": [[topic, partition, offset], ...]}
                                   t0 before the poll, t after it returned these records
    {"t": ns, "ev": "commit_error", "error": "..."}
    {"t": ns, "ev": "closed"}                                    after close() returned

``assign`` adds the partitions it names to what the member owns and ``revoke``/``lost`` remove
them (incremental callbacks - the consumer protocol and cooperative-sticky; eager callbacks name
the whole assignment, which works the same). A member owns a partition from the *entry* of the
assign callback to the *exit* of the revoke callback: the widest reading, so a broker that hands a
partition to a member before its previous owner finished revoking it shows as an overlap. An
interval still open when the log ends closes at the member's end: the test's clock reading after
it reaped the process (SIGKILL, or exit), or "now" for a live member.

Checks (``check``):
1. at most one owner: no two members' intervals of one partition overlap;
2. records under ownership: each polled record's poll window [t0, t] meets an interval of that
   member for that partition (records are taken from partitions the member owns);
3. every produced record consumed, each by one member; re-deliveries are listed (record, the
   times of both deliveries) for the caller to judge (they are legitimate only after a kill);
4. at least one owner at a settled moment: ``owners_at(t)`` gives each partition's owners;
5. a join does not pause the others: ``interrupted`` (partitions a member kept across a window
   but gave up within it) and ``longest_gap_s`` (its longest stretch without a record).
The module is pure (files in, findings out); the integration test and the benchmarks use it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The longest an existing member may go without a record while another member joins its group
# (the consumer protocol revokes only what moves, and a member goes on with what it keeps):
# asserted by test_consumer_protocol_clients.py, compared by bench/consumer_protocol_join_pause.py
# (where classic cooperative-sticky members with Kafka's 3 s heartbeats exceed it: librdkafka
# holds their synchronous commit for the rebalance's second round).
JOIN_PAUSE_LIMIT_S = 2.0

TopicPartition = tuple[str, int]
RecordId = tuple[str, int, int]          # topic, partition, offset


@dataclass
class Interval:
    """``member`` owned ``tp`` from ``start`` to ``end`` (ns, CLOCK_MONOTONIC; end None = open)."""
    member: str
    tp: TopicPartition
    start: int
    end: int | None = None

    def overlaps(self, other: Interval, now: int) -> bool:
        return (self.start < (other.end if other.end is not None else now)
                and other.start < (self.end if self.end is not None else now))


@dataclass
class Delivery:
    member: str
    t0: int
    t: int


@dataclass
class MemberLog:
    """One member's events file, read incrementally (``refresh``) while the member runs."""
    name: str
    path: Path
    end: int | None = None                       # set when the test reaped the process
    events: list[dict[str, Any]] = field(default_factory=list)
    _pos: int = 0
    _partial: str = ""

    def refresh(self) -> MemberLog:
        try:
            with open(self.path, encoding="utf-8") as f:
                f.seek(self._pos)
                chunk = f.read()
                self._pos = f.tell()
        except FileNotFoundError:
            return self
        text = self._partial + chunk
        lines = text.split("\n")
        self._partial = lines.pop()              # an unfinished last line waits for its end
        for line in lines:
            if line.startswith("{"):
                self.events.append(json.loads(line))
        return self

    # -- derived views ------------------------------------------------------------------------

    def owned(self) -> set[TopicPartition]:
        """What the member owns after its last event."""
        now: set[TopicPartition] = set()
        for e in self.events:
            if e["ev"] == "assign":
                now |= {(t, p) for t, p in e["tps"]}
            elif e["ev"] in ("revoke", "lost"):
                now -= {(t, p) for t, p in e["tps"]}
        return now

    def count(self, ev: str) -> int:
        return sum(1 for e in self.events if e["ev"] == ev)

    def started(self) -> bool:
        return any(e["ev"] == "start" for e in self.events)

    def closed(self) -> bool:
        return any(e["ev"] == "closed" for e in self.events)

    def deliveries(self) -> Iterable[tuple[RecordId, Delivery]]:
        for e in self.events:
            if e["ev"] == "records":
                d = Delivery(self.name, int(e["t0"]), int(e["t"]))
                for topic, partition, offset in e["recs"]:
                    yield (topic, int(partition), int(offset)), d

    def record_times(self, tps: set[TopicPartition] | None = None) -> list[int]:
        """The poll-return time of every record (of ``tps`` if given), in order."""
        return [d.t for rid, d in self.deliveries() if tps is None or rid[:2] in tps]

    def intervals(self) -> list[Interval]:
        out: list[Interval] = []
        open_: dict[TopicPartition, Interval] = {}
        for e in self.events:
            t = int(e["t"])
            if e["ev"] == "assign":
                for topic, p in e["tps"]:
                    tp = (topic, int(p))
                    if tp not in open_:
                        open_[tp] = Interval(self.name, tp, t)
            elif e["ev"] in ("revoke", "lost"):
                for topic, p in e["tps"]:
                    iv = open_.pop((topic, int(p)), None)
                    if iv is not None:
                        iv.end = t
                        out.append(iv)
        for iv in open_.values():
            iv.end = self.end              # None while the member lives: owning until now
            out.append(iv)
        return out


@dataclass
class Findings:
    overlaps: list[tuple[Interval, Interval]]
    outside: list[tuple[RecordId, Delivery]]          # records polled while not owning them
    missing: set[RecordId]                            # produced, never consumed
    redelivered: list[tuple[RecordId, Delivery, Delivery]]
    lost_events: list[tuple[str, int, list[Any]]]     # member, t, partitions

    def describe(self, limit: int = 10) -> str:
        def ns(v: int | None) -> str:
            return "open" if v is None else f"{v / 1e9:.3f}s"
        lines = [f"{len(self.overlaps)} overlaps, {len(self.outside)} records polled outside "
                 f"ownership, {len(self.missing)} records never consumed, "
                 f"{len(self.redelivered)} re-deliveries, {len(self.lost_events)} lost events"]
        for a, b in self.overlaps[:limit]:
            lines.append(f"  overlap {a.tp}: {a.member} [{ns(a.start)}, {ns(a.end)}] and "
                         f"{b.member} [{ns(b.start)}, {ns(b.end)}]")
        for rid, d in self.outside[:limit]:
            lines.append(f"  {rid} polled by {d.member} in [{ns(d.t0)}, {ns(d.t)}] unowned")
        for rid in sorted(self.missing)[:limit]:
            lines.append(f"  missing {rid}")
        for rid, first, again in self.redelivered[:limit]:
            lines.append(f"  {rid} by {first.member} at {ns(first.t)}, again by {again.member} "
                         f"at {ns(again.t)}")
        for member, t, tps in self.lost_events[:limit]:
            lines.append(f"  {member} lost {tps} at {ns(t)}")
        return "\n".join(lines)


def all_intervals(logs: Iterable[MemberLog]) -> list[Interval]:
    return [iv for log in logs for iv in log.intervals()]


def overlaps(intervals: list[Interval], now: int) -> list[tuple[Interval, Interval]]:
    """Pairs of intervals of one partition held by two members at once."""
    by_tp: dict[TopicPartition, list[Interval]] = {}
    for iv in intervals:
        by_tp.setdefault(iv.tp, []).append(iv)
    found = []
    for ivs in by_tp.values():
        ivs.sort(key=lambda iv: iv.start)
        for i, a in enumerate(ivs):
            for b in ivs[i + 1:]:
                if b.start >= (a.end if a.end is not None else now):
                    break
                if a.member != b.member and a.overlaps(b, now):
                    found.append((a, b))
    return found


def owners_at(intervals: list[Interval], t: int) -> dict[TopicPartition, list[str]]:
    """Each partition's owners at time ``t`` (open intervals count as still owning)."""
    out: dict[TopicPartition, list[str]] = {}
    for iv in intervals:
        if iv.start <= t and (iv.end is None or t < iv.end):
            out.setdefault(iv.tp, []).append(iv.member)
    return out


def longest_gap_s(log: MemberLog, start: int, end: int) -> float:
    """The longest stretch of [start, end] (ns) in which the member polled no record."""
    times = [start] + [t for t in log.record_times() if start <= t <= end] + [end]
    return max(b - a for a, b in zip(times, times[1:])) / 1e9


def interrupted(log: MemberLog, start: int, end: int) -> set[TopicPartition]:
    """Partitions the member owned at ``start`` and at ``end`` but gave up in between (revoked
    and assigned back: an eager rebalance stops even the partitions that stay)."""
    ivs = log.intervals()

    def held(t: int) -> set[TopicPartition]:
        return {iv.tp for iv in ivs if iv.start <= t and (iv.end is None or t < iv.end)}
    kept = held(start) & held(end)
    return {iv.tp for iv in ivs if iv.tp in kept and iv.end is not None and start < iv.end < end}


def check(logs: list[MemberLog], produced: set[RecordId], now: int) -> Findings:
    ivs = all_intervals(logs)
    mine: dict[tuple[str, TopicPartition], list[Interval]] = {}
    for iv in ivs:
        mine.setdefault((iv.member, iv.tp), []).append(iv)
    outside: list[tuple[RecordId, Delivery]] = []
    first: dict[RecordId, Delivery] = {}
    redelivered: list[tuple[RecordId, Delivery, Delivery]] = []
    deliveries = sorted(((rid, d) for log in logs for rid, d in log.deliveries()),
                        key=lambda x: x[1].t)
    for rid, d in deliveries:
        owned = mine.get((d.member, rid[:2]), [])
        if not any(iv.start <= d.t and d.t0 <= (iv.end if iv.end is not None else now)
                   for iv in owned):
            outside.append((rid, d))
        if rid in first:
            redelivered.append((rid, first[rid], d))
        else:
            first[rid] = d
    lost = [(log.name, int(e["t"]), e["tps"]) for log in logs for e in log.events
            if e["ev"] == "lost" and e["tps"]]
    return Findings(overlaps(ivs, now), outside, produced - set(first), redelivered, lost)
