"""The transactional fault campaign's checker (tests/fault/txn_campaign.py): from what
the consume-transform-produce processors did, what a read_committed observer read
during the run, and the output topic read at the end, it reports

  lost          an input record with no copy in the committed output
  duplicate     an input record with more than one copy in the committed output
  foreign       a committed output record that is no processor's (unparseable value)
  G1a           an aborted read: the observer (read_committed) read a record that is not
                in the committed output at the end (its transaction aborted, or it was
                never committed)
  uncommitted   a read of uncommitted data: the observer read a record before its
                transaction's commit was even asked for (commit_transaction called)
  phantom       the observer read a record that is in neither final log (data that
                disappeared: read above a high watermark that then moved back)

Output values are ``<input value>|<transaction tag>``; the tag names the processor's
transaction (``<processor>-<incarnation>-<sequence>``), so the checker knows which
transaction wrote each output record.

Records are identified by (partition, offset) in the output topic: the final
read_uncommitted log has every data record the log kept (aborted ones too), the final
read_committed log the committed ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

Rec = tuple[int, int, bytes]        # (partition, offset, value)


def out_value(input_value: bytes, tag: str) -> bytes:
    return input_value + b"|" + tag.encode()


def parse_out(value: bytes | None) -> tuple[bytes, str] | None:
    """(input value, transaction tag) of an output value, None when not ours."""
    if not value or b"|" not in value:
        return None
    inp, _, tag = value.rpartition(b"|")
    try:
        return inp, tag.decode()
    except UnicodeDecodeError:
        return None


@dataclass
class TxnHistory:
    inputs: list[bytes]                                  # every input value
    commit_called: dict[str, float] = field(default_factory=dict)   # tag -> monotonic time
    observed: list[tuple[float, Rec]] = field(default_factory=list)  # (read time, record)


@dataclass
class TxnReport:
    inputs: int = 0
    committed: int = 0
    aborted_records: int = 0
    observed: int = 0
    lost: list[bytes] = field(default_factory=list)
    duplicates: list[bytes] = field(default_factory=list)
    foreign: list[Rec] = field(default_factory=list)
    g1a: list[Rec] = field(default_factory=list)
    uncommitted: list[Rec] = field(default_factory=list)
    phantom: list[Rec] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicates or self.foreign or self.g1a
                    or self.uncommitted or self.phantom)

    def summary(self) -> str:
        lines = [f"inputs {self.inputs}, committed output {self.committed}, aborted output "
                 f"records {self.aborted_records}, observed reads {self.observed}",
                 f"lost {len(self.lost)}, duplicates {len(self.duplicates)}, foreign "
                 f"{len(self.foreign)}, G1a {len(self.g1a)}, uncommitted reads "
                 f"{len(self.uncommitted)}, phantom reads {len(self.phantom)}: "
                 f"{'OK' if self.ok else 'ANOMALIES'}"]
        for name in ("lost", "duplicates", "foreign", "g1a", "uncommitted", "phantom"):
            items = getattr(self, name)
            if items:
                lines.append(f"  first {name}: {items[:5]!r}")
        return "\n".join(lines)


def check(history: TxnHistory, committed: Iterable[Rec], uncommitted: Iterable[Rec]
          ) -> TxnReport:
    """See the module docstring. ``committed`` / ``uncommitted``: the output topic read
    to its end at the end of the run, read_committed / read_uncommitted."""
    committed = list(committed)
    everything: Mapping[tuple[int, int], bytes] = {(p, o): v for p, o, v in uncommitted}
    kept = {(p, o) for p, o, _ in committed}
    report = TxnReport(inputs=len(history.inputs), committed=len(committed),
                       aborted_records=len(set(everything) - kept),
                       observed=len(history.observed))
    copies: Counter[bytes] = Counter()
    for rec in committed:
        parsed = parse_out(rec[2])
        if parsed is None:
            report.foreign.append(rec)
        else:
            copies[parsed[0]] += 1
    wanted = set(history.inputs)
    report.lost = [v for v in history.inputs if copies[v] == 0]
    report.duplicates = sorted(v for v, n in copies.items() if n > 1 and v in wanted)
    report.foreign += [r for r in committed if (parsed := parse_out(r[2])) is not None
                       and parsed[0] not in wanted]
    for at, rec in history.observed:
        key = (rec[0], rec[1])
        if key not in everything:
            report.phantom.append(rec)
            continue
        if key not in kept:
            report.g1a.append(rec)
            continue
        parsed = parse_out(rec[2])
        called = history.commit_called.get(parsed[1]) if parsed else None
        if called is None or at < called:
            report.uncommitted.append(rec)
    return report


__all__ = ["Rec", "TxnHistory", "TxnReport", "check", "out_value", "parse_out"]
