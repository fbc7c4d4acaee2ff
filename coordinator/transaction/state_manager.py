"""TransactionStateManager: which transactional ids this broker coordinates, and
their state, kept in and loaded from ``__transaction_state`` (Kafka's
TransactionStateManager).

Theory of operation:

1. A transactional id lives in partition ``partition_for(id)`` =
   abs(javaHashCode(id)) % partitions (the group coordinator's formula); this
   broker coordinates it while it leads that partition.
2. ``on_become_leader(p, epoch)`` loads the partition in a task: every record
   is replayed (the newest value per id wins, a tombstone removes it), then
   ``on_loaded`` gets the ids (the coordinator finishes those left in
   PrepareCommit / PrepareAbort). Until the load is installed, ``status`` answers COORDINATOR_LOAD_IN_PROGRESS for its
   ids; NOT_COORDINATOR when we do not lead it (``status`` asks the log who leads
   first, so a missed LeaderAndIsr or StopReplica heals itself). ``on_resign`` drops the
   partition's ids. Epochs fence: a notification older than the newest seen is
   ignored, and a write that finishes after the partition moved is not installed.
3. ``put(meta)`` writes the id's new state (acks=all) and installs it only once
   written, so the cache never holds what the log might not (Complete* aside: 4).
   Log errors map to what the client should do, as Kafka's appendTransactionToLog
   does.
4. ``complete(meta)`` installs CompleteCommit / CompleteAbort at once and writes
   its record only ``complete_write_delay_s`` later, and only if the id's next
   state (the next transaction's Ongoing, an epoch bump, a tombstone) was not
   written first: that record supersedes it, since every record holds the id's
   whole state. A producer committing back to back thus writes two records a
   transaction (Ongoing, Prepare*), not three, and its followers fetch one
   append less. Safe because a log whose last record for an id is Prepare* is
   finished by whoever loads it (the coordinator sends the markers again, which
   end nothing they did not end, and completes), and no later transaction of the
   id can have written data meanwhile: its partitions are added by an acks=all
   write, which would be the newer record. Invariant: an id has at most one
   record waiting (``_unlogged``), it is the id's installed state, and it is
   written only while that still holds (same partition epoch, same object).
5. ``timed_out`` lists Ongoing transactions past their timeout (the coordinator
   aborts them); ``expirable`` the finished ids idle past
   ``transactional.id.expiration.ms`` (the coordinator writes their tombstones).

It stands on the same runtime as the group coordinator (``self.runtime``, a
coordinator.runtime.CoordinatorRuntime: the OffsetsLog seam -- append a batch, read
a partition in chunks, our leader epoch --, partition ownership, the key hash, the
tasks), so tests drive it with an in-memory log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from coordinator.runtime.runtime import CoordinatorRuntime
from coordinator.runtime.log_seam import OffsetsLog, TxnEnd, TxnRecord
from coordinator.transaction.txn_log import read_key, read_value, transaction_key, \
    transaction_value
from protocol.topic_names import TRANSACTION_STATE_TOPIC
from coordinator.transaction.txn_state import TxnMetadata, TxnState
from protocol.errors import ErrorCode
from protocol.primitives import DecodeError

log = logging.getLogger(__name__)

# How long a CompleteCommit / CompleteAbort waits for the id's next state before
# its own record is written (theory of operation, 4): longer than the gap between
# back-to-back transactions, short enough that an idle id's log is whole at once.
COMPLETE_WRITE_DELAY_S = 0.5

# appendTransactionToLog: the partition's error -> what the client is told
_WRITE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def write_error(code: int) -> int:
    """The error a transactional client gets for a failed ``__transaction_state`` write."""
    if code == ErrorCode.NONE:
        return ErrorCode.NONE
    return _WRITE_ERRORS.get(ErrorCode.from_code(code), ErrorCode.UNKNOWN_SERVER_ERROR)


@dataclass(frozen=True)
class _Unlogged:
    """An installed Complete* state whose record is not written yet."""

    partition: int
    epoch: int                  # the partition's coordinator epoch when installed
    meta: TxnMetadata
    due: float                  # loop time to write it at


class TransactionStateManager:
    def __init__(self, txn_log: OffsetsLog, num_partitions: Callable[[], int], *,
                 clock: Callable[[], int], write_timeout_ms: int = 5000,
                 complete_write_delay_s: float = COMPLETE_WRITE_DELAY_S) -> None:
        self.runtime = CoordinatorRuntime(TRANSACTION_STATE_TOPIC, txn_log, num_partitions, clock)
        self.write_timeout_ms = write_timeout_ms
        self.complete_write_delay_s = complete_write_delay_s
        self.ids: dict[int, dict[str, TxnMetadata]] = {}   # partition -> id -> state
        # id -> its Complete* state waiting to be written, in the order installed
        # (so by due time: the delay is the same for all)
        self._unlogged: dict[str, _Unlogged] = {}
        self._flusher: asyncio.Task[None] | None = None
        # ids whose waiting record is being appended -> done once that append returned:
        # the id's next write waits for it, so the log has the two in that order
        self._writing: dict[str, asyncio.Future[None]] = {}
        # called with a partition's ids once loaded (the coordinator finishes Prepare*)
        self.on_loaded: Callable[[Iterable[TxnMetadata]], None] | None = None

    # -- ownership --------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return self.runtime.partition_for(transactional_id)

    def status(self, transactional_id: str) -> int | None:
        """COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, or None when we serve the id (a
        missed LeaderAndIsr is caught up with first: ``runtime.reconcile``, as the group
        coordinator does)."""
        p = self.partition_for(transactional_id)
        self.runtime.reconcile(p, self.on_become_leader, self.on_resign)
        return self.runtime.partitions.status(p)

    def on_become_leader(self, partition: int, leader_epoch: int) -> None:
        self.runtime.become_leader(partition, leader_epoch, self._load)

    def on_resign(self, partition: int, leader_epoch: int | None) -> None:
        if not self.runtime.partitions.resign(partition, leader_epoch):
            return
        dropped = self.ids.pop(partition, {})
        for tid in [t for t, u in self._unlogged.items() if u.partition == partition]:
            del self._unlogged[tid]          # the next coordinator finishes from the log
        if dropped:
            log.info("resigned as transaction coordinator of %s-%d: %d transactional ids",
                     TRANSACTION_STATE_TOPIC, partition, len(dropped))

    async def _load(self, partition: int, epoch: int) -> None:
        loaded: dict[str, TxnMetadata] = {}
        try:
            for chunk in self.runtime.log.read_chunks(partition) or ():
                for entry in chunk:
                    if isinstance(entry, (TxnRecord, TxnEnd)):
                        continue             # transactional entries: none are written here
                    key, value = entry
                    try:
                        tid = read_key(key)
                        meta = read_value(tid, value)
                    except DecodeError as e:
                        log.warning("%s-%d: unreadable record skipped: %s",
                                    TRANSACTION_STATE_TOPIC, partition, e)
                        continue
                    if meta is None:
                        loaded.pop(tid, None)
                    else:
                        loaded[tid] = meta
                await asyncio.sleep(0)           # stay responsive during a long load
                if partition not in self.runtime.partitions.loading:
                    return                       # resigned meanwhile
        except Exception:
            log.exception("error loading %s-%d", TRANSACTION_STATE_TOPIC, partition)
            self.runtime.partitions.resign(partition, None)
            return
        if not self.runtime.partitions.loaded(partition, epoch):
            return
        self.ids[partition] = loaded
        log.info("loaded %s-%d (epoch %d): %d transactional ids", TRANSACTION_STATE_TOPIC,
                 partition, epoch, len(loaded))
        if self.on_loaded is not None:
            self.on_loaded(list(loaded.values()))

    # -- state ----------------------------------------------------------------------

    def get(self, transactional_id: str) -> TxnMetadata | None:
        """The id's state (None: unknown here; check ``status`` first)."""
        return self.ids.get(self.partition_for(transactional_id), {}).get(transactional_id)

    async def put(self, meta: TxnMetadata) -> int:
        """Write ``meta`` as the id's state (acks=all); installed once written. -> the
        error the client gets (NONE, NOT_COORDINATOR when the partition moved
        meanwhile, or ``write_error`` of the log's answer). A Complete* record still
        waiting (``complete``) is superseded by this one: not written, unless this
        write fails."""
        tid = meta.transactional_id
        waiting = self._unlogged.pop(tid, None)
        if (writing := self._writing.get(tid)) is not None:
            await asyncio.shield(writing)    # its Complete* record first, then this one
        error = await self._write(tid, None if meta.state is TxnState.DEAD
                                  else transaction_value(meta), meta)
        if error != ErrorCode.NONE and waiting is not None and tid not in self._unlogged \
                and self.ids.get(waiting.partition, {}).get(tid) is waiting.meta:
            self._wait_to_write(tid, waiting.partition, waiting.epoch, waiting.meta)
        return error

    async def _write(self, tid: str, value: bytes | None, meta: TxnMetadata) -> int:
        p = self.partition_for(tid)
        status = self.status(tid)
        if status is not None:
            return status
        epoch = self.runtime.partitions.owned[p]
        code = await self.runtime.log.append(p, [(transaction_key(tid), value)], acks=-1,
                                             timeout_ms=self.write_timeout_ms,
                                             timestamp=self.runtime.clock())
        if code != ErrorCode.NONE:
            return write_error(code)
        if self.runtime.partitions.owned.get(p) != epoch:   # resigned or re-elected while writing
            return ErrorCode.NOT_COORDINATOR
        if value is None:
            self.ids[p].pop(tid, None)
        else:
            self.ids[p][tid] = meta
        return ErrorCode.NONE

    def complete(self, meta: TxnMetadata) -> int:
        """Install CompleteCommit / CompleteAbort now, its record written later
        (theory of operation, 4). -> NONE, or the ``status`` error when we no
        longer coordinate the id."""
        tid = meta.transactional_id
        status = self.status(tid)
        if status is not None:
            return status
        p = self.partition_for(tid)
        self.ids[p][tid] = meta
        self._wait_to_write(tid, p, self.runtime.partitions.owned[p], meta)
        return ErrorCode.NONE

    def _wait_to_write(self, tid: str, partition: int, epoch: int, meta: TxnMetadata) -> None:
        """Queue ``meta``'s record, due ``complete_write_delay_s`` from now."""
        self._unlogged.pop(tid, None)        # re-inserted last: the dict stays in due order
        self._unlogged[tid] = _Unlogged(partition, epoch, meta, asyncio.get_running_loop().time()
                                        + self.complete_write_delay_s)
        if self._flusher is None or self._flusher.done():
            self._flusher = self.runtime.spawn(self._write_unlogged())

    async def _write_unlogged(self) -> None:
        """Write the Complete* records that came due, one append per partition,
        acks=1 (losing one loses nothing: theory of operation, 4), until none wait."""
        loop = asyncio.get_running_loop()
        while self._unlogged:
            first = next(iter(self._unlogged.values()))
            if first.due > loop.time():
                await asyncio.sleep(first.due - loop.time())
                continue
            now = loop.time()
            due: dict[int, list[_Unlogged]] = {}
            for tid in list(self._unlogged):
                u = self._unlogged[tid]
                if u.due > now:
                    break
                del self._unlogged[tid]
                if self.runtime.partitions.owned.get(u.partition) == u.epoch \
                        and self.ids.get(u.partition, {}).get(tid) is u.meta:
                    due.setdefault(u.partition, []).append(u)
            for p, entries in due.items():
                await self._append_unlogged(p, entries)

    async def _append_unlogged(self, p: int, entries: list[_Unlogged]) -> None:
        tids = [u.meta.transactional_id for u in entries]
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._writing.update(dict.fromkeys(tids, done))
        try:
            code = await self.runtime.log.append(
                p, [(transaction_key(u.meta.transactional_id), transaction_value(u.meta))
                    for u in entries],
                acks=1, timeout_ms=self.write_timeout_ms, timestamp=self.runtime.clock())
        finally:
            for tid in tids:
                if self._writing.get(tid) is done:
                    del self._writing[tid]
            done.set_result(None)
        if code != ErrorCode.NONE:
            log.info("%s-%d: %d CompleteCommit / CompleteAbort records not written (%s); "
                     "whoever loads the partition finishes those ids",
                     TRANSACTION_STATE_TOPIC, p, len(entries), ErrorCode.from_code(code).name)

    def timed_out(self, now_ms: int) -> list[TxnMetadata]:
        """Ongoing transactions past their timeout, on partitions we serve."""
        return [m for p in self.runtime.partitions.owned for m in self.ids.get(p, {}).values()
                if m.has_timed_out(now_ms)]

    def expirable(self, now_ms: int, expiration_ms: int) -> list[TxnMetadata]:
        """Finished ids not touched for ``expiration_ms`` (Kafka: Empty, CompleteCommit
        or CompleteAbort, by the last update time)."""
        return [m for p in self.runtime.partitions.owned for m in self.ids.get(p, {}).values()
                if m.state.is_complete and now_ms - m.txn_last_update_timestamp >= expiration_ms]

    # -- tasks ----------------------------------------------------------------------

    async def shutdown(self) -> None:
        """Write the waiting Complete* records (a second at most: they are only a
        shortcut for the next coordinator), then resign every partition."""
        if self._unlogged:
            now = asyncio.get_running_loop().time()
            self._unlogged = {tid: _Unlogged(u.partition, u.epoch, u.meta, now)
                              for tid, u in self._unlogged.items()}
            try:
                await asyncio.wait_for(self._write_unlogged(), 1.0)
            except Exception:                # a time-out or a log that refused
                log.info("%d CompleteCommit / CompleteAbort records not written at shutdown",
                         len(self._unlogged))
        for p in self.runtime.partitions.all():
            self.on_resign(p, None)
        await self.runtime.cancel_tasks()


__all__ = ["TRANSACTION_STATE_TOPIC", "TransactionStateManager", "write_error"]
