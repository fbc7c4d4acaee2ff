"""Producer snapshot files (storage/producer_snapshot.py): Kafka's version-1 layout byte
for byte, CRC and length checks, atomic writes, and which files are kept."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from storage import producer_snapshot as snap
from storage.producer_snapshot import SnapshotEntry, SnapshotError

ENTRY = SnapshotEntry(producer_id=7, epoch=3, last_sequence=41, last_offset=100,
                      offset_delta=4, timestamp=1_700_000_000_123, coordinator_epoch=2,
                      current_txn_first_offset=90)


def test_layout_is_kafkas_version_1() -> None:
    data = snap.encode([ENTRY])
    # version int16, crc uint32, count int32, then the 46-byte entry
    assert len(data) == 2 + 4 + 4 + 46
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count) == (1, 1)
    assert crc == crc32c(data[6:])
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (7, 3, 41, 100, 4, 1_700_000_000_123,
                                                          2, 90)


def test_round_trip_and_empty() -> None:
    other = SnapshotEntry(8, 0, 0, 5, 0, 1, -1, -1)
    assert snap.decode(snap.encode([ENTRY, other])) == [ENTRY, other]
    assert snap.decode(snap.encode([])) == []


@pytest.mark.parametrize("damage", ["crc", "short", "version", "count"])
def test_damaged_files_are_refused(damage: str) -> None:
    data = bytearray(snap.encode([ENTRY]))
    if damage == "crc":
        data[-1] ^= 1
    elif damage == "short":
        data = data[:-3]
    elif damage == "version":
        struct.pack_into(">h", data, 0, 2)
    else:
        struct.pack_into(">i", data, 6, 2)
        struct.pack_into(">I", data, 2, crc32c(bytes(data[6:])))
    with pytest.raises(SnapshotError):
        snap.decode(bytes(data))


def test_files_named_by_offset_kept_and_deleted(tmp_path: Path) -> None:
    d = str(tmp_path)
    for o in (10, 20, 30, 40):
        snap.write(d, o, [ENTRY])
    assert (tmp_path / "00000000000000000030.snapshot").exists()
    assert not list(tmp_path.glob("*.tmp"))
    assert snap.offsets(d) == [10, 20, 30, 40]
    assert snap.latest_at_or_below(d, 35) == (30, [ENTRY])
    assert snap.latest_at_or_below(d, 5) is None
    assert snap.delete(d, above=30) == [40]
    assert snap.delete(d, below=15, keep_latest=1) == [10, 20]
    assert snap.offsets(d) == [30]


def test_an_unreadable_snapshot_is_skipped_and_removed(tmp_path: Path) -> None:
    d = str(tmp_path)
    snap.write(d, 10, [ENTRY])
    (tmp_path / "00000000000000000020.snapshot").write_bytes(b"\x00\x01garbage")
    assert snap.latest_at_or_below(d, 25) == (10, [ENTRY])
    assert snap.offsets(d) == [10]
