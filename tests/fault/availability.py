"""Availability figures from a queue history (issue 16, item 7): for a moment ``t`` (a
fault applied, or healed), how long until every partition acknowledged a write that
was sent at or after ``t``.

``AckTimes`` follows a ``QueueHistory`` (tests/fault/queue_history.py) as it grows,
reading only the ops appended since its last look: for every partition it keeps
(acknowledgement time, invocation time) of each acknowledged send, in acknowledgement
order (the order the history holds them in).

``Figures`` collects, per fault kind, the seconds from the fault and from the heal to
the slowest partition's first such write, and prints medians, maxima and the target
misses (``from_fault_target``: session timeout + 5 s, only for partitions the model
says must stay writable; ``from_heal_target``: 5 s).
"""

from __future__ import annotations

import statistics
import threading
import time
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field

from tests.fault.queue_history import Part, QueueHistory


class AckTimes:
    def __init__(self, history: QueueHistory) -> None:
        self.history = history
        self._seen = 0
        self._invoked: dict[int, tuple[Part, float]] = {}   # send id -> (partition, time)
        self._acks: dict[Part, list[tuple[float, float]]] = {}
        self._lock = threading.Lock()

    def _scan(self) -> None:
        ops = self.history.ops          # appended under the history's lock; read by index
        n = len(ops)
        for op in ops[self._seen:n]:
            if op.kind != "send":
                continue
            if op.type == "invoke":
                assert op.id is not None and op.partition is not None
                self._invoked[op.id] = (op.partition, op.time)
            else:
                inv = self._invoked.pop(op.id, None) if op.id is not None else None
                if op.type == "ok" and inv is not None:
                    self._acks.setdefault(inv[0], []).append((op.time, inv[1]))
        self._seen = n

    def first_ack(self, partition: Part, since: float) -> float | None:
        """The earliest acknowledgement of a send to ``partition`` invoked at or after
        ``since`` (monotonic), or None yet."""
        with self._lock:
            self._scan()
            acks = self._acks.get(partition, [])
        # an ack of a send invoked at or after ``since`` comes after ``since`` too
        for acked, invoked in acks[bisect_left(acks, (since, -1.0)):]:
            if invoked >= since:
                return acked
        return None

    def first_acks(self, partitions: Iterable[Part], since: float) -> dict[Part, float]:
        """``first_ack`` of each partition that has one yet (monotonic times)."""
        out: dict[Part, float] = {}
        for p in partitions:
            a = self.first_ack(p, since)
            if a is not None:
                out[p] = a
        return out

    def wait_all(self, partitions: Iterable[Part], since: float, timeout: float,
                 interval: float = 0.1) -> dict[Part, float | None]:
        """Seconds from ``since`` to each partition's first such ack (None: none within
        ``timeout`` of now)."""
        parts = list(partitions)
        out: dict[Part, float | None] = {p: None for p in parts}
        deadline = time.monotonic() + timeout
        while True:
            for p in parts:
                if out[p] is None:
                    a = self.first_ack(p, since)
                    out[p] = None if a is None else a - since
            if all(v is not None for v in out.values()) or time.monotonic() > deadline:
                return out
            time.sleep(interval)


@dataclass
class Figures:
    from_fault_target: float
    from_heal_target: float = 5.0
    from_fault: dict[str, list[float]] = field(default_factory=dict)
    from_heal: dict[str, list[float]] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)

    def add(self, kind: str, schedule: int, fault: dict[Part, float | None],
            eligible: set[Part], hold: float, heal: dict[Part, float | None]) -> None:
        """One fault's figures: ``fault`` per partition from the fault (None: no write
        while it lasted), ``eligible`` the partitions the target holds for, ``hold``
        how long the fault lasted, ``heal`` per partition from the heal."""
        elig = [fault[p] for p in eligible if p in fault]
        if elig:
            worst = max(float("inf") if v is None else v for v in elig)
            if worst != float("inf"):
                self.from_fault.setdefault(kind, []).append(worst)
            if worst > self.from_fault_target and hold > self.from_fault_target:
                self.misses.append(f"schedule {schedule} {kind}: a partition that must stay "
                                   f"writable took {worst:.1f}s after the fault "
                                   f"(target {self.from_fault_target:.1f}s)")
        got = [v for v in heal.values()]
        worst_heal = max(float("inf") if v is None else v for v in got) if got else 0.0
        if worst_heal != float("inf"):
            self.from_heal.setdefault(kind, []).append(worst_heal)
        if worst_heal > self.from_heal_target:
            self.misses.append(f"schedule {schedule} {kind}: a partition took "
                               f"{worst_heal:.1f}s after the heal (target "
                               f"{self.from_heal_target:.1f}s)")

    def table(self) -> str:
        def col(vals: list[float]) -> str:
            if not vals:
                return f"{'-':>16}"
            return f"{statistics.median(vals):7.2f} /{max(vals):7.2f}"
        kinds = sorted(set(self.from_fault) | set(self.from_heal))
        lines = [f"{'fault kind':24} {'n':>3} {'from fault med/max':>18} "
                 f"{'from heal med/max':>18}"]
        for k in kinds:
            n = max(len(self.from_fault.get(k, [])), len(self.from_heal.get(k, [])))
            lines.append(f"{k:24} {n:3} {col(self.from_fault.get(k, [])):>18} "
                         f"{col(self.from_heal.get(k, [])):>18}")
        return "\n".join(lines)


__all__ = ["AckTimes", "Figures"]
