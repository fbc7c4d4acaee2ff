"""The history a queue workload records, for tests/fault/queue_checker.py: the op
model and ``QueueHistory``, the thread-safe recorder (saved and loaded as JSON lines).

History model
-------------
A history is a list of ``Op`` in the order the recorder appended them. The recorder
appends under one lock, so list order is a total order that agrees with real time. The
checker orders ops by it. ``time`` (a monotonic clock reading) is only for the report.
Each op has a ``process`` (one client: a consumer, or a producer that may pipeline
sends), a ``kind`` and a ``type`` ("invoke" | "ok" | "fail" | "info"):

  kind       type          fields
  open       ok            role, idempotent: a new client (session) in the process; its
                           consumer positions and idempotent send order start afresh
  send       invoke        id, partition, values (one value, or several for one batch)
  send       ok            id, offsets (one per value) the broker acknowledged
  send       fail | info   id, error. fail = definitely not written; info = outcome
                           unknown (timeout, lost connection). A send that never
                           completes counts as info.
  poll       ok            records: ((partition, offset, value), ...) as returned
  commit     ok            committed: ((partition, offset), ...). Recorded, not judged
                           (Jepsen derives no anomaly from commits either)
  assign     ok            partitions: the new manual assignment  } these reset the
  subscribe  ok            partitions: None (the group decides)   } consumer's position
  rebalance  ok            partitions: revoked + newly assigned   } of the partitions
  seek       ok            partitions: those repositioned         } named (all for
                                                                    assign/subscribe)

A partition is a key (int, or str naming a topic-partition), like Jepsen's integer keys.
Values must be unique per partition. Like Jepsen's, they are ints in send order.
"""

from __future__ import annotations

import json
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

Part = int | str                    # a topic-partition key
Value = int | str                   # a record value, unique per partition
Rec = tuple[Part, int, Value]       # (partition, offset, value), as a poll returned it
FinalReads = Mapping[Part, Sequence[tuple[int, Value]]]   # partition -> [(offset, value)]

KINDS = ("open", "send", "poll", "commit", "assign", "subscribe", "rebalance", "seek")
TYPES = ("invoke", "ok", "fail", "info")


# --------------------------------------------------------------------------------------
# history


@dataclass(frozen=True)
class Op:
    """One history entry; see the module docstring for which fields each kind uses."""

    process: str
    kind: str
    type: str
    time: float
    id: int | None = None
    partition: Part | None = None
    values: tuple[Value, ...] = ()
    offsets: tuple[int, ...] = ()
    records: tuple[Rec, ...] = ()
    partitions: tuple[Part, ...] | None = None
    committed: tuple[tuple[Part, int], ...] = ()
    role: str | None = None
    idempotent: bool = False
    error: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS or self.type not in TYPES:
            raise ValueError(f"bad op kind/type {self.kind!r}/{self.type!r}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"process": self.process, "kind": self.kind,
                               "type": self.type, "time": self.time}
        for name, default in _OPTIONAL.items():
            value = getattr(self, name)
            if value != default:
                out[name] = value
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Op:
        parts = d.get("partitions")
        return cls(process=d["process"], kind=d["kind"], type=d["type"], time=d["time"],
                   id=d.get("id"), partition=d.get("partition"),
                   values=tuple(d.get("values", ())), offsets=tuple(d.get("offsets", ())),
                   records=tuple((r[0], r[1], r[2]) for r in d.get("records", ())),
                   partitions=None if parts is None else tuple(parts),
                   committed=tuple((c[0], c[1]) for c in d.get("committed", ())),
                   role=d.get("role"), idempotent=d.get("idempotent", False),
                   error=d.get("error"))


_OPTIONAL: dict[str, Any] = {"id": None, "partition": None, "values": (), "offsets": (),
                             "records": (), "partitions": None, "committed": (),
                             "role": None, "idempotent": False, "error": None}


class QueueHistory:
    """The recorder. Producers and consumers call it from their own threads. It is
    thread-safe, and ops are kept in the order the calls took the lock."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.ops: list[Op] = []
        self.final_reads: dict[Part, list[tuple[int, Value]]] = {}
        self._clock = clock
        self._lock = threading.Lock()
        self._sends: dict[int, Op] = {}          # send id -> its invocation, until done
        self._next_id = 0

    def _append(self, **fields: Any) -> Op:      # caller holds the lock
        op = Op(time=self._clock(), **fields)
        self.ops.append(op)
        return op

    def opened(self, process: str, role: str = "producer", idempotent: bool = False) -> None:
        """A new client in ``process`` (first start or restart after a crash)."""
        with self._lock:
            self._append(process=process, kind="open", type="ok", role=role,
                         idempotent=idempotent)

    def send_invoked(self, process: str, partition: Part,
                     value: Value | Sequence[Value]) -> int:
        """Before handing ``value`` (or a batch of values) to the client; returns the
        send id to complete it with."""
        values = (value,) if isinstance(value, (int, str)) else tuple(value)
        with self._lock:
            sid = self._next_id
            self._next_id += 1
            self._sends[sid] = self._append(process=process, kind="send", type="invoke",
                                            id=sid, partition=partition, values=values)
            return sid

    def send_ok(self, send_id: int, offset: int | Sequence[int]) -> None:
        """Acknowledged at ``offset``. For a batch, pass the base offset or one offset
        per value."""
        self._complete(send_id, "ok", offset=offset)

    def send_failed(self, send_id: int, error: str = "") -> None:
        """Definitely not written (e.g. a non-retriable error before any append)."""
        self._complete(send_id, "fail", error=error)

    def send_unknown(self, send_id: int, error: str = "") -> None:
        """Outcome unknown (timeout, connection lost): it may or may not be in the log."""
        self._complete(send_id, "info", error=error)

    def _complete(self, send_id: int, type_: str, offset: int | Sequence[int] = (),
                  error: str = "") -> None:
        with self._lock:
            inv = self._sends.pop(send_id, None)
            if inv is None:
                raise ValueError(f"send {send_id} was not invoked or is already complete")
            offsets = (tuple(range(offset, offset + len(inv.values)))
                       if isinstance(offset, int) else tuple(offset))
            self._append(process=inv.process, kind="send", type=type_, id=send_id,
                         partition=inv.partition, values=inv.values, offsets=offsets,
                         error=error or None)

    def polled(self, process: str, records: Iterable[Rec]) -> None:
        """What one poll returned, in order (an empty poll may be recorded too)."""
        recs = tuple((p, o, v) for p, o, v in records)
        with self._lock:
            self._append(process=process, kind="poll", type="ok", records=recs)

    def committed(self, process: str, offsets: Mapping[Part, int]) -> None:
        with self._lock:
            self._append(process=process, kind="commit", type="ok",
                         committed=tuple(offsets.items()))

    def assigned(self, process: str, partitions: Iterable[Part]) -> None:
        """A manual assign. It replaces the assignment, so every position is reset."""
        self._reset(process, "assign", tuple(partitions))

    def subscribed(self, process: str) -> None:
        self._reset(process, "subscribe", None)

    def rebalanced(self, process: str, revoked: Iterable[Part] = (),
                   assigned: Iterable[Part] = ()) -> None:
        """The group moved partitions (call it from the rebalance callback, which runs
        before the poll that returns records)."""
        self._reset(process, "rebalance", (*revoked, *assigned))

    def sought(self, process: str, partitions: Iterable[Part]) -> None:
        self._reset(process, "seek", tuple(partitions))

    def _reset(self, process: str, kind: str, partitions: tuple[Part, ...] | None) -> None:
        with self._lock:
            self._append(process=process, kind=kind, type="ok", partitions=partitions)

    def final_read(self, partition: Part, records: Iterable[tuple[int, Value]]) -> None:
        """The whole partition, read after the run by a fresh reader."""
        with self._lock:
            self.final_reads[partition] = [(o, v) for o, v in records]

    def snapshot(self) -> list[Op]:
        with self._lock:
            return list(self.ops)

    def since(self, t: float) -> list[Op]:
        """The ops recorded at or after (monotonic) time ``t``. Their times never go
        down: the clock is read under the lock."""
        with self._lock:
            return self.ops[bisect_left(self.ops, t, key=attrgetter("time")):]

    def save(self, path: str | Path) -> None:
        """One JSON object per line: the ops, then one {"final": p, "records": ...} per
        partition read at the end."""
        with self._lock:
            lines = [json.dumps(op.to_json()) for op in self.ops]
            lines += [json.dumps({"final": p, "records": recs})
                      for p, recs in self.final_reads.items()]
        Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> QueueHistory:
        h = cls()
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            if "final" in d:
                h.final_reads[d["final"]] = [(o, v) for o, v in d["records"]]
            else:
                h.ops.append(Op.from_json(d))
        return h


__all__ = ["FinalReads", "KINDS", "Op", "Part", "QueueHistory", "Rec", "TYPES", "Value"]
