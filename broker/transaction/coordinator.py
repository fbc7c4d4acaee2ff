"""TransactionCoordinator: what the transactional APIs ask of a transactional id's
coordinator (Kafka's TransactionCoordinator). So far: InitProducerId.

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
   Ongoing -> Kafka bumps the epoch to fence the producer and aborts the open
   transaction first (PrepareEpochFence); that needs the marker channel, which
   is not here yet, so it answers CONCURRENT_TRANSACTIONS (no transaction can
   be Ongoing until AddPartitionsToTxn lands).
5. The new state is written to ``__transaction_state`` (acks=all) before the
   answer; a failed write answers the mapped error and changes nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from broker.transaction.state_manager import TransactionStateManager
from broker.transaction.txn_state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TxnMetadata, \
    TxnState
from protocol.errors import ErrorCode

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
                 max_timeout_ms: int, clock: Callable[[], int]) -> None:
        self.state = state
        self.generate_producer_id = generate_producer_id
        self.max_timeout_ms = max_timeout_ms
        self.clock = clock
        self.pending: set[str] = set()   # ids with a state write in flight
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
        if current.state.is_preparing or current.state is TxnState.ONGOING:
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


__all__ = ["InitResult", "TransactionCoordinator", "epoch_exhausted"]
