"""TransactionCoordinator's transaction lifecycle over an in-memory __transaction_state
and a fake marker transport: AddPartitions, EndTxn by state, markers then Complete*,
fencing an open transaction (InitProducerId, timeout), verify-only, the completion of
Prepare* states found on load, leader moves during marker sending, expiry."""

from __future__ import annotations

import asyncio
import itertools

from coordinator.transaction.coordinator import InitResult, TransactionCoordinator
from coordinator.transaction.markers import MarkerChannel, TxnMarker
from coordinator.transaction.state_manager import TransactionStateManager
from coordinator.transaction.txn_state import TxnMetadata, TxnState
from protocol.errors import ErrorCode
from tests.unit.coordinator.transaction.test_state_manager import MemoryLog
from tests.unit.polling import until

A, B, C = ("a", 0), ("a", 1), ("b", 0)


class Brokers:
    """The marker transport: partition leaders, answers, and what was sent."""

    def __init__(self) -> None:
        self.leaders = {A: 1, B: 2, C: 1}
        self.sent: list[tuple[int, TxnMarker]] = []
        self.answer: dict[tuple[str, int], list[int]] = {}   # queued errors per partition
        self.down: set[int] = set()

    async def send(self, broker: int, marker: TxnMarker) -> dict[tuple[str, int], int]:
        if broker in self.down:
            raise ConnectionError(f"broker {broker} is down")
        self.sent.append((broker, marker))
        return {tp: (self.answer.get(tp) or [ErrorCode.NONE]).pop(0) for tp in marker.partitions}


class Clock:
    def __init__(self) -> None:
        self.now = 10_000

    def __call__(self) -> int:
        return self.now


def coordinator(mlog: MemoryLog, brokers: Brokers, clock: Clock) -> TransactionCoordinator:
    ids = itertools.count(1000)

    async def next_id() -> int:
        return next(ids)
    state = TransactionStateManager(mlog, lambda: 1, clock=clock)
    channel = MarkerChannel(brokers.send, brokers.leaders.get, lambda topic: True, backoff_s=0.001)
    return TransactionCoordinator(state, next_id, max_timeout_ms=60000, clock=clock,
                                  markers=channel)


async def reaches(c: TransactionCoordinator, state: TxnState, tid: str = "tx") -> None:
    """Wait until the coordinator's background work (markers, the Complete* step) has
    taken ``tid`` to ``state``."""
    def there() -> bool:
        m = c.state.get(tid)
        return m is not None and m.state is state
    await until(there, f"{tid} {state.name}")


async def started() -> tuple[TransactionCoordinator, MemoryLog, Brokers, Clock]:
    mlog, brokers, clock = MemoryLog(), Brokers(), Clock()
    c = coordinator(mlog, brokers, clock)
    c.state.on_become_leader(0, 3)
    await asyncio.sleep(0)
    assert await c.init_producer_id("tx", 5000) == InitResult(0, 1000, 0)
    return c, mlog, brokers, clock


def test_commit_sends_markers_to_each_leader_then_completes() -> None:
    async def body() -> None:
        c, mlog, brokers, _ = await started()
        assert await c.add_partitions("tx", 1000, 0, [A]) == ErrorCode.NONE
        assert await c.add_partitions("tx", 1000, 0, [B, C]) == ErrorCode.NONE
        meta = c.state.get("tx")
        assert meta is not None and meta.state is TxnState.ONGOING
        assert meta.partitions == {A, B, C} and meta.txn_start_timestamp == 10_000
        writes = len(mlog.records[0])
        assert await c.add_partitions("tx", 1000, 0, [A]) == ErrorCode.NONE
        assert len(mlog.records[0]) == writes                  # already in: nothing written
        assert await c.end_txn("tx", 1000, 0, commit=True) == ErrorCode.NONE
        await reaches(c, TxnState.COMPLETE_COMMIT)
        by_broker = {b: set(m.partitions) for b, m in brokers.sent}
        assert by_broker == {1: {A, C}, 2: {B}}
        assert all(m.commit and m.coordinator_epoch == 3 and m.producer_epoch == 0
                   for _, m in brokers.sent)
        done = c.state.get("tx")
        assert done is not None and done.state is TxnState.COMPLETE_COMMIT and not done.partitions
        # a retried commit is fine, an abort now is not; the next transaction begins
        assert await c.end_txn("tx", 1000, 0, commit=True) == ErrorCode.NONE
        assert await c.end_txn("tx", 1000, 0, commit=False) == ErrorCode.INVALID_TXN_STATE
        assert await c.add_partitions("tx", 1000, 0, [C]) == ErrorCode.NONE
    asyncio.run(body())


def test_markers_are_retried_until_every_partition_took_them() -> None:
    async def body() -> None:
        c, _, brokers, _ = await started()
        await c.add_partitions("tx", 1000, 0, [A, B])
        brokers.answer[A] = [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT]
        brokers.down.add(2)
        assert await c.end_txn("tx", 1000, 0, commit=False) == ErrorCode.NONE
        await asyncio.sleep(0.02)
        meta = c.state.get("tx")
        assert meta is not None and meta.state is TxnState.PREPARE_ABORT
        # requests for the id wait while the markers are out
        assert await c.add_partitions("tx", 1000, 0, [A]) == ErrorCode.CONCURRENT_TRANSACTIONS
        assert await c.end_txn("tx", 1000, 0, commit=False) == ErrorCode.CONCURRENT_TRANSACTIONS
        # the other result too: Kafka's pendingTransitionInProgress, never INVALID_TXN_STATE
        assert await c.end_txn("tx", 1000, 0, commit=True) == ErrorCode.CONCURRENT_TRANSACTIONS
        assert (await c.init_producer_id("tx", 5000)).error == ErrorCode.CONCURRENT_TRANSACTIONS
        brokers.leaders[B] = 1                                  # the partition moved
        await reaches(c, TxnState.COMPLETE_ABORT)
        assert [tp for b, m in brokers.sent for tp in m.partitions].count(A) == 3
        meta = c.state.get("tx")
        assert meta is not None and meta.state is TxnState.COMPLETE_ABORT
    asyncio.run(body())


def test_callers_are_checked() -> None:
    async def body() -> None:
        c, mlog, _, _ = await started()
        assert await c.add_partitions("", 1000, 0, [A]) == ErrorCode.INVALID_REQUEST
        assert await c.add_partitions("nobody", 1000, 0, [A]) == \
            ErrorCode.INVALID_PRODUCER_ID_MAPPING
        assert await c.add_partitions("tx", 999, 0, [A]) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        assert await c.add_partitions("tx", 1000, 1, [A]) == ErrorCode.PRODUCER_FENCED
        assert await c.end_txn("tx", 1000, 0, commit=True) == ErrorCode.INVALID_TXN_STATE  # Empty
        c.state.on_resign(0, None)
        assert await c.end_txn("tx", 1000, 0, commit=True) == ErrorCode.NOT_COORDINATOR
    asyncio.run(body())


def test_init_producer_id_fences_and_aborts_an_open_transaction() -> None:
    async def body() -> None:
        c, _, brokers, _ = await started()
        await c.add_partitions("tx", 1000, 0, [A])
        assert (await c.init_producer_id("tx", 5000)).error == ErrorCode.CONCURRENT_TRANSACTIONS
        await reaches(c, TxnState.COMPLETE_ABORT)
        [(_, marker)] = brokers.sent
        assert (marker.commit, marker.producer_epoch) == (False, 1)   # aborted under epoch 1
        meta = c.state.get("tx")
        assert meta is not None and (meta.state, meta.producer_epoch) == (
            TxnState.COMPLETE_ABORT, 1)
        # the zombie (epoch 0) is fenced; the new producer gets epoch 2
        assert await c.end_txn("tx", 1000, 0, commit=True) == ErrorCode.PRODUCER_FENCED
        assert await c.init_producer_id("tx", 5000) == InitResult(0, 1000, 2)
    asyncio.run(body())


def test_a_transaction_past_its_timeout_is_aborted() -> None:
    async def body() -> None:
        c, _, brokers, clock = await started()
        await c.add_partitions("tx", 1000, 0, [A])
        clock.now += 5000
        assert await c.abort_timed_out() == 0                   # exactly at the timeout: not yet
        clock.now += 1
        assert await c.abort_timed_out() == 1
        await reaches(c, TxnState.COMPLETE_ABORT)
        meta = c.state.get("tx")
        assert meta is not None and (meta.state, meta.producer_epoch) == (
            TxnState.COMPLETE_ABORT, 1)
        assert [m.commit for _, m in brokers.sent] == [False]
        assert await c.add_partitions("tx", 1000, 0, [A]) == ErrorCode.PRODUCER_FENCED
    asyncio.run(body())


def test_verify_only_answers_per_partition_without_writing() -> None:
    async def body() -> None:
        c, mlog, _, _ = await started()
        await c.add_partitions("tx", 1000, 0, [A])
        writes = len(mlog.records[0])
        assert c.verify_partitions("tx", 1000, 0, [A, B]) == {
            A: ErrorCode.NONE, B: ErrorCode.INVALID_TXN_STATE}
        assert c.verify_partitions("tx", 1000, 1, [A]) == {A: ErrorCode.PRODUCER_FENCED}
        assert len(mlog.records[0]) == writes
    asyncio.run(body())


def test_a_new_coordinator_finishes_what_the_log_left_in_prepare_commit() -> None:
    async def body() -> None:
        mlog, brokers, clock = MemoryLog(), Brokers(), Clock()
        first = coordinator(mlog, brokers, clock)
        first.state.on_become_leader(0, 3)
        await asyncio.sleep(0)
        prepared = TxnMetadata("tx", 1000, 4, 5000, TxnState.PREPARE_COMMIT,
                               frozenset({A, B}), 10, 10)
        assert await first.state.put(prepared) == ErrorCode.NONE
        # the broker dies before any marker went out; another one loads the partition
        second = coordinator(mlog, brokers, clock)
        second.state.on_become_leader(0, 4)
        await reaches(second, TxnState.COMPLETE_COMMIT)
        assert {tp for _, m in brokers.sent for tp in m.partitions} == {A, B}
        assert {(m.commit, m.producer_epoch, m.coordinator_epoch) for _, m in brokers.sent} == {
            (True, 4, 4)}
        meta = second.state.get("tx")
        assert meta is not None and meta.state is TxnState.COMPLETE_COMMIT
    asyncio.run(body())


def test_marker_sending_stops_when_the_coordinator_resigns() -> None:
    async def body() -> None:
        c, _, brokers, _ = await started()
        await c.add_partitions("tx", 1000, 0, [A])
        brokers.down.add(1)
        await c.end_txn("tx", 1000, 0, commit=True)
        await asyncio.sleep(0.01)
        c.state.on_resign(0, None)
        await until(lambda: not c.state.runtime.tasks, "the marker task ended")
        assert not c.state.runtime.tasks and c.state.get("tx") is None
    asyncio.run(body())


def test_idle_finished_ids_expire_as_tombstones() -> None:
    async def body() -> None:
        c, mlog, _, clock = await started()
        clock.now += 1000
        assert await c.expire_ids(5000) == 0
        clock.now += 4000
        assert await c.expire_ids(5000) == 1
        assert c.state.get("tx") is None and mlog.records[0][-1][1] is None
    asyncio.run(body())
