"""TransactionalProducer: our client's exactly-once producer (Kafka's
``TransactionManager`` with ``KafkaProducer``, reduced to what the Spark sink and
the tools need).

    producer = TransactionalProducer(admin, "my-txn-id", transaction_timeout_ms=60000)
    await producer.init_transactions()        # fences older producers of the id
    producer.begin_transaction()
    await producer.send({("out", 0): [(key, value, timestamp), ...]})
    await producer.send_offsets_to_transaction({("in", 0): 42}, "my-group")
    await producer.commit_transaction()       # or abort_transaction()

    # in another process: end a transaction left open, by its producer id and epoch
    await TransactionalProducer.resume(admin, "my-txn-id", pid, epoch).commit_transaction()

States (one writer: this object; calls must not overlap):

    UNINITIALIZED --init--> READY --begin--> IN_TRANSACTION --commit/abort--> READY
    IN_TRANSACTION --abortable error--> ABORTABLE --abort--> READY
    any --fenced / unrecoverable--> FATAL (every later call raises ProducerFenced or
                                          TransactionError)

What each call does on the wire:

- ``init_transactions``: FindCoordinator (key type 1) and InitProducerId; retried on
  the coordinator errors and CONCURRENT_TRANSACTIONS (the coordinator is aborting or
  completing the id's previous transaction; Kafka's client retries the same way).
- ``send``: AddPartitionsToTxn (v0-3) for partitions new to the transaction, then one
  transactional batch per partition (producer id, epoch, the partition's next
  sequence) to its leader through ``client.producer.send_batches``. A retried batch
  keeps its sequence, so the broker's duplicate check makes the retry safe;
  DUPLICATE_SEQUENCE_NUMBER therefore counts as written.
- ``send_offsets_to_transaction``: AddOffsetsToTxn to the transaction coordinator,
  then TxnOffsetCommit to the group's coordinator (generation / member as KIP-447).
- ``commit_transaction`` / ``abort_transaction``: EndTxn; a transaction that added
  nothing ends locally without a request, as Kafka's client does.

Errors: PRODUCER_FENCED, INVALID_PRODUCER_EPOCH and TRANSACTIONAL_ID_AUTHORIZATION_FAILED
make the producer FATAL and raise ``ProducerFenced`` (another producer owns the id now:
nothing more of this one may become visible). Other failures inside a transaction
(a partition that would not take its batch, a rejected offset commit) raise
``TransactionError(abortable=True)`` and leave the producer ABORTABLE: only
``abort_transaction`` is allowed. After an abort that followed a sequence error
(OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID) the epoch is bumped with
InitProducerId v3+ (KIP-360), which also restarts the sequences.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from client.admin import KafkaAdmin
from client.connection import KafkaConnection
from client.errors import KafkaConnectionError, ProducerFenced, TransactionError
from client.groups import GROUP_KEY, TRANSACTION_KEY, find_coordinator
from client.producer import send_batches
from client.txn_verbs import (add_offsets_to_txn, add_partitions_to_txn, end_txn,
                              init_producer_id, txn_offset_commit)
from client.verbs import TP
from protocol import records
from protocol.errors import ErrorCode

T = TypeVar("T")
Record = tuple[bytes | None, bytes | None, int] | tuple[bytes | None, bytes | None, int, Any]

FENCED = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH,
                    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})
# Answers after which the coordinator is looked up again before the retry.
COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
# Answers worth the same request again after a back-off.
RETRY_SAME = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                        ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.REQUEST_TIMED_OUT})
SEQUENCE_LOST = frozenset({ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                           ErrorCode.UNKNOWN_PRODUCER_ID})


class State(enum.Enum):
    UNINITIALIZED = "uninitialized"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    ABORTABLE = "abortable error"
    FATAL = "fatal error"


class TransactionalProducer:
    """One transactional id's producer; see the module docstring."""

    def __init__(self, admin: KafkaAdmin, transactional_id: str, *,
                 transaction_timeout_ms: int = 60000, request_timeout_ms: int = 30000,
                 deadline_s: float = 60.0, backoff: float = 0.05,
                 max_backoff: float = 1.0, codec: int = 0) -> None:
        if not transactional_id:
            raise ValueError("a transactional producer needs a non-empty transactional id")
        self.admin = admin
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self.deadline_s = deadline_s        # how long one call keeps retrying
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.codec = codec                      # batches' compression (protocol.compression)
        self.state = State.UNINITIALIZED
        self.producer_id = -1
        self.producer_epoch = -1
        self._sequences: dict[TP, int] = {}     # next base sequence per partition
        self._partitions: set[TP] = set()       # added to the current transaction
        self._offsets_added: set[str] = set()   # groups added to the current transaction
        self._bump_epoch = False                # KIP-360 bump due after the next abort
        self._resumed = False                   # a transaction begun elsewhere (resume)
        self._last_error: BaseException | None = None

    @classmethod
    def resume(cls, admin: KafkaAdmin, transactional_id: str, producer_id: int,
               producer_epoch: int, **options: Any) -> TransactionalProducer:
        """A producer for a transaction another process began and left open, named by
        its producer id and epoch (the Spark sink: each task writes its transaction,
        the driver ends them all once every task succeeded): IN_TRANSACTION, and only
        ``commit_transaction`` / ``abort_transaction`` are allowed (the other process's
        sequences are unknown here). EndTxn carries the id and epoch, which the
        coordinator checks: a transaction fenced or timed out meanwhile is answered
        PRODUCER_FENCED / INVALID_PRODUCER_EPOCH (raised as ProducerFenced)."""
        producer = cls(admin, transactional_id, **options)
        producer.producer_id, producer.producer_epoch = producer_id, producer_epoch
        producer.state = State.IN_TRANSACTION
        producer._resumed = True
        return producer

    # -- lifecycle ------------------------------------------------------------------

    async def init_transactions(self) -> None:
        """Get (or, after a sequence error, bump) the producer id and epoch; fences
        every older producer of the id and has its open transaction aborted."""
        if self.state not in (State.UNINITIALIZED, State.READY):
            self._refuse("init_transactions")
        bump = self.producer_id >= 0
        answer = await self._to_coordinator(
            lambda conn: init_producer_id(
                conn, self.transactional_id, transaction_timeout_ms=self.transaction_timeout_ms,
                producer_id=self.producer_id if bump else -1,
                producer_epoch=self.producer_epoch if bump else -1),
            lambda a: a.error)
        self._check_fenced(answer.error, "InitProducerId")
        if answer.error != ErrorCode.NONE:
            raise self._fatal(TransactionError(
                f"InitProducerId for {self.transactional_id!r}: "
                f"{ErrorCode.from_code(answer.error).name}", answer.error))
        self.producer_id, self.producer_epoch = answer.producer_id, answer.producer_epoch
        self._sequences.clear()
        self._bump_epoch = False
        self.state = State.READY

    def begin_transaction(self) -> None:
        if self.state is not State.READY:
            self._refuse("begin_transaction")
        self._partitions.clear()
        self._offsets_added.clear()
        self.state = State.IN_TRANSACTION

    async def commit_transaction(self) -> None:
        if self.state is not State.IN_TRANSACTION:
            self._refuse("commit_transaction")
        await self._end(commit=True)

    async def abort_transaction(self) -> None:
        if self.state not in (State.IN_TRANSACTION, State.ABORTABLE):
            self._refuse("abort_transaction")
        await self._end(commit=False)
        if self._bump_epoch:
            await self.init_transactions()

    # -- inside a transaction ---------------------------------------------------------

    async def send(self, batch_records: Mapping[TP, Sequence[Record]]) -> dict[TP, int]:
        """Write ``batch_records[tp]`` (key, value, timestamp[, headers]) to each
        partition as one transactional batch. -> the base offset per partition."""
        if self.state is not State.IN_TRANSACTION or self._resumed:
            self._refuse("send")
        wanted = {tp: recs for tp, recs in batch_records.items() if recs}
        await self._add_partitions([tp for tp in wanted if tp not in self._partitions])
        batches = {tp: records.build_batch(
            list(recs), producer_id=self.producer_id, producer_epoch=self.producer_epoch,
            base_sequence=self._sequences.get(tp, 0), transactional=True, codec=self.codec)
            for tp, recs in wanted.items()}
        results = await send_batches(self.admin, batches, acks=-1,
                                     timeout_ms=self.request_timeout_ms,
                                     retries=self._retries(), backoff=self.backoff,
                                     max_backoff=self.max_backoff,
                                     transactional_id=self.transactional_id)
        offsets: dict[TP, int] = {}
        failed: dict[TP, int] = {}
        for tp, result in results.items():
            if result.error in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                self._sequences[tp] = self._sequences.get(tp, 0) + len(wanted[tp])
                offsets[tp] = result.base_offset
            else:
                failed[tp] = result.error
        for error in failed.values():
            self._check_fenced(error, "Produce")
        if failed:
            if any(e in SEQUENCE_LOST for e in failed.values()):
                self._bump_epoch = True
            raise self._abortable(f"Produce failed for {_describe(failed)}", next(
                iter(failed.values())))
        return offsets

    async def send_offsets_to_transaction(self, offsets: Mapping[TP, int], group_id: str, *,
                                          generation_id: int = -1, member_id: str = "",
                                          group_instance_id: str | None = None) -> None:
        """Commit the consumer's ``offsets`` (next offsets to read) for ``group_id``
        with the transaction: visible to OffsetFetch only once it commits."""
        if self.state is not State.IN_TRANSACTION or self._resumed:
            self._refuse("send_offsets_to_transaction")
        if group_id not in self._offsets_added:
            error = await self._to_coordinator(
                lambda conn: add_offsets_to_txn(conn, self.transactional_id, self.producer_id,
                                                self.producer_epoch, group_id),
                lambda e: e)
            self._check_fenced(error, "AddOffsetsToTxn")
            if error != ErrorCode.NONE:
                raise self._abortable(f"AddOffsetsToTxn for group {group_id!r}: "
                                      f"{ErrorCode.from_code(error).name}", error)
            self._offsets_added.add(group_id)
        answers = await self._to_coordinator(
            lambda conn: txn_offset_commit(
                conn, self.transactional_id, group_id, self.producer_id, self.producer_epoch,
                offsets, generation_id=generation_id, member_id=member_id,
                group_instance_id=group_instance_id),
            _worst, key_type=GROUP_KEY, key=group_id)
        failed = {tp: e for tp, e in answers.items() if e != ErrorCode.NONE}
        for error in failed.values():
            self._check_fenced(error, "TxnOffsetCommit")
        if failed:
            raise self._abortable(f"TxnOffsetCommit for group {group_id!r} failed for "
                                  f"{_describe(failed)}", next(iter(failed.values())))

    # -- internals ----------------------------------------------------------------------

    async def _add_partitions(self, new: list[TP]) -> None:
        if not new:
            return
        answers = await self._to_coordinator(
            lambda conn: add_partitions_to_txn(conn, self.transactional_id, self.producer_id,
                                               self.producer_epoch, new),
            _worst)
        failed = {tp: e for tp, e in answers.items() if e != ErrorCode.NONE}
        for error in failed.values():
            self._check_fenced(error, "AddPartitionsToTxn")
        if failed:
            raise self._abortable(f"AddPartitionsToTxn failed for {_describe(failed)}",
                                  next(iter(failed.values())))
        self._partitions.update(new)

    async def _end(self, *, commit: bool) -> None:
        if not self._partitions and not self._offsets_added and not self._resumed:
            self.state = State.READY        # nothing was added: nothing to end remotely
            return
        error = await self._to_coordinator(
            lambda conn: end_txn(conn, self.transactional_id, self.producer_id,
                                 self.producer_epoch, commit),
            lambda e: e)
        self._check_fenced(error, "EndTxn")
        if error != ErrorCode.NONE:
            verb = "commit" if commit else "abort"
            if commit:
                raise self._abortable(f"EndTxn ({verb}): {ErrorCode.from_code(error).name}",
                                      error)
            raise self._fatal(TransactionError(
                f"EndTxn ({verb}): {ErrorCode.from_code(error).name}", error))
        self.state = State.READY
        self._resumed = False

    async def _to_coordinator(self, call: Callable[[KafkaConnection], Awaitable[T]],
                              error_of: Callable[[T], int], *, key_type: int = TRANSACTION_KEY,
                              key: str | None = None) -> T:
        """``call`` on the coordinator of ``key`` (the transactional id by default),
        looked up again after NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE or a lost
        connection, retried with back-off on the retriable coordinator answers until
        ``deadline_s``. -> the last answer (its error may be anything not retried)."""
        key = self.transactional_id if key is None else key
        deadline = time.monotonic() + self.deadline_s
        attempt = 0
        while True:
            answer: T | None = None
            try:
                conn = await self._coordinator(key, key_type)
                if conn is not None:
                    answer = await call(conn)
                    error = error_of(answer)
                    if error not in COORDINATOR_MOVED and error not in RETRY_SAME:
                        return answer
            except KafkaConnectionError as e:
                self._last_error = e
            if time.monotonic() >= deadline:
                if answer is not None:
                    return answer
                raise TransactionError(f"no coordinator answered for {key!r} within "
                                       f"{self.deadline_s:g} s ({self._last_error})",
                                       ErrorCode.COORDINATOR_NOT_AVAILABLE)
            await asyncio.sleep(min(self.backoff * 2 ** attempt, self.max_backoff))
            attempt += 1

    async def _coordinator(self, key: str, key_type: int) -> KafkaConnection | None:
        found = await find_coordinator(await self.admin.any_connection(), key,
                                       key_type=key_type)
        if found.error != ErrorCode.NONE:
            return None
        return await self.admin.pool.get(found.host, found.port)

    def _retries(self) -> int:
        """send_batches' retry count for about ``deadline_s`` of doubling back-offs."""
        total, n = 0.0, 0
        while total < self.deadline_s:
            total += min(self.backoff * 2 ** n, self.max_backoff)
            n += 1
        return n

    def _check_fenced(self, error: int, verb: str) -> None:
        if error in FENCED:
            raise self._fatal(ProducerFenced(
                f"{verb} for transactional id {self.transactional_id!r} (producer id "
                f"{self.producer_id}, epoch {self.producer_epoch}): "
                f"{ErrorCode.from_code(error).name}", error))

    def _fatal(self, exc: TransactionError) -> TransactionError:
        self.state = State.FATAL
        self._last_error = exc
        return exc

    def _abortable(self, message: str, error: int) -> TransactionError:
        exc = TransactionError(message, error, abortable=True)
        self.state = State.ABORTABLE
        self._last_error = exc
        return exc

    def _refuse(self, call: str) -> None:
        if self._resumed and self.state is State.IN_TRANSACTION:
            raise TransactionError(f"{call} is not allowed on a resumed transaction (only "
                                   "commit_transaction / abort_transaction)",
                                   ErrorCode.INVALID_TXN_STATE)
        if self.state is State.FATAL and isinstance(self._last_error, TransactionError):
            raise type(self._last_error)(
                f"{call}: the producer failed fatally before: {self._last_error}",
                self._last_error.error)
        raise TransactionError(f"{call} is not allowed in state {self.state.value!r}",
                               ErrorCode.INVALID_TXN_STATE,
                               abortable=self.state is State.ABORTABLE)


def _worst(answers: Mapping[TP, int]) -> int:
    """A per-partition answer's error for the retry decision: a coordinator error
    any partition carries (they all do when it is one), else NONE."""
    for error in answers.values():
        if error in COORDINATOR_MOVED or error in RETRY_SAME:
            return error
    return ErrorCode.NONE


def _describe(failed: Mapping[TP, int]) -> str:
    return ", ".join(f"{t}-{p}: {ErrorCode.from_code(e).name}"
                     for (t, p), e in sorted(failed.items()))
