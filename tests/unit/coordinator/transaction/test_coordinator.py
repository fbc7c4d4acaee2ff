"""TransactionCoordinator.init_producer_id over the state manager and an in-memory
__transaction_state: new ids, epoch bumps that fence, KIP-360's expected producer
id and epoch (retried bump, fenced caller), producer id rotation at an exhausted
epoch, states that must wait, failed writes, concurrent requests."""

from __future__ import annotations

import asyncio
import itertools

from coordinator.transaction.coordinator import InitResult, TransactionCoordinator
from coordinator.transaction.state_manager import TransactionStateManager
from coordinator.transaction.txn_state import TxnMetadata, TxnState
from protocol.errors import ErrorCode
from tests.unit.coordinator.transaction.test_state_manager import MemoryLog


def coordinator(mlog: MemoryLog | None = None) -> TransactionCoordinator:
    ids = itertools.count(1000)

    async def next_id() -> int:
        return next(ids)
    state = TransactionStateManager(mlog or MemoryLog(), lambda: 1, clock=lambda: 7)
    return TransactionCoordinator(state, next_id, max_timeout_ms=60000, clock=lambda: 7)


async def served(c: TransactionCoordinator) -> TransactionCoordinator:
    c.state.on_become_leader(0, 0)
    await asyncio.sleep(0)
    return c


def test_new_id_then_bumps_fence_the_older_producer() -> None:
    async def body() -> None:
        mlog = MemoryLog()
        c = await served(coordinator(mlog))
        assert await c.init_producer_id("tx", 1000) == InitResult(0, 1000, 0)
        assert await c.init_producer_id("tx", 2000) == InitResult(0, 1000, 1)
        stored = c.state.get("tx")
        assert stored is not None and (stored.state, stored.txn_timeout_ms) == (TxnState.EMPTY,
                                                                                2000)
        assert len(mlog.records[0]) == 2                  # each answer was written first
        # KIP-360: the current producer asks again (a bump), a retry of that bump gets
        # the same epoch, an unknown producer id is fenced
        assert await c.init_producer_id("tx", 1000, (1000, 1)) == InitResult(0, 1000, 2)
        assert await c.init_producer_id("tx", 1000, (1000, 1)) == InitResult(0, 1000, 2)
        assert await c.init_producer_id("tx", 1000, (1000, 0)) == InitResult(
            ErrorCode.PRODUCER_FENCED)
        assert await c.init_producer_id("tx", 1000, (555, 2)) == InitResult(
            ErrorCode.PRODUCER_FENCED)
    asyncio.run(body())


def test_an_exhausted_epoch_rotates_to_a_new_producer_id() -> None:
    async def body() -> None:
        c = await served(coordinator())
        c.state.ids[0]["tx"] = TxnMetadata("tx", 77, 32766, 1000, TxnState.COMPLETE_COMMIT)
        assert await c.init_producer_id("tx", 1000, (77, 32766)) == InitResult(0, 1000, 0)
        rotated = c.state.get("tx")
        assert rotated is not None
        assert (rotated.last_producer_id, rotated.last_producer_epoch) == (77, 32766)
        # the old id with its exhausted epoch is a retry of that rotation, not fenced
        assert (await c.init_producer_id("tx", 1000, (77, 32766))).error == 0
    asyncio.run(body())


def test_checks_before_anything_is_written() -> None:
    async def body() -> None:
        mlog = MemoryLog()
        c = coordinator(mlog)
        mlog.epochs[0] = None                   # another broker leads the partition
        assert (await c.init_producer_id("tx", 1000)).error == ErrorCode.NOT_COORDINATOR
        mlog.epochs[0] = 0
        await served(c)
        assert (await c.init_producer_id("", 1000)).error == ErrorCode.INVALID_REQUEST
        for bad in (0, -5, 60001):
            assert (await c.init_producer_id("tx", bad)).error == \
                ErrorCode.INVALID_TRANSACTION_TIMEOUT
        for state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            c.state.ids[0]["busy"] = TxnMetadata("busy", 5, 3, 1000, state)
            assert (await c.init_producer_id("busy", 1000)).error == \
                ErrorCode.CONCURRENT_TRANSACTIONS
        assert mlog.records == {}
        mlog.fail = ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (await c.init_producer_id("tx", 1000)).error == ErrorCode.NOT_COORDINATOR
        assert c.state.get("tx") is None
    asyncio.run(body())


def test_a_second_request_while_the_first_is_written_must_wait() -> None:
    async def body() -> None:
        mlog = MemoryLog()
        c = await served(coordinator(mlog))
        mlog.gate = asyncio.Event()
        first = asyncio.create_task(c.init_producer_id("tx", 1000))
        await asyncio.sleep(0)
        assert (await c.init_producer_id("tx", 1000)).error == ErrorCode.CONCURRENT_TRANSACTIONS
        mlog.gate.set()
        assert await first == InitResult(0, 1000, 0)
        assert await c.init_producer_id("tx", 1000) == InitResult(0, 1000, 1)
    asyncio.run(body())
