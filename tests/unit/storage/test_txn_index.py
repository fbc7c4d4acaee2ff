"""storage.txn_index: Kafka's .txnindex entries byte for byte, the overlap search a
read_committed fetch makes (and when it may stop), truncation, a torn tail cut off on
open, and the checks Kafka makes."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from storage.txn_index import ENTRY_SIZE, AbortedTxn, CorruptTxnIndex, TxnIndex


def test_entries_are_kafkas_34_bytes_and_reopen() -> None:
    assert AbortedTxn(7, 100, 150, 90).to_bytes() == struct.pack(">hqqqq", 0, 7, 100, 150, 90)
    assert ENTRY_SIZE == 34


def test_append_reopen_and_order(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000000.txnindex")
    idx = TxnIndex(path, 0)
    assert idx.entries() == [] and not Path(path).exists()       # created lazily
    txns = [AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 18, 35, 25)]
    for t in txns:
        idx.append(t)
    assert Path(path).stat().st_size == 3 * ENTRY_SIZE
    assert TxnIndex(path, 0).entries() == txns
    with pytest.raises(ValueError, match="increasing last offset"):
        idx.append(AbortedTxn(9, 30, 35, 30))


def test_collect_overlap_and_completion(tmp_path: Path) -> None:
    idx = TxnIndex(str(tmp_path / "t.txnindex"), 0)
    for t in (AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 18, 35, 25),
              AbortedTxn(3, 32, 50, 40)):
        idx.append(t)
    found, complete = idx.collect(12, 20)
    assert [t.producer_id for t in found] == [1, 2] and complete      # pid 2's LSO 25 >= 20
    found, complete = idx.collect(0, 100)
    assert [t.producer_id for t in found] == [0, 1, 2, 3] and not complete
    found, complete = idx.collect(51, 60)
    assert found == [] and not complete
    found, complete = idx.collect(0, 5)
    assert [t.producer_id for t in found] == [0] and complete         # LSO 11 >= 5


def test_truncate_and_torn_tail(tmp_path: Path) -> None:
    path = str(tmp_path / "t.txnindex")
    idx = TxnIndex(path, 0)
    for t in (AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 18, 35, 25)):
        idx.append(t)
    idx.truncate_to(15)                        # the abort marker at 15 is gone
    assert [t.producer_id for t in idx.entries()] == [0] and idx.last_offset == 10
    idx.append(AbortedTxn(4, 12, 16, 12))      # appends continue after the cut
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x01")               # a crash mid-entry
    again = TxnIndex(path, 0)
    assert [t.producer_id for t in again.entries()] == [0, 4]
    assert Path(path).stat().st_size == 2 * ENTRY_SIZE


def test_sanity_check_and_unknown_version(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000100.txnindex")
    idx = TxnIndex(path, 100)
    idx.append(AbortedTxn(0, 90, 99, 90))
    with pytest.raises(CorruptTxnIndex, match="start offset 100"):
        idx.sanity_check()
    Path(path).write_bytes(struct.pack(">hqqqq", 1, 0, 100, 110, 100))
    with pytest.raises(CorruptTxnIndex, match="version 1"):
        TxnIndex(path, 100)
