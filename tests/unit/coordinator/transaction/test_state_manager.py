"""TransactionStateManager over an in-memory __transaction_state (the OffsetsLog seam):
ownership and loading (newest value wins, tombstones remove), status while loading
and when not leading, writes installed only once written, epochs fencing a late
write, log errors mapped for the client, timeouts and expiration, Complete* installed at once
with its record written later or superseded."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from coordinator.runtime.log_seam import KeyValue, TxnEnd, TxnRecord
from coordinator.transaction.state_manager import TransactionStateManager, write_error
from coordinator.transaction.txn_log import read_key, read_value, transaction_key, transaction_value
from coordinator.transaction.txn_state import TxnMetadata, TxnState
from protocol.errors import ErrorCode
from tests.unit.polling import until

PARTITIONS = 4


class MemoryLog:
    """Partition -> records appended (and each append's acks); ``fail`` makes the next
    appends answer an error (decided as an append begins, so one held at the gate keeps
    the answer it began with); ``gate`` (when set) holds appends until it opens."""

    def __init__(self) -> None:
        self.records: dict[int, list[Any]] = {}
        # partition -> our leader epoch (None: we do not lead it); 0 unless told otherwise
        self.epochs: dict[int, int | None] = {}
        self.fail = ErrorCode.NONE
        self.gate: asyncio.Event | None = None
        self.acks: list[int] = []

    async def append(self, partition: int, records: list[KeyValue], *, acks: int,
                     timeout_ms: int, timestamp: int) -> int:
        assert acks in (-1, 1)
        self.acks.append(acks)
        fail = self.fail
        if self.gate is not None:
            await self.gate.wait()
        if fail:
            return int(fail)
        self.records.setdefault(partition, []).extend(records)
        return ErrorCode.NONE

    def read_chunks(self, partition: int) -> Iterator[list[KeyValue]] | None:
        recs = self.records.get(partition, [])
        return iter([recs[i:i + 2] for i in range(0, len(recs), 2)])

    def leader_epoch(self, partition: int) -> int | None:
        return self.epochs.get(partition, 0)


def manager(mlog: MemoryLog) -> TransactionStateManager:
    return TransactionStateManager(mlog, lambda: PARTITIONS, clock=lambda: 1000)


def meta(tid: str, state: TxnState = TxnState.EMPTY, epoch: int = 0, **kw: object) -> TxnMetadata:
    return TxnMetadata(tid, 42, epoch, 60000, state, **kw)  # type: ignore[arg-type]


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def test_load_replays_the_partition_newest_wins_tombstones_remove() -> None:
    async def body() -> None:
        mlog = MemoryLog()
        m = manager(mlog)
        p = m.partition_for("a")
        same = [t for t in (f"x{i}" for i in range(200)) if m.partition_for(t) == p][:2]
        ids = ["a", *same]
        mlog.records[p] = [
            (transaction_key(ids[0]), transaction_value(meta(ids[0]))),
            (transaction_key(ids[1]), transaction_value(meta(ids[1]))),
            (transaction_key(ids[0]), transaction_value(meta(ids[0], epoch=5))),
            (transaction_key(ids[1]), None),                            # expired
            (transaction_key(ids[2]), transaction_value(
                meta(ids[2], TxnState.ONGOING, partitions=frozenset({("t", 0)}),
                     txn_start_timestamp=10))),
            (b"\x00\x07garbage", b"\x00\x00"),                         # skipped, logged
            TxnRecord(9, transaction_key("z"), None), TxnEnd(9, True),  # not ours: skipped
        ]
        mlog.epochs[p] = None                  # another broker leads it
        assert m.status("a") == ErrorCode.NOT_COORDINATOR
        mlog.epochs[p] = 3
        m.on_become_leader(p, 3)
        assert m.status("a") == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        await settle()
        assert m.status("a") is None
        assert m.get(ids[0]) == meta(ids[0], epoch=5)
        assert m.get(ids[1]) is None
        assert m.get(ids[2]) is not None and m.get(ids[2]).partitions == {("t", 0)}  # type: ignore[union-attr]
        # a stale leadership notice is ignored; a resignation drops the partition
        m.on_become_leader(p, 2)
        assert m.runtime.partitions.owned[p] == 3
        mlog.epochs[p] = None                  # leadership moved on at epoch 4
        m.on_resign(p, 4)
        assert m.status("a") == ErrorCode.NOT_COORDINATOR and m.get(ids[0]) is None
        m.on_become_leader(p, 3)                 # older than the resignation: ignored
        assert m.status("a") == ErrorCode.NOT_COORDINATOR
    asyncio.run(body())


def test_put_is_written_then_installed_and_a_restart_reloads_it() -> None:
    async def body() -> None:
        mlog = MemoryLog()
        m = manager(mlog)
        p = m.partition_for("tx")
        mlog.epochs[p] = None
        assert await m.put(meta("tx")) == ErrorCode.NOT_COORDINATOR    # not ours yet
        mlog.epochs[p] = 0
        m.on_become_leader(p, 0)
        await settle()
        ongoing = meta("tx").transition(TxnState.ONGOING, 5, partitions=frozenset({("t", 1)}),
                                         txn_start_timestamp=5)
        assert await m.put(ongoing) == ErrorCode.NONE
        assert m.get("tx") == ongoing and len(mlog.records[p]) == 1
        again = manager(mlog)                   # another broker takes the partition over
        mlog.epochs[p] = 1
        again.on_become_leader(p, 1)
        await settle()
        assert again.get("tx") == ongoing
        dead = meta("tx").transition(TxnState.DEAD, 9)
        assert await again.put(dead) == ErrorCode.NONE
        assert again.get("tx") is None and mlog.records[p][-1] == (transaction_key("tx"), None)
    asyncio.run(body())


def test_a_failed_write_changes_nothing_and_maps_the_error() -> None:
    async def body() -> None:
        mlog = MemoryLog()
        m = manager(mlog)
        m.on_become_leader(m.partition_for("tx"), 0)
        await settle()
        mlog.fail = ErrorCode.NOT_ENOUGH_REPLICAS
        assert await m.put(meta("tx")) == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert m.get("tx") is None
    asyncio.run(body())
    assert write_error(ErrorCode.NOT_LEADER_OR_FOLLOWER) == ErrorCode.NOT_COORDINATOR
    assert write_error(ErrorCode.MESSAGE_TOO_LARGE) == ErrorCode.UNKNOWN_SERVER_ERROR
    assert write_error(ErrorCode.CORRUPT_MESSAGE) == ErrorCode.UNKNOWN_SERVER_ERROR
    assert write_error(ErrorCode.NONE) == ErrorCode.NONE


def test_a_write_that_outlives_the_leadership_is_not_installed() -> None:
    async def body() -> None:
        mlog = MemoryLog()
        m = manager(mlog)
        p = m.partition_for("tx")
        m.on_become_leader(p, 0)
        await settle()
        mlog.gate = asyncio.Event()
        write = asyncio.create_task(m.put(meta("tx")))
        await settle()
        m.on_resign(p, 1)
        m.on_become_leader(p, 2)
        await settle()                         # the new epoch's load is done (empty log)
        assert m.runtime.partitions.owned[p] == 2
        mlog.gate.set()
        # written, but under an epoch that is over: not installed, and the client is
        # told NOT_COORDINATOR, so it finds the coordinator again and retries
        assert await write == ErrorCode.NOT_COORDINATOR
        assert m.get("tx") is None
    asyncio.run(body())


def test_timeouts_and_expiration_cover_served_partitions_only() -> None:
    async def body() -> None:
        mlog = MemoryLog()
        m = manager(mlog)
        for p in range(PARTITIONS):
            m.on_become_leader(p, 0)
        await settle()
        late = meta("late", TxnState.ONGOING, txn_start_timestamp=0)
        idle = meta("idle", TxnState.COMPLETE_COMMIT, txn_last_update_timestamp=0)
        fresh = meta("fresh", TxnState.EMPTY, txn_last_update_timestamp=900)
        for x in (late, idle, fresh):
            m.ids[m.partition_for(x.transactional_id)][x.transactional_id] = x
        assert m.timed_out(60_001) == [late] and m.timed_out(60_000) == []
        assert [x.transactional_id for x in m.expirable(1000, 500)] == ["idle"]
        m.on_resign(m.partition_for("idle"), 1)
        assert m.expirable(1000, 500) == []
        await m.shutdown()
        assert m.runtime.partitions.owned == {} and m.ids == {}
    asyncio.run(body())


def test_a_missed_leader_and_isr_or_stop_replica_heals_on_the_next_request() -> None:
    async def body() -> None:
        mlog = MemoryLog()
        m = manager(mlog)
        p = m.partition_for("tx")
        mlog.records[p] = [(transaction_key("tx"), transaction_value(meta("tx", epoch=4)))]
        mlog.epochs[p] = 2                     # we lead it, but no LeaderAndIsr said so
        assert m.status("tx") == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        await settle()
        assert m.status("tx") is None and m.get("tx") == meta("tx", epoch=4)
        assert m.runtime.partitions.owned[p] == 2
        mlog.epochs[p] = None                  # moved away; the StopReplica never came
        assert m.status("tx") == ErrorCode.NOT_COORDINATOR and m.get("tx") is None
    asyncio.run(body())


async def serving_tx(mlog: MemoryLog, delay_s: float) -> tuple[TransactionStateManager, int]:
    """A manager with ``complete_write_delay_s=delay_s`` serving the partition of "tx"."""
    m = TransactionStateManager(mlog, lambda: PARTITIONS, clock=lambda: 1000,
                                complete_write_delay_s=delay_s)
    p = m.partition_for("tx")
    m.on_become_leader(p, 0)
    await settle()
    return m, p


def ongoing(tid: str) -> TxnMetadata:
    return meta(tid, TxnState.ONGOING, partitions=frozenset({("t", 0)}), txn_start_timestamp=1)


def _states(mlog: MemoryLog, p: int) -> list[TxnState | None]:
    out: list[TxnState | None] = []
    for key, value in mlog.records.get(p, []):
        m = read_value(read_key(key), value)
        out.append(None if m is None else m.state)
    return out


def test_a_waiting_complete_record_is_superseded_or_kept_when_the_next_write_fails() -> None:
    """``complete`` installs at once and writes later (acks=1); the id's next write
    supersedes it, unless that write fails: then it is still written."""
    async def body() -> None:
        mlog = MemoryLog()
        m, p = await serving_tx(mlog, 0.01)
        done = meta("tx", TxnState.COMPLETE_COMMIT)
        assert m.complete(done) == ErrorCode.NONE
        assert m.get("tx") is done and p not in mlog.records          # installed, not written
        nxt = ongoing("tx")
        assert await m.put(nxt) == ErrorCode.NONE
        await asyncio.sleep(0.05)
        assert _states(mlog, p) == [TxnState.ONGOING] and mlog.acks == [-1]   # superseded
        again = meta("tx", TxnState.COMPLETE_ABORT)
        assert m.complete(again) == ErrorCode.NONE
        mlog.fail = ErrorCode.NOT_ENOUGH_REPLICAS
        assert await m.put(nxt) == ErrorCode.COORDINATOR_NOT_AVAILABLE
        mlog.fail = ErrorCode.NONE
        await until(lambda: len(_states(mlog, p)) == 2, "the kept record written")
        assert m.get("tx") is again
        assert _states(mlog, p) == [TxnState.ONGOING, TxnState.COMPLETE_ABORT]
        assert mlog.acks[-1] == 1
        # resigned before it came due: not written (the next coordinator finishes it)
        assert m.complete(meta("tx", TxnState.COMPLETE_COMMIT)) == ErrorCode.NONE
        m.on_resign(p, 0)
        await asyncio.sleep(0.05)
        assert len(_states(mlog, p)) == 2
    asyncio.run(body())


def test_the_next_write_waits_for_a_complete_record_being_appended() -> None:
    """The log must hold an id's records in the order of its states: a write that
    starts while the waiting Complete* record is being appended goes after it."""
    async def body() -> None:
        mlog = MemoryLog()
        m, p = await serving_tx(mlog, 0.0)
        mlog.gate = asyncio.Event()                # appends are held until it opens
        assert m.complete(meta("tx", TxnState.COMPLETE_COMMIT)) == ErrorCode.NONE
        await settle()                             # its append has begun, held
        assert mlog.acks == [1]
        nxt = ongoing("tx")
        put = asyncio.ensure_future(m.put(nxt))
        await settle()
        assert mlog.acks == [1]                    # the put waits for it
        mlog.gate.set()
        assert await put == ErrorCode.NONE
        assert _states(mlog, p) == [TxnState.COMPLETE_COMMIT, TxnState.ONGOING]
        assert m.get("tx") == nxt
    asyncio.run(body())


def test_a_record_put_back_after_a_failed_write_is_still_written() -> None:
    """The superseding write held long enough for the writer task to find nothing
    waiting and end: the record it puts back when it fails is still written."""
    async def body() -> None:
        mlog = MemoryLog()
        m, p = await serving_tx(mlog, 0.01)
        done = meta("tx", TxnState.COMPLETE_COMMIT)
        mlog.gate, mlog.fail = asyncio.Event(), ErrorCode.NOT_ENOUGH_REPLICAS
        nxt = ongoing("tx")
        # the put's first step is queued before the writer task that complete() starts:
        # it takes the record out, so the writer finds nothing waiting and ends
        put = asyncio.ensure_future(m.put(nxt))
        assert m.complete(done) == ErrorCode.NONE
        await settle()
        assert mlog.acks == [-1] and not m._unlogged
        assert m._flusher is not None and m._flusher.done()
        # the held append fails (it began failing); the writes after it do not, whenever
        # the writer task comes to the record put back
        gate, mlog.gate, mlog.fail = mlog.gate, None, ErrorCode.NONE
        gate.set()
        assert await put == ErrorCode.COORDINATOR_NOT_AVAILABLE
        await until(lambda: p in mlog.records, "the record put back written")
        assert m.get("tx") is done and _states(mlog, p) == [TxnState.COMPLETE_COMMIT]
        assert mlog.acks == [-1, 1]
    asyncio.run(body())
