"""A Jepsen-style checker for replication runs: histories in, violations out.

Pure logic (no processes, no sockets); tests/fault/cluster_faults.py records the
history and feeds the samples. Three parts:

1. ``History`` + ``check``: every record the producer saw acknowledged (its delivery
   callback returned an offset) must be read back, after the run, exactly once, at
   the offset it was acknowledged with, and each producer's records of a partition
   must appear in the order they were sent. Values are self-describing::

       b"<tag>|<partition>|<seq>|<padding>"   tag = producer name, seq = 0, 1, 2, ...
                                                per (tag, partition) in send order

   so loss, duplication, reordering and "moved" records are told apart without any
   side table. Records a live consumer saw during the run must still be in the final
   log at the same offset with the same value ("a record a consumer has seen never
   disappears").

2. ``InvariantMonitor``: samples taken while faults happen. Per partition the high
   watermark never goes backwards, and HW <= LEO of every ISR member (the leader's
   HW is read first, the LEOs after it, so a sample can only err on the safe side).

3. ``compare_replica_logs``: after the run, the replicas' log files hold the same
   batches, byte for byte, up to the high watermark (read segment by segment from
   the partition directories, never through a broker).
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from protocol import records
from storage import filenames


# --------------------------------------------------------------------------------------
# values


def make_value(tag: str, partition: int, seq: int, size: int = 0) -> bytes:
    """The self-describing record value, padded with b"." to ``size`` bytes."""
    head = f"{tag}|{partition}|{seq}|".encode()
    return head + b"." * max(0, size - len(head))


def parse_value(value: bytes | None) -> tuple[str, int, int] | None:
    """(tag, partition, seq) of a value made by ``make_value``; None for anything else."""
    if not value:
        return None
    parts = bytes(value).split(b"|", 3)
    if len(parts) < 4:
        return None
    try:
        return parts[0].decode(), int(parts[1]), int(parts[2])
    except (UnicodeDecodeError, ValueError):
        return None


# --------------------------------------------------------------------------------------
# history


@dataclass
class History:
    """What the clients saw. Thread-safe: producers and consumers run in threads."""

    acked: dict[bytes, tuple[int, int | None]] = field(default_factory=dict)   # value -> (p, offset)
    failed: dict[bytes, str] = field(default_factory=dict)              # value -> error
    seen: dict[tuple[int, int], bytes] = field(default_factory=dict)    # (p, offset) -> value
    seen_conflicts: list[str] = field(default_factory=list)
    sent: int = 0
    fatal: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def on_send(self) -> None:
        with self._lock:
            self.sent += 1

    def on_ack(self, value: bytes, partition: int, offset: int | None) -> None:
        with self._lock:
            prev = self.acked.get(value)
            if prev is not None and prev != (partition, offset):
                self.seen_conflicts.append(
                    f"value {value[:40]!r} acknowledged twice: {prev} and {(partition, offset)}")
            self.acked[value] = (partition, offset)
            self.failed.pop(value, None)

    def on_error(self, value: bytes, error: str) -> None:
        with self._lock:
            if value not in self.acked:
                self.failed[value] = error

    def on_fatal(self, error: str) -> None:
        with self._lock:
            self.fatal.append(error)

    def on_seen(self, partition: int, offset: int, value: bytes) -> None:
        """A consumer read ``value`` at (partition, offset) during the run. Two
        different values at one offset means the log changed under a reader."""
        with self._lock:
            prev = self.seen.setdefault((partition, offset), value)
            if prev != value:
                self.seen_conflicts.append(
                    f"p{partition}@{offset}: consumer saw {prev[:40]!r}, later {value[:40]!r}")

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)


@dataclass
class Report:
    """The verdict. ``ok`` only when every list is empty."""

    acked: int = 0
    read: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    reordered: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    lost_values: list[bytes] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.reordered or self.moved
                    or self.vanished or self.foreign)

    def summary(self, limit: int = 8) -> str:
        lines = [f"acked={self.acked} read={self.read} lost={len(self.lost)} "
                 f"duplicated={len(self.duplicated)} reordered={len(self.reordered)} "
                 f"moved={len(self.moved)} vanished={len(self.vanished)} "
                 f"foreign={len(self.foreign)}"]
        for name in ("lost", "duplicated", "reordered", "moved", "vanished", "foreign"):
            items: list[str] = getattr(self, name)
            for item in items[:limit]:
                lines.append(f"  {name}: {item}")
            if len(items) > limit:
                lines.append(f"  {name}: ... {len(items) - limit} more")
        return "\n".join(lines)


# final[p] = [(offset, value), ...] as read after the run, in offset order.
FinalLog = Mapping[int, Sequence[tuple[int, bytes | None]]]


def check(history: History, final: FinalLog) -> Report:
    """Compare the acknowledged and seen records with the log read after the run."""
    rep = Report(acked=len(history.acked))
    where: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
    for p, recs in final.items():
        last_offset = -1
        last_seq: dict[str, tuple[int, int]] = {}
        for offset, value in recs:
            rep.read += 1
            if offset <= last_offset:
                rep.reordered.append(f"p{p}: offset {offset} read after {last_offset}")
            last_offset = offset
            parsed = parse_value(value)
            if parsed is None or parsed[1] != p:
                rep.foreign.append(f"p{p}@{offset}: unexpected value {value!r:.60}")
                continue
            assert value is not None
            where[value].append((p, offset))
            tag, _, seq = parsed
            prev = last_seq.get(tag)
            if prev is not None and seq <= prev[0]:
                rep.reordered.append(f"p{p}: {tag} seq {seq} at offset {offset} after seq "
                                     f"{prev[0]} at offset {prev[1]}")
            last_seq[tag] = (seq, offset)
    for value, places in where.items():
        if len(places) > 1:
            rep.duplicated.append(f"{value[:40]!r} at {places}")
    # librdkafka's idempotent producer can acknowledge a record without its offset
    # (None from confluent-kafka): a batch whose answer was lost, then known persisted
    # from a later batch's success. Such a record must be in the log; where is unknown.
    for value, (p, offset) in sorted(history.acked.items(),
                                     key=lambda kv: (kv[1][0], kv[1][1] or -1)):
        places = where.get(value)
        if not places:
            rep.lost.append(f"{value[:40]!r} acknowledged at p{p}@{offset}, not in the log")
            rep.lost_values.append(value)
        elif offset is not None and (p, offset) not in places:
            rep.moved.append(f"{value[:40]!r} acknowledged at p{p}@{offset}, found at {places}")
    by_place = {(p, off): v for p, recs in final.items() for off, v in recs}
    for (p, offset), value in sorted(history.seen.items()):
        now = by_place.get((p, offset))
        if now != value:
            rep.vanished.append(f"p{p}@{offset}: a consumer saw {value[:40]!r}, the final log "
                                f"has {now[:40] if now is not None else None!r}")
    rep.vanished.extend(history.seen_conflicts)
    return rep


# --------------------------------------------------------------------------------------
# invariant monitor


@dataclass(frozen=True)
class Sample:
    """One observation of one partition. ``hw`` from the leader (ListOffsets latest),
    read before ``leos`` (replica -> log end offset, read from its files)."""

    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    hw: int
    leos: Mapping[int, int]
    at: float = 0.0


class InvariantMonitor:
    """Checks each sample as it arrives; ``violations`` lists what broke.

    - HW never goes backwards per partition (KIP-207: a new leader answers
      OFFSET_NOT_AVAILABLE until its HW has caught up, so no sample of a lower HW
      may ever be served);
    - HW <= LEO of every ISR member whose LEO was read.
    """

    def __init__(self) -> None:
        self.max_hw: dict[int, tuple[int, int, float]] = {}   # p -> (hw, epoch, at)
        self.violations: list[str] = []
        self.samples = 0
        self._lock = threading.Lock()

    def observe(self, s: Sample) -> None:
        with self._lock:
            self.samples += 1
            prev = self.max_hw.get(s.partition)
            if prev is not None and s.hw < prev[0]:
                self.violations.append(
                    f"p{s.partition}: HW went backwards {prev[0]} (epoch {prev[1]}, t={prev[2]:.2f}) "
                    f"-> {s.hw} (leader {s.leader}, epoch {s.leader_epoch}, t={s.at:.2f})")
            if prev is None or s.hw > prev[0]:
                self.max_hw[s.partition] = (s.hw, s.leader_epoch, s.at)
            for r in s.isr:
                leo = s.leos.get(r)
                if leo is not None and s.hw > leo:
                    self.violations.append(
                        f"p{s.partition}: HW {s.hw} (leader {s.leader}, epoch {s.leader_epoch}) "
                        f"> LEO {leo} of ISR member {r} (ISR {list(s.isr)}, t={s.at:.2f})")

    def check_final(self, partition: int, hw: int) -> None:
        """The HW read after the run must not be below any HW served during it."""
        with self._lock:
            prev = self.max_hw.get(partition)
            if prev is not None and hw < prev[0]:
                self.violations.append(f"p{partition}: final HW {hw} below HW {prev[0]} served "
                                       f"during the run (epoch {prev[1]})")


# --------------------------------------------------------------------------------------
# replica logs on disk


@dataclass(frozen=True)
class DiskBatch:
    base_offset: int
    last_offset: int
    segment: int          # base offset of the segment file holding it
    data: bytes


def read_partition_dir(path: str) -> list[DiskBatch]:
    """Every complete batch of a partition directory, in offset order, read straight
    from its ``<20-digit base offset>.log`` segment files (a torn tail is ignored)."""
    out: list[DiskBatch] = []
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return out
    bases = sorted(filenames.parse_base_offset(n) for n in names
                   if n.endswith(filenames.LOG) and n[:-len(filenames.LOG)].isdigit())
    for base in bases:
        with open(filenames.log_file(path, base), "rb") as f:
            buf = f.read()
        for pos, h in records.iter_batches(buf):
            out.append(DiskBatch(h.base_offset, h.last_offset, base, buf[pos:pos + h.size]))
    return out


def log_end_offset(path: str) -> int:
    batches = read_partition_dir(path)
    return batches[-1].last_offset + 1 if batches else 0


def read_checkpoint(path: str) -> dict[tuple[str, int], int]:
    """An offset checkpoint file (``replication-offset-checkpoint`` and friends):
    "0\\n<count>\\n<topic> <partition> <offset>\\n..."; {} when absent."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return {}
    out: dict[tuple[str, int], int] = {}
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3:
            out[(parts[0], int(parts[1]))] = int(parts[2])
    return out


def compare_replica_logs(replicas: Mapping[int, Sequence[DiskBatch]], hw: int,
                         label: str = "") -> list[str]:
    """Problems found comparing replicas' batches below ``hw``: a replica missing
    data below the HW, a batch straddling the HW, or bytes that differ (the first
    differing batch per replica is reported against the lowest broker id)."""
    problems: list[str] = []
    below: dict[int, list[DiskBatch]] = {}
    for r, batches in sorted(replicas.items()):
        mine = [b for b in batches if b.base_offset < hw]
        if mine and mine[-1].last_offset >= hw:
            problems.append(f"{label} replica {r}: batch {mine[-1].base_offset}.."
                            f"{mine[-1].last_offset} straddles HW {hw}")
        end = mine[-1].last_offset + 1 if mine else 0
        if end < hw:
            problems.append(f"{label} replica {r}: holds offsets below {end} only, HW is {hw}")
        below[r] = mine
    if not below:
        return problems
    ref_id = min(below)
    ref = below[ref_id]
    for r, mine in below.items():
        if r == ref_id:
            continue
        for i, (a, b) in enumerate(zip(ref, mine)):
            if a.data != b.data:
                what = ("offsets differ" if a.base_offset != b.base_offset
                        or a.last_offset != b.last_offset else "bytes differ")
                problems.append(
                    f"{label} replica {r} diverges from replica {ref_id} at batch #{i}: "
                    f"{what} ({ref_id}: {a.base_offset}..{a.last_offset} {len(a.data)} B in "
                    f"segment {a.segment}; {r}: {b.base_offset}..{b.last_offset} "
                    f"{len(b.data)} B in segment {b.segment})")
                break
    return problems


def records_of(batches: Iterable[DiskBatch], upto: int) -> list[tuple[int, bytes | None]]:
    """(offset, value) of the data records below ``upto`` (control batches skipped)."""
    out: list[tuple[int, bytes | None]] = []
    for b in batches:
        if b.base_offset >= upto or records.read_header(b.data).is_control:
            continue
        out.extend((r.offset, r.value) for r in records.iter_records(b.data) if r.offset < upto)
    return out
