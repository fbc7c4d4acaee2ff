"""Issue 27 in the coordinator, over an in-memory __transaction_state and a fake marker
transport: markers go on when the partition's leader epoch is bumped while this broker
stays leader (the stuck-PrepareCommit bug), Kafka's CONCURRENT_TRANSACTIONS while a
transition is pending, and commit = visible (EndTxn answered once Complete* is installed, its
record written after a delay unless the next state supersedes it;
bounded, NOT_COORDINATOR when the partition moved first). The marker channel abandons
a request held by a leader the metadata no longer names."""

from __future__ import annotations

import asyncio
import itertools

from coordinator.transaction.coordinator import TransactionCoordinator
from coordinator.transaction.markers import MarkerChannel, TxnMarker
from coordinator.transaction.state_manager import TransactionStateManager
from coordinator.transaction.txn_log import read_key, read_value
from coordinator.transaction.txn_state import TxnState
from protocol.errors import ErrorCode
from tests.unit.coordinator.transaction.test_coordinator_txn import A, B, Brokers, Clock, reaches
from tests.unit.coordinator.transaction.test_state_manager import MemoryLog
from tests.unit.polling import until


DELAY_S = 0.01   # complete_write_delay_s, where a test waits for the Complete* record
# where a test asserts that the record still waits: no machine is that slow, so what
# the test sees does not depend on how long its steps take
HOLD_S = 3600.0


def states(mlog: MemoryLog) -> list[TxnState | None]:
    """The states written to partition 0, in order (None: a tombstone)."""
    out: list[TxnState | None] = []
    for key, value in mlog.records.get(0, []):
        meta = read_value(read_key(key), value)
        out.append(None if meta is None else meta.state)
    return out


def last_state(mlog: MemoryLog) -> TxnState | None:
    return states(mlog)[-1]


def visible(mlog: MemoryLog, brokers: Brokers, clock: Clock, *,
            end_wait_s: float = 5.0, delay_s: float = DELAY_S) -> TransactionCoordinator:
    """A coordinator with commit = visible (``transaction.end.await.markers``)."""
    ids = itertools.count(1000)

    async def next_id() -> int:
        return next(ids)
    state = TransactionStateManager(mlog, lambda: 1, clock=clock,
                                    complete_write_delay_s=delay_s)
    channel = MarkerChannel(brokers.send, brokers.leaders.get, lambda topic: True,
                            backoff_s=0.001, leader_check_s=0.005)
    return TransactionCoordinator(state, next_id, max_timeout_ms=60000, clock=clock,
                                  markers=channel,
                                  await_markers=True, end_wait_s=end_wait_s)


async def started(**kw: float) -> tuple[TransactionCoordinator, Brokers]:
    mlog, brokers, clock = MemoryLog(), Brokers(), Clock()
    c = visible(mlog, brokers, clock, **kw)
    c.state.on_become_leader(0, 3)
    await asyncio.sleep(0)
    assert (await c.init_producer_id("tx", 5000)).error == ErrorCode.NONE
    return c, brokers


def test_markers_go_on_when_the_leader_epoch_is_bumped_under_them() -> None:
    """The root cause of the stuck transactions: an ISR change (a broker died, the new
    controller removed it) bumps the __transaction_state partition's leader epoch
    while this broker stays leader; the marker task must not take that for a move."""
    async def body() -> None:
        mlog, brokers, clock = MemoryLog(), Brokers(), Clock()
        ids = itertools.count(1000)

        async def next_id() -> int:
            return next(ids)
        c = TransactionCoordinator(
            TransactionStateManager(mlog, lambda: 1, clock=clock), next_id,
            max_timeout_ms=60000, clock=clock,
            markers=MarkerChannel(brokers.send, brokers.leaders.get, lambda t: True,
                                  backoff_s=0.001))
        c.state.on_become_leader(0, 3)
        await asyncio.sleep(0)
        await c.init_producer_id("tx", 5000)
        await c.add_partitions("tx", 1000, 0, [A, B])
        brokers.down.add(2)                        # B's leader is gone for now
        assert await c.end_txn("tx", 1000, 0, commit=True) == ErrorCode.NONE
        await asyncio.sleep(0.01)
        c.state.on_become_leader(0, 4)             # still leader, epoch 3 -> 4
        brokers.leaders[B] = 1                     # the new leader of B
        brokers.down.discard(2)
        await reaches(c, TxnState.COMPLETE_COMMIT)
        # the markers kept the coordinator epoch the partition was loaded at
        assert {m.coordinator_epoch for _, m in brokers.sent} == {3}
    asyncio.run(body())


def test_commit_is_answered_once_complete() -> None:
    async def body() -> None:
        c, brokers = await started(delay_s=HOLD_S)
        mlog = c.state.runtime.log
        assert isinstance(mlog, MemoryLog)
        await c.add_partitions("tx", 1000, 0, [A, B])
        assert await c.end_txn("tx", 1000, 0, commit=True) == ErrorCode.NONE
        meta = c.state.get("tx")
        assert meta is not None and meta.state is TxnState.COMPLETE_COMMIT
        assert {tp for _, m in brokers.sent for tp in m.partitions} == {A, B}
        # CompleteCommit is installed; its record waits (the log ends at PrepareCommit)
        assert last_state(mlog) is TxnState.PREPARE_COMMIT
        # the next transaction begins at once, and its Ongoing record supersedes it
        assert await c.add_partitions("tx", 1000, 0, [A]) == ErrorCode.NONE
        # shutdown writes every record still waiting: the superseded one is not among them
        await c.state.shutdown()
        assert states(mlog)[-3:] == [TxnState.ONGOING, TxnState.PREPARE_COMMIT,
                                     TxnState.ONGOING]
        assert mlog.acks[-2:] == [-1, -1]
    asyncio.run(body())


def test_an_idle_ids_complete_record_is_written_after_the_delay_acks_1() -> None:
    async def body() -> None:
        c, brokers = await started()
        mlog = c.state.runtime.log
        assert isinstance(mlog, MemoryLog)
        await c.add_partitions("tx", 1000, 0, [A, B])
        loop = asyncio.get_running_loop()
        asked = loop.time()
        assert await c.end_txn("tx", 1000, 0, commit=False) == ErrorCode.NONE
        await until(lambda: last_state(mlog) is TxnState.COMPLETE_ABORT,
                    "the CompleteAbort record written")
        assert loop.time() - asked >= DELAY_S and mlog.acks[-1] == 1
        # a reload finds the id complete: nothing is sent again
        sent = len(brokers.sent)
        c.state.on_resign(0, 3)
        assert c.state.get("tx") is None
        c.state.on_become_leader(0, 4)
        await reaches(c, TxnState.COMPLETE_ABORT)
        # every task the load started has ended (markers would be sent by one of them)
        await until(lambda: all(t.done() for t in c.state.runtime.tasks), "the load's tasks")
        assert len(brokers.sent) == sent
    asyncio.run(body())


def test_a_reload_before_the_complete_record_finishes_the_markers_again() -> None:
    """The coordinator moved before the CompleteCommit record was written: the next
    one loads PrepareCommit, sends the markers again and completes."""
    async def body() -> None:
        c, brokers = await started(delay_s=HOLD_S)
        await c.add_partitions("tx", 1000, 0, [A, B])
        assert await c.end_txn("tx", 1000, 0, commit=True) == ErrorCode.NONE
        sent = len(brokers.sent)
        c.state.on_resign(0, 3)                      # its record is not written now
        mlog = c.state.runtime.log
        assert isinstance(mlog, MemoryLog) and last_state(mlog) is TxnState.PREPARE_COMMIT
        nxt = visible(mlog, brokers, Clock())        # the next coordinator of partition 0
        nxt.state.on_become_leader(0, 4)
        await until(lambda: last_state(mlog) is TxnState.COMPLETE_COMMIT,
                    "the reloaded id's CompleteCommit record written")
        assert len(brokers.sent) > sent              # the markers went out again
        meta = nxt.state.get("tx")
        assert meta is not None and meta.state is TxnState.COMPLETE_COMMIT
    asyncio.run(body())


def test_a_retry_waits_for_the_markers_and_the_other_result_is_concurrent() -> None:
    async def body() -> None:
        c, brokers = await started()
        await c.add_partitions("tx", 1000, 0, [A, B])
        brokers.down.add(2)
        first = asyncio.ensure_future(c.end_txn("tx", 1000, 0, commit=True))
        await reaches(c, TxnState.PREPARE_COMMIT)
        assert not first.done()                    # B's leader is down: markers pending
        retry = asyncio.ensure_future(c.end_txn("tx", 1000, 0, commit=True))
        assert await c.end_txn("tx", 1000, 0, commit=False) == \
            ErrorCode.CONCURRENT_TRANSACTIONS
        assert await c.add_partitions("tx", 1000, 0, [A]) == ErrorCode.CONCURRENT_TRANSACTIONS
        assert (await c.init_producer_id("tx", 5000)).error == \
            ErrorCode.CONCURRENT_TRANSACTIONS
        brokers.down.discard(2)
        assert await first == ErrorCode.NONE and await retry == ErrorCode.NONE
        # once complete, an abort is the invalid one, as in Kafka
        assert await c.end_txn("tx", 1000, 0, commit=False) == ErrorCode.INVALID_TXN_STATE
    asyncio.run(body())


def test_the_wait_is_bounded_and_a_move_answers_not_coordinator() -> None:
    async def body() -> None:
        c, brokers = await started(end_wait_s=0.05)
        await c.add_partitions("tx", 1000, 0, [A])
        brokers.down.add(1)
        assert await c.end_txn("tx", 1000, 0, commit=True) == \
            ErrorCode.CONCURRENT_TRANSACTIONS            # still under way: retry
        c.end_wait_s = 5.0
        waiting = asyncio.ensure_future(c.end_txn("tx", 1000, 0, commit=True))
        await asyncio.sleep(0.02)
        c.state.on_resign(0, 5)
        assert await waiting == ErrorCode.NOT_COORDINATOR
    asyncio.run(body())


def test_a_request_held_by_a_leader_that_moved_is_abandoned() -> None:
    """A stopped leader never answers; once the metadata names the new leader the
    channel asks it instead of waiting out the request timeout."""
    async def body() -> None:
        leaders = {A: 1}
        held = asyncio.Event()
        sent: list[int] = []

        async def send(broker: int, marker: TxnMarker) -> dict[tuple[str, int], int]:
            sent.append(broker)
            if broker == 1:
                held.set()
                await asyncio.sleep(3600)          # SIGSTOPped
            return {tp: ErrorCode.NONE for tp in marker.partitions}
        channel = MarkerChannel(send, leaders.get, lambda t: True, backoff_s=0.001,
                                leader_check_s=0.005)
        writing = asyncio.ensure_future(channel.write(TxnMarker(7, 0, True, 3, (A,)),
                                                      lambda: True))
        await held.wait()
        leaders[A] = 2
        assert await asyncio.wait_for(writing, 2) is True
        assert sent == [1, 2]
    asyncio.run(body())
