"""After the run, with the broker stopped: is every byte in every log valid?

For each ``<log dir>/<topic>-<partition>/*.log`` segment (read as bytes; the
broker is stopped, so nothing moves), walk the batches from position 0
(``protocol.records.iter_batches``) and require, per batch: magic 2, a valid
CRC-32C, and records that parse (``iter_records``: decompressed when the codec
says so) - as many as the header's recordsCount, offsets inside
[baseOffset, baseOffset + lastOffsetDelta] and increasing, and batches whose
offsets increase across the segment. The walk must reach the end of the file
(a zero tail of a preallocated segment is allowed: ``log.preallocate``).

Findings are ``DiskProblem``s: the segment, the batch position, what is
wrong. Exceptions of any type from the readers count as problems (they are
reported, not raised): a log that makes the reader raise is the finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from protocol import records


@dataclass(frozen=True)
class DiskProblem:
    segment: str
    position: int
    problem: str


@dataclass
class DiskReport:
    segments: int = 0
    batches: int = 0
    records: int = 0
    bytes: int = 0
    problems: list[DiskProblem] | None = None


def check_log_dirs(log_dirs: list[Path], *, max_problems: int = 200) -> DiskReport:
    report = DiskReport(problems=[])
    assert report.problems is not None
    for log_dir in log_dirs:
        for segment in sorted(log_dir.glob("*-*/*.log")):
            report.segments += 1
            for problem in check_segment(segment, report):
                if len(report.problems) < max_problems:
                    report.problems.append(problem)
    return report


def check_segment(path: Path, report: DiskReport) -> list[DiskProblem]:
    data = path.read_bytes()
    report.bytes += len(data)
    problems: list[DiskProblem] = []
    name = f"{path.parent.name}/{path.name}"
    pos = 0
    last_offset = -1
    for pos, header in records.iter_batches(data):
        report.batches += 1
        where = f"batch at offset {header.base_offset}"
        if header.magic != records.MAGIC:
            problems.append(DiskProblem(name, pos, f"{where}: magic {header.magic}"))
            continue
        if not records.crc_ok(data, pos, header):
            problems.append(DiskProblem(name, pos, f"{where}: CRC mismatch"))
            continue
        if header.base_offset <= last_offset:
            problems.append(DiskProblem(name, pos, f"{where}: offsets do not increase "
                                        f"(previous batch ended at {last_offset})"))
        last_offset = header.last_offset
        try:
            recs = list(records.iter_records(data, pos))
        except Exception as e:  # noqa: BLE001 - any reader error is the finding
            problems.append(DiskProblem(name, pos, f"{where}: records do not parse: "
                                        f"{type(e).__name__}: {e}"[:300]))
            continue
        report.records += len(recs)
        if len(recs) != header.records_count:
            problems.append(DiskProblem(name, pos, f"{where}: {len(recs)} records, header "
                                        f"says {header.records_count}"))
        prev = header.base_offset - 1
        for r in recs:
            if not (prev < r.offset <= header.last_offset):
                problems.append(DiskProblem(name, pos, f"{where}: record offset {r.offset} "
                                            f"outside ({prev}, {header.last_offset}]"))
                break
            prev = r.offset
    end = 0
    for pos, header in records.iter_batches(data):
        end = pos + header.size
    tail = data[end:]
    if tail and tail.count(0) != len(tail):
        problems.append(DiskProblem(name, end, f"{len(tail)} bytes after the last batch "
                                    "are not a batch"))
    return problems
