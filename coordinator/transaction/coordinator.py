"""TransactionCoordinator: what the transactional APIs ask of a transactional id's
coordinator (Kafka's TransactionCoordinator): InitProducerId, AddPartitionsToTxn
(and its verify-only form), AddOffsetsToTxn (as AddPartitions of the group's
``__consumer_offsets`` partition), EndTxn, the abort of timed-out transactions and
the expiry of idle transactional ids.

InitProducerId(transactional id, timeout, [expected producer id and epoch, v3+]),
as Kafka 3.9's handleInitProducerId:

1. Checks: an empty id is INVALID_REQUEST; a timeout <= 0 or above
   ``transaction.max.timeout.ms`` INVALID_TRANSACTION_TIMEOUT; an id on a
   partition we do not serve NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS;
   another request for the id still being written CONCURRENT_TRANSACTIONS.
2. An unknown id gets a fresh producer id (epoch -1, bumped to 0 below).
3. KIP-360: an expected (producer id, epoch) from the client must be the
   current producer id (or the id is brand new, or it is the previous producer
   id with an exhausted epoch: a retried rotation); otherwise PRODUCER_FENCED.
4. By state: PrepareCommit / PrepareAbort -> CONCURRENT_TRANSACTIONS (retry
   once the markers are written). Empty / CompleteCommit / CompleteAbort ->
   the epoch is bumped (the older producer is fenced), or, when it is
   exhausted (>= 32766), a new producer id replaces the old one at epoch 0;
   the id goes to Empty. An expected epoch that is the previous one is a
   retry of a bump already made: the current epoch is returned unchanged.
   Ongoing -> the epoch is bumped to fence the producer and the open
   transaction aborted with the bumped epoch (Kafka's PrepareEpochFence, then
   PrepareAbort); the answer is CONCURRENT_TRANSACTIONS and the client's retry
   gets the next epoch once the abort completed.
5. The new state is written to ``__transaction_state`` (acks=all) before the
   answer; a failed write answers the mapped error and changes nothing.

AddPartitionsToTxn / EndTxn first check the caller: an unknown id or another
producer id is INVALID_PRODUCER_ID_MAPPING, another epoch PRODUCER_FENCED, a
write in flight or markers being written CONCURRENT_TRANSACTIONS. Adding
partitions moves the id to Ongoing (the start time is set when a transaction
begins); partitions already in an Ongoing transaction are answered at once.

Answers while a transition is pending. Kafka 3.9's coordinator keeps a
``pendingState`` on the id from the moment it prepares a transition until the
transition is done: while a state write is in flight, and, for PrepareCommit /
PrepareAbort, all the while the markers are being written
(``TransactionCoordinator.endTransaction`` sets it with ``prepareComplete``
before handing the markers to ``TransactionMarkerChannelManager``). Here a
Prepare* state always has its markers in flight (started by EndTxn, by a
timeout abort or by the load that found it), so "pending" is: the id is in
``pending`` (a write in flight) or in PrepareCommit / PrepareAbort:

    request             Kafka 3.9 source (TransactionCoordinator)           answer
    InitProducerId      handleInitProducerId / prepareInitProducerIdTransit: CONCURRENT_TRANSACTIONS
                        pendingTransitionInProgress, then
                        ``case PrepareAbort | PrepareCommit``
    AddPartitionsToTxn  handleAddPartitionsToTransaction:                   CONCURRENT_TRANSACTIONS
    (AddOffsetsToTxn)   pendingTransitionInProgress, then
                        ``state == PrepareCommit || state == PrepareAbort``
    EndTxn, commit or   handleEndTransaction: after the producer id and      CONCURRENT_TRANSACTIONS
    abort               epoch checks, ``pendingTransitionInProgress &&
                        pendingState != PrepareEpochFence``, before the
                        state match below

never INVALID_TXN_STATE: that one is librdkafka's and the Java client's fatal
error, and an abort racing the end of the previous transaction must not kill the
producer.

EndTxn, as Kafka's handleEndTransaction by state once nothing is pending
(commit / abort asked):

    Ongoing          PrepareCommit / PrepareAbort written; the markers go out
                     (``markers.py``) and CompleteCommit / CompleteAbort is
                     installed once every partition has its marker
    CompleteCommit   commit: NONE (a retry)        abort: INVALID_TXN_STATE
    CompleteAbort    abort: NONE (a retry)         commit: INVALID_TXN_STATE
    Empty            INVALID_TXN_STATE

Commit means visible (``transaction.end.await.markers``, on by default; beyond
Kafka, which answers once Prepare* is durable): EndTxn from Ongoing is answered
once every partition's leader has the marker below its high watermark and
CompleteCommit / CompleteAbort is installed (its record is written later, or
superseded by the id's next state: ``TransactionStateManager.complete``), so when ``commit_transaction()``
returns a read_committed consumer reads the records and the next transaction's
AddPartitionsToTxn finds the id complete (no CONCURRENT_TRANSACTIONS retry). An
EndTxn for the result already being written (a client's retry, or the first
request to a new coordinator that loaded the Prepare* state) waits the same way;
the other result gets CONCURRENT_TRANSACTIONS. A wait is bounded by
``end_wait_s``: past it the answer is CONCURRENT_TRANSACTIONS and the client
retries. A coordinator that loses the partition meanwhile answers NOT_COORDINATOR;
the client finds the new one, which finishes the markers from the log. The cost:
commit latency is one more round (the markers' WriteTxnMarkers, each waiting for
its partition's ISR) before the answer.

A transaction Ongoing past its timeout is fenced and aborted the same way as by
InitProducerId (``abort_timed_out``, every
``transaction.abort.timed.out.transaction.cleanup.interval.ms``). When a broker
becomes coordinator of a partition, the ids it loads in PrepareCommit /
PrepareAbort get their markers sent and are completed (``on_loaded``).

One writer per id: ``pending`` holds the ids with a state write in flight, and
every write happens from a state that no other request may change meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from coordinator.transaction.markers import MarkerChannel, TxnMarker
from coordinator.transaction.state_manager import TransactionStateManager
from coordinator.transaction.txn_state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition, \
    TxnMetadata, TxnState
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

MAX_EPOCH = 32767                         # int16


def epoch_exhausted(epoch: int) -> bool:
    """Kafka's isEpochExhausted: one bump left is kept for fencing."""
    return epoch >= MAX_EPOCH - 1


@dataclass(frozen=True)
class InitResult:
    error: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class TransactionCoordinator:
    def __init__(self, state: TransactionStateManager,
                 generate_producer_id: Callable[[], Awaitable[int]], *,
                 max_timeout_ms: int, clock: Callable[[], int],
                 markers: MarkerChannel | None = None,
                 await_markers: bool = False, end_wait_s: float = 15.0) -> None:
        self.state = state
        self.await_markers = await_markers
        self.end_wait_s = end_wait_s
        # id -> the task writing its markers then Complete* (-> NONE, or NOT_COORDINATOR
        # when the partition moved first); one per id in PrepareCommit / PrepareAbort
        self.completions: dict[str, asyncio.Task[int]] = {}
        self.generate_producer_id = generate_producer_id
        self.max_timeout_ms = max_timeout_ms
        self.clock = clock
        self.markers = markers
        self.pending: set[str] = set()   # ids with a state write in flight
        state.on_loaded = self.on_loaded
        # FindCoordinator creates __transaction_state once; concurrent finds see this
        # set and answer COORDINATOR_NOT_AVAILABLE instead of a second creation
        self.creating_topic = False

    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None = None) -> InitResult:
        """See the module docstring; ``expected`` = (producer id, epoch) or None."""
        if not transactional_id:
            return InitResult(ErrorCode.INVALID_REQUEST)
        if timeout_ms <= 0 or timeout_ms > self.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        status = self.state.status(transactional_id)
        if status is not None:
            return InitResult(status)
        if transactional_id in self.pending:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        self.pending.add(transactional_id)
        try:
            return await self._init(transactional_id, timeout_ms, expected)
        finally:
            self.pending.discard(transactional_id)

    async def _init(self, tid: str, timeout_ms: int,
                    expected: tuple[int, int] | None) -> InitResult:
        current = self.state.get(tid)
        if current is None:
            current = TxnMetadata(tid, await self.generate_producer_id(), NO_PRODUCER_EPOCH,
                                  timeout_ms, TxnState.EMPTY)
        if expected is not None and not _valid_expected(current, *expected):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if current.state is TxnState.ONGOING:
            error = await self._fence_and_abort(current)
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS if error == ErrorCode.NONE
                              else error)
        if current.state.is_preparing:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if current.state not in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                                 TxnState.COMPLETE_ABORT):
            return InitResult(ErrorCode.UNKNOWN_SERVER_ERROR)   # Dead / PrepareEpochFence
        now = self.clock()
        if epoch_exhausted(current.producer_epoch) and (
                expected is None or expected[1] == current.producer_epoch):
            # a new producer id replaces the exhausted one (prepareProducerIdRotation)
            nxt = current.transition(
                TxnState.EMPTY, now, last_producer_id=current.producer_id,
                last_producer_epoch=current.producer_epoch if expected is not None
                else NO_PRODUCER_EPOCH,
                producer_id=await self.generate_producer_id(), producer_epoch=0,
                txn_timeout_ms=timeout_ms, partitions=frozenset(), txn_start_timestamp=-1)
        else:
            bumped = _bump(current, None if expected is None else expected[1])
            if bumped is None:
                return InitResult(ErrorCode.PRODUCER_FENCED)
            epoch, last_epoch = bumped
            nxt = current.transition(TxnState.EMPTY, now, producer_epoch=epoch,
                                     last_producer_epoch=last_epoch, txn_timeout_ms=timeout_ms,
                                     partitions=frozenset(), txn_start_timestamp=-1)
        error = await self.state.put(nxt)
        if error != ErrorCode.NONE:
            return InitResult(error)
        return InitResult(ErrorCode.NONE, nxt.producer_id, nxt.producer_epoch)


    # -- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: Iterable[TopicPartition]) -> int:
        """Add ``partitions`` to the id's transaction (beginning one if none is open)."""
        error, meta = self._caller(transactional_id, producer_id, producer_epoch)
        if meta is None:
            return error
        if meta.state.is_preparing or meta.state is TxnState.PREPARE_EPOCH_FENCE:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        wanted = frozenset(partitions)
        if meta.state is TxnState.ONGOING and wanted <= meta.partitions:
            return ErrorCode.NONE
        if meta.state is TxnState.DEAD:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        now = self.clock()
        start = meta.txn_start_timestamp if meta.state is TxnState.ONGOING else now
        nxt = meta.transition(TxnState.ONGOING, now, partitions=meta.partitions | wanted,
                              txn_start_timestamp=start)
        return await self._put(nxt)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn v4+ VerifyOnly (KIP-890): whether each partition is in the
        producer's Ongoing transaction (INVALID_TXN_STATE when not); nothing written."""
        tps = list(partitions)
        error, meta = self._caller(transactional_id, producer_id, producer_epoch)
        if meta is None:
            return {tp: error for tp in tps}
        return {tp: ErrorCode.NONE if meta.state is TxnState.ONGOING and tp in meta.partitions
                else ErrorCode.INVALID_TXN_STATE for tp in tps}

    # -- EndTxn -------------------------------------------------------------------------

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int,
                      commit: bool) -> int:
        """Commit or abort the id's transaction (the tables in the module docstring)."""
        error, meta = self._caller(transactional_id, producer_id, producer_epoch)
        if meta is None:
            return error
        state = meta.state
        if state is TxnState.ONGOING:
            error = await self._prepare_end(meta, commit)
            if error != ErrorCode.NONE or not self.await_markers:
                return error
            return await self._completed(transactional_id)
        if state.is_preparing or state is TxnState.PREPARE_EPOCH_FENCE:
            if self.await_markers and state is (TxnState.PREPARE_COMMIT if commit
                                                else TxnState.PREPARE_ABORT):
                return await self._completed(transactional_id)
            return ErrorCode.CONCURRENT_TRANSACTIONS         # the markers are out
        if state is (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT):
            return ErrorCode.NONE
        return ErrorCode.INVALID_TXN_STATE

    async def _completed(self, tid: str) -> int:
        """Wait (``end_wait_s`` at most) for the id's markers and Complete* write:
        NONE once written, NOT_COORDINATOR when the partition moved first,
        CONCURRENT_TRANSACTIONS when still under way (the client retries)."""
        task = self.completions.get(tid)
        if task is None:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        done, _ = await asyncio.wait({task}, timeout=self.end_wait_s)
        if not done:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if task.cancelled() or task.exception() is not None:
            return ErrorCode.NOT_COORDINATOR
        return task.result()

    async def _prepare_end(self, meta: TxnMetadata, commit: bool, **changes: object) -> int:
        """Write PrepareCommit / PrepareAbort, then send the markers in the background."""
        prepared = meta.transition(TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
                                   self.clock(), **changes)
        error = await self._put(prepared)
        if error == ErrorCode.NONE:
            self._start_completion(prepared)
        return error

    def _start_completion(self, prepared: TxnMetadata) -> None:
        tid = prepared.transactional_id
        task = self.state.runtime.spawn(self._complete(prepared))
        self.completions[tid] = task

        def forget(t: asyncio.Task[int]) -> None:
            if self.completions.get(tid) is t:
                del self.completions[tid]
        task.add_done_callback(forget)

    async def _fence_and_abort(self, meta: TxnMetadata) -> int:
        """Kafka's prepareFenceProducerEpoch + abort: the open transaction is aborted
        under the next epoch, so the producer that opened it is fenced."""
        epoch = meta.producer_epoch if epoch_exhausted(meta.producer_epoch) \
            else meta.producer_epoch + 1
        return await self._prepare_end(meta, False, producer_epoch=epoch,
                                       last_producer_epoch=NO_PRODUCER_EPOCH)

    async def _complete(self, prepared: TxnMetadata) -> int:
        """Markers to every partition, then CompleteCommit / CompleteAbort -> NONE;
        NOT_COORDINATOR when the partition moves first (the next coordinator
        finishes from the log)."""
        tid = prepared.transactional_id
        p = self.state.partition_for(tid)
        coordinator_epoch = self.state.runtime.partitions.owned.get(p)
        if coordinator_epoch is None:
            return ErrorCode.NOT_COORDINATOR

        def owner() -> bool:
            return self.state.runtime.partitions.owned.get(p) == coordinator_epoch
        commit = prepared.state is TxnState.PREPARE_COMMIT
        if prepared.partitions:
            if self.markers is None:
                return ErrorCode.NOT_COORDINATOR
            marker = TxnMarker(prepared.producer_id, prepared.producer_epoch, commit,
                               coordinator_epoch, tuple(sorted(prepared.partitions)))
            if not await self.markers.write(marker, owner):
                log.info("markers of %r (producer %d): no longer its coordinator; the next "
                         "one finishes them", tid, prepared.producer_id)
                return ErrorCode.NOT_COORDINATOR
        if owner():
            current = self.state.get(tid)
            if current is None or current.state is not prepared.state \
                    or current.producer_epoch != prepared.producer_epoch:
                return ErrorCode.NONE                # someone else finished it
            done = current.transition(TxnState.COMPLETE_COMMIT if commit
                                      else TxnState.COMPLETE_ABORT, self.clock(),
                                      partitions=frozenset())
            # installed at once, its record written later or superseded by the id's
            # next state (TransactionStateManager.complete)
            error = self.state.complete(done)
            return ErrorCode.NONE if error == ErrorCode.NONE else ErrorCode.NOT_COORDINATOR
        return ErrorCode.NOT_COORDINATOR

    def on_loaded(self, metas: Iterable[TxnMetadata]) -> None:
        """A partition was loaded: finish the transactions it left in Prepare*."""
        for meta in metas:
            if meta.state.is_preparing:
                self._start_completion(meta)

    # -- periodic work -----------------------------------------------------------------

    async def abort_timed_out(self) -> int:
        """Fence and abort the Ongoing transactions past their timeout; how many."""
        aborted = 0
        for meta in self.state.timed_out(self.clock()):
            current = self.state.get(meta.transactional_id)
            if current is None or current.transactional_id in self.pending \
                    or not current.has_timed_out(self.clock()):
                continue
            log.info("aborting transaction of %r (producer %d, epoch %d): open for more than "
                     "%d ms", current.transactional_id, current.producer_id,
                     current.producer_epoch, current.txn_timeout_ms)
            if await self._fence_and_abort(current) == ErrorCode.NONE:
                aborted += 1
        return aborted

    async def expire_ids(self, expiration_ms: int) -> int:
        """Tombstone the finished ids idle for ``transactional.id.expiration.ms``."""
        expired = 0
        for meta in self.state.expirable(self.clock(), expiration_ms):
            if meta.transactional_id in self.pending:
                continue
            if await self._put(meta.transition(TxnState.DEAD, self.clock())) == ErrorCode.NONE:
                expired += 1
        return expired

    # -- helpers -----------------------------------------------------------------------

    def _caller(self, tid: str, producer_id: int, producer_epoch: int
                ) -> tuple[int, TxnMetadata | None]:
        """(error, None) when the caller may not act on ``tid`` now, else (NONE, state)."""
        if not tid:
            return ErrorCode.INVALID_REQUEST, None
        status = self.state.status(tid)
        if status is not None:
            return status, None
        meta = self.state.get(tid)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        if tid in self.pending:
            return ErrorCode.CONCURRENT_TRANSACTIONS, None
        return ErrorCode.NONE, meta

    async def _put(self, meta: TxnMetadata) -> int:
        """Write the id's next state with the id marked pending meanwhile (unless a
        caller, InitProducerId, already marked it for longer)."""
        tid = meta.transactional_id
        marked = tid not in self.pending
        self.pending.add(tid)
        try:
            return await self.state.put(meta)
        finally:
            if marked:
                self.pending.discard(tid)

    async def shutdown(self) -> None:
        """Resign every partition and cancel the loads and marker sending."""
        await self.state.shutdown()


def error_for_version(error: int, version: int, fenced_from: int) -> int:
    """PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for requests older than the version
    that may carry it (KIP-588: InitProducerId v4, AddPartitions/AddOffsets/EndTxn v2)."""
    if error == ErrorCode.PRODUCER_FENCED and version < fenced_from:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def _valid_expected(meta: TxnMetadata, producer_id: int, epoch: int) -> bool:
    """KIP-360's isValidProducerId (the epoch is checked by the bump)."""
    return (meta.producer_epoch == NO_PRODUCER_EPOCH or producer_id == meta.producer_id
            or (producer_id == meta.last_producer_id and epoch_exhausted(epoch)))


def _bump(meta: TxnMetadata, expected_epoch: int | None) -> tuple[int, int] | None:
    """Kafka's prepareIncrementProducerEpoch: -> (new epoch, last epoch), or None
    when the expected epoch is neither the current nor the previous one (fenced)."""
    if expected_epoch is None:
        return meta.producer_epoch + 1, NO_PRODUCER_EPOCH
    if meta.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == meta.producer_epoch:
        return meta.producer_epoch + 1, meta.producer_epoch
    if expected_epoch == meta.last_producer_epoch:
        return meta.producer_epoch, meta.last_producer_epoch   # a retried bump
    return None


__all__ = ["InitResult", "TransactionCoordinator", "epoch_exhausted", "error_for_version"]
