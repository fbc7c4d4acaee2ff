"""Producer state restored from a snapshot plus the batches after it equals the state
rebuilt from the whole log: snapshots written at rolls and at shutdown, used on reopen
(only the tail replayed), deleted past a truncation."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.replication.partition_state import PartitionState
from broker.replication.replica_manager import ReplicaManager
from protocol.errors import ErrorCode
from protocol.records import build_batch
from storage import producer_snapshot
from storage.config import LogConfig
from storage.log_manager import LogManager

from tests.unit.broker.replication.fakes import FakeBroker, FakeClock

TP = ("t", 0)
NOW = FakeClock().now_ms
SMALL_SEGMENTS = LogConfig(segment_bytes=600)


def batch(pid: int, seq: int, n: int = 2, txn: bool = False) -> bytearray:
    return build_batch([(b"k", b"value-%d" % i, NOW + i) for i in range(n)], producer_id=pid,
                       producer_epoch=0, base_sequence=seq, transactional=txn)


def append(b: FakeBroker, data: bytearray) -> int:
    r = asyncio.run(b.replicas.appends.append_records(-1, 1000, {TP: data}))[TP]
    assert r.error == ErrorCode.NONE, r
    return r.base_offset


def reopen(tmp_path: Path, clock: FakeClock, tid: object) -> ReplicaManager:
    logs = LogManager([str(tmp_path / "logs")], SMALL_SEGMENTS, clock=clock)
    logs.startup()
    rm = ReplicaManager(1, logs, clock=clock, timer=clock)
    rm.become_leader_or_follower(2, [PartitionState("t", 0, tid, 2, 1, 1, (1,), 0, (1,))])
    return rm


def state(rm_or_partition: object) -> tuple[dict, dict]:
    p = rm_or_partition
    return ({pid: (e.epoch, e.last_seq, e.batches[-1].last_offset)
             for pid, e in p.producers.producers.items()}, dict(p.producers.ongoing))


def load(tmp_path: Path, clock: FakeClock) -> tuple[FakeBroker, object]:
    b = FakeBroker(tmp_path, config=SMALL_SEGMENTS, clock=clock)
    tid = b.lead("t")
    seqs = {1: 0, 2: 0, 3: 0}
    for round_ in range(12):
        for pid in (1, 2):
            append(b, batch(pid, seqs[pid]))
            seqs[pid] += 2
        if round_ == 8:
            append(b, batch(3, 0, txn=True))                 # stays open
    return b, tid


def test_rolls_write_snapshots_and_a_reopen_replays_only_the_tail(tmp_path: Path) -> None:
    clock = FakeClock()
    b, tid = load(tmp_path, clock)
    p = b.replicas.partition(*TP)
    d = p.local_log().dir
    assert len(p.local_log().segments) > 3
    assert producer_snapshot.offsets(d)                     # written at the rolls
    assert len(producer_snapshot.offsets(d)) <= 2           # only the newest are kept
    full = state(p)
    leo = p.log_end_offset
    b.logs.shutdown()
    assert producer_snapshot.offsets(d)[-1] == leo          # and one at the clean shutdown
    rm = reopen(tmp_path, clock, tid)
    assert state(rm.partition(*TP)) == full
    assert rm.partition(*TP).producers.ongoing == {3: full[1][3]}
    rm.logs.shutdown()
    # the reopen trusts the snapshot: a producer only the snapshot knows comes back
    entries = producer_snapshot.read(producer_snapshot.snapshot_file(d, leo))
    ghost = producer_snapshot.SnapshotEntry(99, 5, 7, 3, 0, NOW)
    producer_snapshot.write(d, leo, [*entries, ghost])
    rm = reopen(tmp_path, clock, tid)
    assert rm.partition(*TP).producers.producers[99].epoch == 5


def test_after_a_crash_the_roll_snapshot_and_the_tail_give_the_full_state(tmp_path: Path
                                                                           ) -> None:
    clock = FakeClock()
    b, tid = load(tmp_path, clock)
    p = b.replicas.partition(*TP)
    d = p.local_log().dir
    full = state(p)
    roll_snapshot = producer_snapshot.offsets(d)[-1]
    assert roll_snapshot < p.log_end_offset                 # a tail to replay
    # no clean shutdown: the logs are simply dropped (kill -9 leaves the page cache)
    rm = reopen(tmp_path, clock, tid)
    assert state(rm.partition(*TP)) == full
    # a rebuild from the whole log agrees
    q = rm.partition(*TP)
    for o in producer_snapshot.offsets(d):
        (Path(d) / f"{o:020d}.snapshot").unlink()
    q._rebuild_producers()
    assert state(q) == full


def test_truncation_deletes_the_snapshots_past_it(tmp_path: Path) -> None:
    clock = FakeClock()
    b, tid = load(tmp_path, clock)
    b.logs.shutdown()
    rm = reopen(tmp_path, clock, tid)
    p = rm.partition(*TP)
    d = p.local_log().dir
    cut = producer_snapshot.offsets(d)[0] - 1
    p.local_log().truncate_to(cut)
    assert all(o <= cut for o in producer_snapshot.offsets(d))
