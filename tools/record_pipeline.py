"""RecordPipeline: records in, acknowledgements out, with several Produce
requests in flight, for ``producer-perf-test`` and ``verifiable-producer``
(the console producer sends one group of lines at a time and does not need it).

Theory of operation:

* ``add(key, value, timestamp, token)`` puts a record in its partition's open
  batch: keyed records by murmur2, unkeyed ones to the sticky partition
  (``client.partitioner``), which moves on each time a batch closes (KIP-480).
* A batch closes when its records reach ``batch_size`` bytes (counted as key +
  value + a 12-byte per-record estimate). Closed batches wait in the next
  *round*; a round is dispatched when a second batch for a partition already
  in it closes, when it holds a batch for every partition, or on
  ``dispatch_open()`` / ``flush()`` (the caller's linger: the tools call it
  before they sleep for throttling, and at the end).
* A dispatched round is one ``client.producer.send_batches`` call (one Produce
  per leader, retried ``retries`` times) running as a task; at most
  ``max_in_flight`` rounds run at once, so ``add`` waits when the pipe is full.
* When a round's answers come, ``on_done(token, partition, offset, error,
  message)`` is called for every record in it, in order: offset = the batch's
  base offset + the record's index (-1 for acks=0 or on error).

Records of different rounds may be appended out of order after a retry, as
with Kafka's non-idempotent producer with more than one request in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from client import KafkaAdmin
from client.errors import KafkaConnectionError, NoCommonVersion
from client.partitioner import StickyPartitioner, partition_for_key
from client.producer import send_batches
from protocol.errors import ErrorCode
from protocol.records import build_batch

RECORD_OVERHEAD = 12
Done = Callable[[Any, int, int, int, str | None], None]   # token, partition, offset, error, msg
Pending = tuple[bytes | None, bytes | None, int, Any]     # key, value, timestamp, token


class RecordPipeline:
    """See the module docstring."""

    def __init__(self, admin: KafkaAdmin, topic: str, partitions: int, on_done: Done, *,
                 acks: int = -1, codec: int = 0, batch_size: int = 16384,
                 max_in_flight: int = 5, retries: int = 2, timeout_ms: int = 30000) -> None:
        self.admin = admin
        self.topic = topic
        self.partitions = partitions
        self.on_done = on_done
        self.acks = acks
        self.codec = codec
        self.batch_size = max(1, batch_size)
        self.retries = retries
        self.timeout_ms = timeout_ms
        self.partitioner = StickyPartitioner()
        self._open: dict[int, list[Pending]] = {}
        self._open_bytes: dict[int, int] = {}
        self._round: dict[int, list[Pending]] = {}
        self._slots = asyncio.Semaphore(max(1, max_in_flight))
        self._tasks: set[asyncio.Task[None]] = set()

    async def add(self, key: bytes | None, value: bytes | None, timestamp: int,
                  token: Any) -> None:
        if key is not None:
            p = partition_for_key(key, self.partitions)
        else:
            p = self.partitioner.partition(self.topic, None, self.partitions)
        self._open.setdefault(p, []).append((key, value, timestamp, token))
        size = self._open_bytes.get(p, 0) + len(key or b"") + len(value or b"") + RECORD_OVERHEAD
        self._open_bytes[p] = size
        if size >= self.batch_size:
            await self._close(p)

    async def _close(self, p: int) -> None:
        """Move partition p's open batch into the round (dispatching first if the
        round already has one for p; afterwards if it has one per partition)."""
        batch = self._open.pop(p, [])
        self._open_bytes.pop(p, None)
        if not batch:
            return
        if all(rec[0] is None for rec in batch):
            self.partitioner.new_batch(self.topic, self.partitions)
        if p in self._round:
            await self._dispatch()
        self._round[p] = batch
        if len(self._round) >= self.partitions:
            await self._dispatch()

    async def dispatch_open(self) -> None:
        """Send every open batch now (the linger is over)."""
        for p in list(self._open):
            await self._close(p)
        await self._dispatch()

    async def flush(self) -> None:
        """Send everything and wait for every answer."""
        await self.dispatch_open()
        while self._tasks:
            await asyncio.gather(*list(self._tasks))

    async def _dispatch(self) -> None:
        if not self._round:
            return
        sent, self._round = self._round, {}
        await self._slots.acquire()
        task = asyncio.create_task(self._send(sent))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, sent: dict[int, list[Pending]]) -> None:
        try:
            batches = {(self.topic, p): build_batch([(k, v, ts) for k, v, ts, _ in recs],
                                                    codec=self.codec)
                       for p, recs in sent.items()}
            try:
                results = await send_batches(self.admin, batches, acks=self.acks,
                                             timeout_ms=self.timeout_ms, retries=self.retries)
            except (KafkaConnectionError, NoCommonVersion) as e:
                for p, recs in sent.items():
                    for rec in recs:
                        self.on_done(rec[3], p, -1, int(ErrorCode.NETWORK_EXCEPTION), str(e))
                return
            for p, recs in sent.items():
                r = results[(self.topic, p)]
                ok = r.error == ErrorCode.NONE
                for i, rec in enumerate(recs):
                    offset = r.base_offset + i if ok and r.base_offset >= 0 else -1
                    self.on_done(rec[3], p, offset, r.error, r.message)
        finally:
            self._slots.release()
