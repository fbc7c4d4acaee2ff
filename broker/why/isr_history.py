"""A leader partition's ISR history: the last few ISR changes with their reasons.

One ``IsrHistory`` per ``Partition`` (``Partition.why``), written only by the ISR
code paths (``broker/why/isr_facts.py``, called from ``partition_isr`` and
``Partition.make_leader``), read by DescribeWhy. Nothing here is persisted: it
says what happened while this process hosted the partition.

Two steps per change, because the leader decides and the controller commits
(AlterPartition, DESIGN.md "Replication"):

1. ``propose``: when the leader proposes a shrink or expand it notes, per
   replica, the facts it decided on (reason, lag in ms and messages), *as of
   then*; a newer proposal for the same (kind, replica) replaces the note.
2. ``commit``: when the ISR really changes (the controller's AlterPartition
   answer, or a LeaderAndIsr), one ``IsrChange`` per replica removed or added
   is appended, with the noted facts (or the fallback the caller gives) and the
   ISR after. Notes are consumed by the commit that uses them.

Bound: the last ``capacity`` changes (default 32); the oldest fall off.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from protocol.why_model import EXPAND, SHRINK, IsrChange

DEFAULT_CAPACITY = 32


@dataclass(frozen=True, slots=True)
class ProposalNote:
    """What the leader knew when it proposed to move ``replica`` out of / into the ISR."""

    reason: str
    lag_ms: int
    lag_messages: int


class IsrHistory:
    """One per hosted partition, so kept small until used: the deque and the notes
    are made on the first change (10,000 idle partitions cost a slot object each)."""

    __slots__ = ("capacity", "_changes", "_notes")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"IsrHistory capacity must be >= 1, not {capacity}")
        self.capacity = capacity
        self._changes: deque[IsrChange] | None = None
        self._notes: dict[tuple[str, int], ProposalNote] | None = None

    def changes(self) -> list[IsrChange]:
        """Oldest first."""
        return list(self._changes) if self._changes is not None else []

    def propose(self, kind: str, replica: int, note: ProposalNote) -> None:
        """Step 1: the facts behind a proposed change of ``replica`` (``kind`` SHRINK/EXPAND)."""
        if kind not in (SHRINK, EXPAND):
            raise ValueError(f"unknown ISR change kind {kind!r}")
        if self._notes is None:
            self._notes = {}
        self._notes[(kind, replica)] = note

    def commit(self, before: Iterable[int], after: Iterable[int], now_ms: int,
               fallback: dict[tuple[str, int], ProposalNote] | None = None
               ) -> list[IsrChange]:
        """Step 2: the ISR went from ``before`` to ``after``: record one change per
        replica removed (shrinks first) or added; -> the changes recorded.

        Facts come from this leader's note for (kind, replica) if it has one (the
        proposal being committed, or one the controller's own change overtook),
        else from ``fallback``, else a bare "changed" entry."""
        old, new = frozenset(before), frozenset(after)
        isr_after = sorted(new)
        recorded = []
        for kind, replicas in ((SHRINK, sorted(old - new)), (EXPAND, sorted(new - old))):
            for replica in replicas:
                note = self._notes.pop((kind, replica), None) if self._notes else None
                if note is None and fallback is not None:
                    note = fallback.get((kind, replica))
                if note is None:
                    note = ProposalNote(f"{'removed from' if kind == SHRINK else 'added to'} "
                                        "the ISR", 0, -1)
                change = IsrChange(time_ms=now_ms, kind=kind, replica=replica,
                                   reason=note.reason, lag_ms=note.lag_ms,
                                   lag_messages=note.lag_messages, isr_after=isr_after)
                if self._changes is None:
                    self._changes = deque(maxlen=self.capacity)
                self._changes.append(change)
                recorded.append(change)
        return recorded

    def forget_notes(self) -> None:
        """A new leadership: proposals of the old one will never be answered."""
        self._notes = None
