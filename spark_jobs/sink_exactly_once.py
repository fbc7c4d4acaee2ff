"""The ``pybroker`` sink's exactly-once mode (option ``exactlyOnce=true``): each
Spark task writes its rows of a micro-batch in one Kafka transaction, and records
the batch id in the same transaction, so that a re-run of the batch writes nothing
twice. Spark's own Kafka sink is at-least-once only.

Per task (``write_exactly_once``), in a streaming query:

1. The transactional id is ``<prefix><query id>-<task partition id>``: the prefix is
   ``kafka.transactional.id.prefix`` (default ``pybroker-sink-``), the query id is
   the one Spark keeps in the checkpoint (the ``sql.streaming.queryId`` local
   property), so a query restarted from its checkpoint gets the same ids, and a
   re-run of a batch has the same task partitions (the batch's offsets come from
   the offset log). The batch id is the ``streaming.sql.batchId`` local property.
2. ``init_transactions`` fences any earlier attempt of the same task (a zombie
   executor, a killed driver's tasks) and has its open transaction aborted.
3. The batch marker: the group named like the transactional id holds, on partition
   0 of the marker topic (the ``topic`` option, else the first row's topic), the
   offset ``last batch id written + 1``, committed inside the transactions
   (TxnOffsetCommit). Read with ``require_stable`` (waiting out
   UNSTABLE_OFFSET_COMMIT): a marker past this batch means the batch was written
   before — the task writes nothing.
4. Otherwise: begin, the rows sent in batches per partition, the marker sent with
   ``send_offsets_to_transaction`` -- and the transaction left open: the task
   returns it (transactional id, producer id, epoch: ``OpenTransaction``) in its
   commit message.
5. The driver's commit, which Spark calls only once every task of the batch has
   succeeded, ends every task's transaction with EndTxn(commit), all at once
   (``end_transactions``, through ``TransactionalProducer.resume``); Spark's abort
   ends them with EndTxn(abort). Rows and marker become visible to read_committed
   consumers together or not at all.

Why the driver commits (a two-phase commit, as Flink's Kafka sink does): a task
cannot tell a cut input from its end. PySpark's Python workers run in a process
group of their own (pyspark/daemon.py), so when the executor's JVM dies (a kill -9
of the query) a worker can live on for a moment, and its row iterator can end as if
the partition were done. Seen in a test run: a task held mid-batch committed 110 of
its 150 rows (11 of the 10-row input batches) with its marker, 150 ms after the
query was killed; the re-run skipped the batch, the other 40 rows were lost. A
transaction the driver never commits is aborted by the next attempt's
``init_transactions`` or by the coordinator after ``kafka.transaction.timeout.ms``
(which must therefore cover a whole batch, from a task's first row to the
driver's commit; a transaction timed out before the commit fails the batch, which
Spark then re-runs).

A batch write (``df.write``) has no batch id: with ``exactlyOnce=true`` each task
attempt's rows are still one transaction (a failed attempt leaves nothing visible),
under a transactional id made of the write's own random id and the task partition,
committed by the driver as above.

Read the output with ``isolation.level=read_committed``: read_uncommitted readers
see aborted attempts' records too.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from client.errors import TransactionError
from client.groups import GROUP_KEY, find_coordinator, offset_fetch
from client.transactional import TransactionalProducer
from protocol.errors import ErrorCode
from spark_jobs.kafka_io import KafkaIO
from spark_jobs.kafka_requests import TP

QUERY_ID_PROPERTY = "sql.streaming.queryId"        # Spark's StreamExecution keys
BATCH_ID_PROPERTY = "streaming.sql.batchId"
DEFAULT_PREFIX = "pybroker-sink-"
UNSTABLE_WAIT_S = 60.0

log = logging.getLogger("pybroker.spark.sink")


@dataclass(frozen=True)
class OpenTransaction:
    """A task's transaction, written and left open for the driver to end."""
    transactional_id: str
    producer_id: int
    producer_epoch: int


def task_identity(write_id: str) -> tuple[str, int | None, int]:
    """(query or write id, batch id or None, task partition id) of the running task."""
    from pyspark import TaskContext
    ctx = TaskContext.get()
    if ctx is None:
        raise RuntimeError("the exactly-once sink runs inside Spark tasks only")
    query = ctx.getLocalProperty(QUERY_ID_PROPERTY)
    batch = ctx.getLocalProperty(BATCH_ID_PROPERTY)
    if query and batch is not None:
        return query, int(batch), ctx.partitionId()
    return write_id, None, ctx.partitionId()


def write_exactly_once(sender: Any, rows: Iterator[Any], prefix: str, write_id: str,
                       transaction_timeout_ms: int) -> tuple[int, OpenTransaction | None]:
    """Send ``rows`` in one transaction (see the module docstring) through ``sender``
    (a ``source_write.RowSender``: routing, batch sizes, its KafkaIO) and leave it
    open. -> (rows written, the open transaction for the driver to end); (0, None)
    when there were no rows or the batch had been written before."""
    owner, batch_id, partition = task_identity(write_id)
    txn_id = f"{prefix}{owner}-{partition}"
    first = next(rows, None)
    if first is None:
        return 0, None
    marker_topic = sender.opts.topic or sender.route(first)[0][0]
    marker: TP = (marker_topic, 0)
    io = sender.io
    producer = TransactionalProducer(io.admin, txn_id,
                                     transaction_timeout_ms=transaction_timeout_ms,
                                     codec=sender.opts.codec)
    io.call(producer.init_transactions())
    if batch_id is not None:
        done = io.call(_written_up_to(producer, txn_id, marker))
        if done > batch_id:
            return 0, None
    producer.begin_transaction()
    pending: dict[TP, list[tuple[bytes | None, bytes | None, int, list[Any]]]] = {}
    pending_bytes = written = 0
    try:
        for row in _chain(first, rows):
            tp, key, value, headers, size = sender.route(row)
            pending.setdefault(tp, []).append((key, value, int(time.time() * 1000), headers))
            pending_bytes += size
            written += 1
            if pending_bytes >= sender.opts.batch_bytes:
                io.call(producer.send(pending))
                pending, pending_bytes = {}, 0
        if pending:
            io.call(producer.send(pending))
        if batch_id is not None:
            io.call(producer.send_offsets_to_transaction({marker: batch_id + 1}, txn_id))
    except TransactionError as e:
        if e.abortable:
            io.call(producer.abort_transaction())
        raise
    return written, OpenTransaction(txn_id, producer.producer_id, producer.producer_epoch)


def end_transactions(io: KafkaIO, transactions: Iterable[OpenTransaction], *, commit: bool,
                     transaction_timeout_ms: int) -> None:
    """On the driver: EndTxn(commit or abort) for each task's open transaction,
    through ``io``, all at once (one EndTxn round for the batch, however many tasks).
    A commit that fails raises once every EndTxn has been answered (the batch fails
    and Spark re-runs it: a task whose commit went through finds its marker and
    writes nothing, the others write again and their ``init_transactions`` abort what
    is left open); a failed abort is only logged (the next attempt or the timeout
    aborts it anyway)."""
    txns = list(transactions)

    async def end(txn: OpenTransaction) -> None:
        producer = TransactionalProducer.resume(io.admin, txn.transactional_id,
                                                txn.producer_id, txn.producer_epoch,
                                                transaction_timeout_ms=transaction_timeout_ms)
        if commit:
            await producer.commit_transaction()
            return
        try:
            await producer.abort_transaction()
        except TransactionError as e:
            log.warning("aborting %s (producer id %d, epoch %d) failed: %s; the next "
                        "attempt or the transaction timeout aborts it", txn.transactional_id,
                        txn.producer_id, txn.producer_epoch, e)

    async def end_all() -> list[BaseException | None]:
        return await asyncio.gather(*(end(t) for t in txns), return_exceptions=True)

    failed = [e for e in io.call(end_all()) if e is not None]
    if failed:
        raise failed[0]


async def _written_up_to(producer: TransactionalProducer, group: str, marker: TP) -> int:
    """The marker's committed offset (last batch written + 1; 0 when none), read
    stable: a transaction of an earlier attempt still completing is waited out."""
    admin = producer.admin
    deadline = time.monotonic() + UNSTABLE_WAIT_S
    while True:
        found = await find_coordinator(await admin.any_connection(), group, key_type=GROUP_KEY)
        if found.error == ErrorCode.NONE:
            conn = await admin.pool.get(found.host, found.port)
            got = await offset_fetch(conn, group, [marker], require_stable=True)
            answer = got.partitions.get(marker)
            error = got.error or (answer.error if answer else ErrorCode.NONE)
            if error == ErrorCode.NONE:
                return max(answer.offset, 0) if answer else 0
            if not ErrorCode.from_code(error).retriable and \
                    error != ErrorCode.UNSTABLE_OFFSET_COMMIT:
                raise TransactionError(f"OffsetFetch of the sink's batch marker for {group!r}: "
                                       f"{ErrorCode.from_code(error).name}", error)
        if time.monotonic() > deadline:
            raise TransactionError(f"the sink's batch marker for {group!r} stayed unreadable "
                                   f"for {UNSTABLE_WAIT_S:g} s", ErrorCode.REQUEST_TIMED_OUT)
        await asyncio.sleep(0.1)


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def new_write_id() -> str:
    """A batch write's own id (no query id exists), fixed when the writer is made."""
    return uuid.uuid4().hex[:12]
