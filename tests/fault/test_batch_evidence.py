"""batch_evidence on a partition written by our storage/: the batches holding the
offsets asked about, with their neighbours, show producer id, epoch and sequences."""

from __future__ import annotations

from pathlib import Path

from protocol import records
from storage.config import LogConfig
from storage.log import PartitionLog
from tests.fault import batch_evidence
from tests.fault.queue_checker import Case, QueueReport, Seen


def _idempotent(log: PartitionLog, value: bytes, epoch: int, seq: int) -> None:
    log.append(records.build_batch([(None, value, 1_000, [])], producer_id=7,
                                   producer_epoch=epoch, base_sequence=seq), leader_epoch=0)


def test_duplicate_shows_both_batches_headers(tmp_path: Path) -> None:
    log = PartitionLog.open(str(tmp_path / "t-2"), LogConfig())
    for i in range(10):
        _idempotent(log, str(i).encode(), 0, i)
    _idempotent(log, b"9", 1, 0)              # the value again, under a bumped epoch
    log.close()
    report = QueueReport()
    report.cases["duplicate"].append(Case("duplicate", 2, (
        Seen(2, 9, 9, "g", None, "read"), Seen(2, 10, 9, "g", None, "read"))))
    text = batch_evidence.duplicates(report, [(0, tmp_path), (1, tmp_path / "gone")], "t")
    lines = text.splitlines()
    assert lines[0] == "broker 0, t-2 around offsets [9, 10]:"
    batches = [ln for ln in lines if "baseOffset:" in ln]
    # offsets 9 and 10 plus three before (nothing after the last)
    assert [int(ln.split("baseOffset: ")[1].split()[0]) for ln in batches] == [6, 7, 8, 9, 10]
    assert "baseSequence: 9 lastSequence: 9 producerId: 7 producerEpoch: 0" in batches[3]
    assert "baseSequence: 0 lastSequence: 0 producerId: 7 producerEpoch: 1" in batches[4]
    assert lines[-2] == "broker 1, t-2 around offsets [9, 10]:"
    assert lines[-1].endswith("t-2: no such directory")


def test_no_duplicates_no_text(tmp_path: Path) -> None:
    assert batch_evidence.duplicates(QueueReport(), [(0, tmp_path)], "t") == ""
