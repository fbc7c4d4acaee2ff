"""The partition side of transactions over a real log: markers, the LSO, the .txnindex
and what a read_committed Fetch gets, on the leader, on a follower and after a restart."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from broker.replication.fetch_reads import FetchPartitionRequest
from broker.replication.partition import READ_COMMITTED
from broker.replication.partition_state import PartitionState
from broker.replication.replica_manager import ReplicaManager
from protocol import records
from protocol.errors import ErrorCode
from protocol.records import build_batch
from storage.log_manager import LogManager
from storage.txn_index import AbortedTxn

from tests.unit.broker.replication.fakes import FakeBroker, FakeClock

TP = ("t", 0)
NOW = FakeClock().now_ms


def txn_batch(pid: int, seq: int, n: int = 1, epoch: int = 0) -> bytearray:
    return build_batch([(b"k", b"v%d" % i, NOW + i) for i in range(n)], producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq, transactional=True)


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


def produce(b: FakeBroker, data: bytearray) -> int:
    r = run(b.replicas.appends.append_records(-1, 1000, {TP: data}))[TP]
    assert r.error == ErrorCode.NONE, r
    return r.base_offset


def mark(b: FakeBroker, pid: int, commit: bool, epoch: int = 0) -> int:
    return run(b.replicas.appends.append_markers(1000, pid, epoch, commit, 0, [TP]))[TP]


def committed_read(b: FakeBroker, offset: int = 0):  # noqa: ANN201
    req = {TP: FetchPartitionRequest(offset, 1 << 20)}
    return run(b.replicas.fetch(-1, 0, 1, 1 << 20, READ_COMMITTED, req))[TP]


def test_lso_waits_for_the_earliest_open_transaction(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t")
    p = b.replicas.partition(*TP)
    produce(b, build_batch([(b"k", b"plain", NOW)]))           # offset 0
    produce(b, txn_batch(1, 0, n=2))                           # 1-2, txn of producer 1
    produce(b, txn_batch(2, 0))                                # 3, txn of producer 2
    assert (p.high_watermark, p.last_stable_offset) == (4, 1)
    r = committed_read(b)
    assert r.last_stable_offset == 1
    assert [h.base_offset for _, h in records.iter_batches(bytes(r.records))] == [0]
    assert mark(b, 1, commit=True) == ErrorCode.NONE           # marker at 4
    assert p.last_stable_offset == 3                           # producer 2 still open
    assert mark(b, 2, commit=False) == ErrorCode.NONE          # marker at 5
    assert p.last_stable_offset == p.high_watermark == 6


def test_aborts_reach_the_txnindex_and_the_read_committed_fetch(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t")
    p = b.replicas.partition(*TP)
    produce(b, txn_batch(1, 0, n=3))                           # 0-2
    produce(b, txn_batch(2, 0))                                # 3
    mark(b, 1, commit=False)                                   # 4: abort producer 1
    mark(b, 2, commit=True)                                    # 5
    seg = p.local_log().active_segment
    assert os.path.getsize(seg.txn_index_path) == 34
    assert seg.txn_index.entries() == [AbortedTxn(1, 0, 4, 3)]  # LSO left: producer 2's start
    r = committed_read(b)
    assert [(t.producer_id, t.first_offset) for t in r.aborted] == [(1, 0)]
    assert r.last_stable_offset == 6
    # read_uncommitted is told nothing
    req = {TP: FetchPartitionRequest(0, 1 << 20)}
    assert run(b.replicas.fetch(-1, 0, 1, 1 << 20, 0, req))[TP].aborted == ()
    # reading past the abort: nothing left to filter
    assert committed_read(b, 5).aborted == ()


def test_stale_marker_is_refused_and_appends_nothing(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t")
    produce(b, txn_batch(1, 0, epoch=3))
    leo = b.replicas.partition(*TP).log_end_offset
    assert mark(b, 1, commit=True, epoch=2) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert b.replicas.partition(*TP).log_end_offset == leo
    assert run(b.replicas.appends.append_markers(1000, 1, 3, True, 0, [("nope", 0)])) == {
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_non_transactional_write_inside_a_transaction_is_refused(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t")
    produce(b, txn_batch(1, 0))
    plain = build_batch([(b"k", b"v", NOW)], producer_id=1, producer_epoch=0, base_sequence=1)
    r = run(b.replicas.appends.append_records(-1, 1000, {TP: plain}))[TP]
    assert r.error == ErrorCode.INVALID_TXN_STATE


def test_follower_copies_markers_txnindex_and_lso(tmp_path: Path) -> None:
    leader = FakeBroker(tmp_path / "a")
    leader.lead("t")
    produce(leader, txn_batch(1, 0, n=2))
    produce(leader, txn_batch(2, 0))
    mark(leader, 1, commit=False)
    data = leader.replicas.partition(*TP).read(0, 1 << 20, upper=None, min_one_batch=True).slice.read()
    follower = FakeBroker(tmp_path / "b")
    follower.lead("t", replicas=(2, 1), leader=2)
    fp = follower.replicas.partition(*TP)
    assert fp.append_records_as_follower(data) == 4
    fp.update_follower_high_watermark(4)
    assert fp.producers.ongoing == {2: 2}
    assert fp.last_stable_offset == 2
    assert fp.local_log().active_segment.txn_index.entries() == [AbortedTxn(1, 0, 3, 2)]


def test_open_transactions_and_aborts_survive_a_restart(tmp_path: Path) -> None:
    clock = FakeClock()
    b = FakeBroker(tmp_path, clock=clock)
    b.lead("t")
    produce(b, txn_batch(1, 0, n=2))                           # 0-1
    mark(b, 1, commit=False)                                   # 2
    produce(b, txn_batch(2, 0))                                # 3: still open
    b.logs.shutdown()
    logs = LogManager([str(tmp_path / "logs")], clock=clock)
    logs.startup()
    rm = ReplicaManager(1, logs, clock=clock, timer=clock)
    tid = b.metadata.ids["t"]
    rm.become_leader_or_follower(2, [PartitionState("t", 0, tid, 2, 1, 1, (1,), 0, (1,))])
    p = rm.partition(*TP)
    p.local_log().update_high_watermark(4)
    assert p.producers.ongoing == {2: 3}
    assert p.last_stable_offset == 3
    assert [t.producer_id for t in p.local_log().collect_aborted_txns(0, 4)] == [1]


def test_follower_truncation_drops_txnindex_entries_past_the_cut(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t", replicas=(2, 1), leader=2)
    p = b.replicas.partition(*TP)
    data = bytearray(txn_batch(1, 0, n=2))
    records.patch_base_offset(data, 0, 0)
    marker = records.build_control_batch(commit=False, producer_id=1, producer_epoch=0,
                                         coordinator_epoch=0, timestamp=NOW)
    records.patch_base_offset(marker, 0, 2)
    p.append_records_as_follower(bytes(data) + bytes(marker))
    assert len(p.local_log().active_segment.txn_index.entries()) == 1
    assert p.truncate_to(2)
    assert p.local_log().active_segment.txn_index.entries() == []
    assert p.producers.ongoing == {1: 0}


def test_an_abort_marker_in_a_later_segment_still_filters_the_earlier_data(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t")
    p = b.replicas.partition(*TP)
    produce(b, txn_batch(1, 0, n=2))                           # 0-1 in the first segment
    p.local_log().roll()
    produce(b, build_batch([(b"k", b"plain", NOW)]))           # 2 in the second
    mark(b, 1, commit=False)                                   # 3: its entry is in the second
    r = committed_read(b)                                      # returns the first segment only
    assert [h.base_offset for _, h in records.iter_batches(bytes(r.records))] == [0]
    assert [(t.producer_id, t.first_offset) for t in r.aborted] == [(1, 0)]


def test_a_coordinator_write_for_a_fenced_epoch_is_refused(tmp_path: Path) -> None:
    """TxnOffsetCommit's offsets are a coordinator write (no sequence checks), but a
    zombie producer's epoch older than the abort marker's is INVALID_PRODUCER_EPOCH:
    otherwise its offsets would land after the marker and stay pending for ever."""
    b = FakeBroker(tmp_path)
    b.lead("t")
    p = b.replicas.partition(*TP)
    produce(b, txn_batch(5, 0, epoch=0))                        # 0: the transaction
    mark(b, 5, commit=False, epoch=1)                           # 1: fenced, aborted at epoch 1
    zombie = txn_batch(5, 7, epoch=0)
    r = run(b.replicas.appends.append_records(-1, 1000, {TP: zombie}, from_coordinator=True))[TP]
    assert r.error == ErrorCode.INVALID_PRODUCER_EPOCH and p.log_end_offset == 2
    assert p.producers.ongoing == {}
    fresh = txn_batch(5, 7, epoch=1)                            # any sequence: no checks
    r = run(b.replicas.appends.append_records(-1, 1000, {TP: fresh}, from_coordinator=True))[TP]
    assert r.error == ErrorCode.NONE and p.log_end_offset == 3
