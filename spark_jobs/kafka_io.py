"""Blocking Kafka-protocol access for Spark's driver and executors.

Spark calls a Python data source synchronously (``partitions``, ``read``,
``latestOffset``, ``write``...), while our client (``client``) is asyncio.
``KafkaIO`` bridges the two: it owns one event loop running in a daemon
thread, and each public method submits a coroutine of
``spark_jobs.kafka_requests.KafkaRequests`` (the requests, their routing and
retries) to it and waits for the result. Connections (one per broker,
``BrokerPool``) live on that loop between calls, so a Python worker that runs
many Spark tasks keeps its sockets open (``shared_client``).

The loop thread also lets ``fetch_range`` overlap the network with decoding:
the Fetch for the next position is already on the wire while the caller turns
the previous response into rows.

What is here, all by (topic, partition):

* ``partitions(topics)`` / ``all_topics()``: from Metadata.
* ``list_offsets({tp: spec})``: ListOffsets with spec -2 earliest, -1 latest
  (high watermark, or the last stable offset under read_committed) or a
  timestamp in ms (the first offset whose timestamp is >= it; -1 when none).
* ``fetch(tp, offset)``: one Fetch at the configured isolation level. The
  response's high watermark (or last stable offset) bounds what a reader may
  take: the broker never returns records above it to a consumer.
* ``fetch_range(tp, start, end)``: fetched record sets covering [start, end),
  in order; deleted offsets follow ``failOnDataLoss`` (``DataLossError``);
  aborted transactions' batches dropped under read_committed.
* ``produce({tp: batch bytes})``: Produce with acks=all by default, retried on
  retriable errors after a metadata refresh.
* ``delete_records({tp: offset})``: DeleteRecords (tests and tools).

``ClientConfig``, the errors and ``data_loss`` live in ``kafka_requests`` and
are importable from here too (they are part of this module's API).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from client import BrokerPool, ClusterMetadata, KafkaAdmin
from protocol import records
from protocol.errors import ErrorCode
from spark_jobs.kafka_requests import (EARLIEST, LATEST, READ_COMMITTED, READ_UNCOMMITTED, TP,
                                       ClientConfig, DataLossError, FetchResult, KafkaIOError,
                                       KafkaRequests, TopicGone, data_loss)

__all__ = ["EARLIEST", "LATEST", "READ_COMMITTED", "READ_UNCOMMITTED", "TP", "ClientConfig",
           "DataLossError", "FetchResult", "KafkaIO", "KafkaIOError", "TopicGone", "data_loss",
           "shared_client"]

T = TypeVar("T")


class KafkaIO:
    """Blocking client over a private event loop thread; see the module docstring."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever,
                                        name="pybroker-kafka-io", daemon=True)
        self._thread.start()
        self._pool = BrokerPool(client_id=config.client_id, timeout=config.request_timeout_s,
                                security=config.client_security())
        self._requests = KafkaRequests(config, KafkaAdmin(config.bootstrap, pool=self._pool,
                                                          timeout=config.request_timeout_s))
        self._closed = False

    @property
    def cluster(self) -> ClusterMetadata | None:
        """The last metadata seen."""
        return self._requests.cluster

    # -- plumbing ------------------------------------------------------------------

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        limit = (timeout or self.config.request_timeout_s) * 3 + 5
        return fut.result(limit)

    @property
    def admin(self) -> KafkaAdmin:
        """The client's KafkaAdmin, for coroutines given to ``call`` (it lives on the
        loop thread: use it only there)."""
        return self._requests.admin

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop thread and wait for it (callers with a protocol of
        their own, e.g. the exactly-once sink's transactions)."""
        return self._run(coro, timeout)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._run(self._pool.close(), 5)
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> KafkaIO:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- metadata ------------------------------------------------------------------

    def all_topics(self) -> dict[str, list[int]]:
        """Every non-internal topic -> its partitions, sorted."""
        cluster = self._run(self._requests.metadata(None))
        return {name: sorted(t.partitions) for name, t in cluster.topics.items()
                if t.error == ErrorCode.NONE and not t.is_internal}

    def partitions(self, topics: list[str]) -> dict[str, list[int]]:
        """topic -> sorted partitions, for the topics that exist (others left out)."""
        if not topics:
            return {}
        cluster = self._run(self._requests.metadata(list(topics)))
        return {name: sorted(t.partitions) for name, t in cluster.topics.items()
                if t.error == ErrorCode.NONE and name in topics}

    # -- ListOffsets ---------------------------------------------------------------

    def list_offsets(self, specs: dict[TP, int]) -> dict[TP, int]:
        """tp -> offset for spec -2 (earliest), -1 (latest) or a timestamp (ms);
        a timestamp past every record gives -1. Raises TopicGone for a partition
        that does not exist."""
        return self._run(self._requests.list_offsets(specs)) if specs else {}

    def earliest(self, tps: list[TP]) -> dict[TP, int]:
        return self.list_offsets({tp: EARLIEST for tp in tps})

    def latest(self, tps: list[TP]) -> dict[TP, int]:
        return self.list_offsets({tp: LATEST for tp in tps})

    # -- Fetch ---------------------------------------------------------------------

    def fetch(self, topic: str, partition: int, offset: int) -> FetchResult:
        return self._run(self._requests.fetch(topic, partition, offset))

    def fetch_async(self, topic: str, partition: int, offset: int
                    ) -> Any:  # concurrent.futures.Future[FetchResult]
        return asyncio.run_coroutine_threadsafe(self._requests.fetch(topic, partition, offset),
                                                self._loop)

    def fetch_range(self, topic: str, partition: int, start: int, end: int, *,
                    fail_on_data_loss: bool = True,
                    timeout_s: float | None = None) -> Iterator[tuple[bytes, int]]:
        """(record set, position) pairs covering offsets [start, end) in order:
        take the records of ``buf`` at or after ``position`` and below ``end``.

        Offsets below the log start (deleted by DeleteRecords or retention), a
        range above the high watermark, or a deleted topic raise DataLossError
        when ``fail_on_data_loss``; otherwise they are logged and skipped. A
        range that makes no progress for ``timeout_s`` (default: the request
        timeout) is treated the same way. The next Fetch is sent before the
        current record set is handed out (overlapping network and decoding)."""
        pos = start
        limit = timeout_s or self.config.request_timeout_s
        stalled_since = time.monotonic()
        pending = self.fetch_async(topic, partition, pos) if pos < end else None
        while pending is not None:
            try:
                res: FetchResult = pending.result(limit * 3 + 5)
            except TopicGone as e:
                data_loss(fail_on_data_loss, f"{e}; cannot read offsets [{pos}, {end})")
                return
            pending = None
            if res.error == ErrorCode.OFFSET_OUT_OF_RANGE:
                pos = self._out_of_range(topic, partition, pos, end, fail_on_data_loss)
                if pos >= end:
                    return
                pending = self.fetch_async(topic, partition, pos)
                continue
            if res.error != ErrorCode.NONE:
                raise KafkaIOError(f"Fetch of {topic}-{partition} at {pos} failed: "
                                   f"{ErrorCode.from_code(res.error).name}")
            buf = _drop_aborted(res.records, res.aborted) if res.aborted else res.records
            nxt = _next_position(res.records, pos)
            if nxt > pos:
                stalled_since = time.monotonic()
                if nxt < end:
                    pending = self.fetch_async(topic, partition, nxt)
                yield buf, pos
                pos = nxt
                continue
            if res.high_watermark <= pos:
                data_loss(fail_on_data_loss,
                          f"{topic}-{partition}: offsets [{pos}, {end}) were expected but "
                          f"the partition now ends at {res.high_watermark}")
                return
            if time.monotonic() - stalled_since > limit:
                data_loss(fail_on_data_loss,
                          f"{topic}-{partition}: no records returned at offset {pos} "
                          f"(high watermark {res.high_watermark}) within {limit:g} s")
                return
            time.sleep(self.config.retry_backoff_s)
            pending = self.fetch_async(topic, partition, pos)

    def _out_of_range(self, topic: str, partition: int, pos: int, end: int,
                      fail: bool) -> int:
        """The position to go on from after OFFSET_OUT_OF_RANGE at ``pos``."""
        tp = (topic, partition)
        try:
            earliest = self.earliest([tp])[tp]
            latest = self.latest([tp])[tp]
        except TopicGone as e:
            data_loss(fail, f"{e}; cannot read offsets [{pos}, {end})")
            return end
        if pos < earliest:
            data_loss(fail, f"Cannot fetch offset {pos} of {topic}-{partition}: the "
                            f"earliest available offset is {earliest}, so offsets "
                            f"[{pos}, {min(earliest, end)}) were deleted")
            return earliest
        data_loss(fail, f"Cannot fetch offset {pos} of {topic}-{partition}: the "
                        f"partition ends at {latest}")
        return end

    # -- Produce -------------------------------------------------------------------

    def partition_counts(self, topics: list[str]) -> dict[str, int]:
        """topic -> partition count, asking the broker to auto-create unknown topics
        (as a producer's metadata request does; the broker decides)."""
        return self._run(self._requests.partition_counts(topics))

    def produce(self, batches: dict[TP, bytes], *, acks: int = -1) -> dict[TP, int]:
        """Send one batch per partition; -> tp -> base offset. Retriable errors
        are retried (after a metadata refresh) until the request timeout."""
        return self._run(self._requests.produce(batches, acks)) if batches else {}

    # -- DeleteRecords -------------------------------------------------------------

    def delete_records(self, offsets: dict[TP, int]) -> dict[TP, tuple[int, int]]:
        """Advance log start offsets; -> tp -> (error code, low watermark)."""
        return self._run(self._requests.delete_records(offsets))


# -- record-set helpers ------------------------------------------------------------------

def _next_position(buf: bytes, pos: int) -> int:
    """The offset after the last complete batch in ``buf`` (``pos`` if none).

    A fetch answer may end with a partial batch; it is fetched again next time.
    Control batches count: they occupy offsets and must be stepped over."""
    nxt = pos
    for _at, header in records.iter_batches(buf):
        nxt = max(nxt, header.next_offset)
    return nxt


def _drop_aborted(buf: bytes, aborted: list[tuple[int, int]]) -> bytes:
    """``buf`` without the batches of aborted transactions (read_committed).

    ``aborted`` holds (producer id, first offset) per aborted transaction that
    overlaps the fetch; a producer's transaction runs from its first offset to
    its abort marker (a control batch of that producer)."""
    pending = sorted(aborted, key=lambda a: a[1])
    open_aborts: set[int] = set()
    kept: list[bytes] = []
    for at, header in records.iter_batches(buf):
        while pending and pending[0][1] <= header.last_offset:
            open_aborts.add(pending.pop(0)[0])
        if header.is_control:
            open_aborts.discard(header.producer_id)
        elif header.is_transactional and header.producer_id in open_aborts:
            continue
        kept.append(buf[at:at + header.size])
    return b"".join(kept)


# -- one client per Python worker process --------------------------------------------------

_shared: dict[tuple[int, ClientConfig], KafkaIO] = {}
_shared_lock = threading.Lock()


def shared_client(config: ClientConfig) -> KafkaIO:
    """A KafkaIO for ``config`` kept for the life of this process (Spark reuses
    Python workers across tasks, so connections outlive one task). Keyed by pid:
    a forked worker never uses its parent's loop thread."""
    key = (os.getpid(), config)
    with _shared_lock:
        client = _shared.get(key)
        if client is None or client._closed:
            client = _shared[key] = KafkaIO(config)
        return client
