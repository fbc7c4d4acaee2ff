"""Blocking Kafka-protocol helpers for Spark's driver and executors.

Spark calls a Python data source synchronously (``partitions``, ``read``,
``latestOffset``, ``write``...), while the broker's own client
(``client``) is asyncio. ``KafkaIO`` bridges
the two: it owns one event loop running in a daemon thread, and each public
method submits a coroutine to it and waits for the result. Connections (one
per broker, ``BrokerPool``) live on that loop between calls, so a Python
worker that runs many Spark tasks keeps its sockets open (``shared_client``).

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
  in order; deleted offsets follow ``failOnDataLoss`` (``DataLossError``).
* ``produce({tp: batch bytes})``: Produce with acks=all by default, retried on
  retriable errors after a metadata refresh.
* ``delete_records({tp: offset})``: DeleteRecords (tests and tools).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from client import KafkaConnection, KafkaConnectionError
from client import BrokerPool, ClusterMetadata, KafkaAdmin
from protocol import records
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.spec import api

log = logging.getLogger("spark_jobs.kafka_io")

T = TypeVar("T")
TP = tuple[str, int]

EARLIEST = -2
LATEST = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
FETCH_MAX_VERSION = 12      # v13+ names topics by id; names keep requests simple
METADATA_RETRIES = 10
# Errors after which the partition's leader may have moved: refresh and retry.
REFRESH_ERRORS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.OFFSET_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


class KafkaIOError(RuntimeError):
    """A request failed for good (non-retriable error, or retries exhausted)."""


class DataLossError(KafkaIOError):
    """Offsets a query needs are gone (deleted, aged out, or their topic deleted)."""


class TopicGone(KafkaIOError):
    """The topic or partition does not exist (any more)."""


@dataclass(frozen=True)
class ClientConfig:
    """The ``kafka.*`` options that mean something to our client."""

    bootstrap: str
    client_id: str = "pybroker-spark"
    request_timeout_s: float = 30.0
    fetch_max_bytes: int = 50 * 1024 * 1024
    partition_max_bytes: int = 4 * 1024 * 1024
    isolation: int = READ_UNCOMMITTED
    retry_backoff_s: float = 0.1

    @classmethod
    def from_kafka_options(cls, options: dict[str, str]) -> ClientConfig:
        """From Spark-style options: ``kafka.bootstrap.servers`` and friends
        (keys compared case-insensitively, the ``kafka.`` prefix stripped)."""
        kafka = {k[6:].lower(): v for k, v in options.items() if k.lower().startswith("kafka.")}
        servers = kafka.get("bootstrap.servers")
        if not servers:
            raise ValueError("Option 'kafka.bootstrap.servers' must be specified for "
                             "configuring Kafka consumer")
        iso = kafka.get("isolation.level", "read_uncommitted").lower()
        if iso not in ("read_uncommitted", "read_committed"):
            raise ValueError(f"kafka.isolation.level must be read_uncommitted or "
                             f"read_committed, not {iso!r}")
        return cls(
            bootstrap=servers,
            client_id=kafka.get("client.id", cls.client_id),
            request_timeout_s=int(kafka.get("request.timeout.ms", "30000")) / 1000,
            fetch_max_bytes=int(kafka.get("fetch.max.bytes", str(cls.fetch_max_bytes))),
            partition_max_bytes=int(kafka.get("max.partition.fetch.bytes",
                                              str(cls.partition_max_bytes))),
            isolation=READ_COMMITTED if iso == "read_committed" else READ_UNCOMMITTED,
            retry_backoff_s=int(kafka.get("retry.backoff.ms", "100")) / 1000)


@dataclass
class FetchResult:
    error: int
    high_watermark: int            # HW, or the last stable offset under read_committed
    log_start_offset: int
    records: bytes
    aborted: list[tuple[int, int]] = field(default_factory=list)  # (producer id, first offset)


class KafkaIO:
    """Blocking client over a private event loop thread; see the module docstring."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever,
                                        name="pybroker-kafka-io", daemon=True)
        self._thread.start()
        self._pool = BrokerPool(client_id=config.client_id, timeout=config.request_timeout_s)
        self._admin = KafkaAdmin(config.bootstrap, pool=self._pool,
                                 timeout=config.request_timeout_s)
        self.cluster: ClusterMetadata | None = None
        self._closed = False

    # -- plumbing ------------------------------------------------------------------

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        limit = (timeout or self.config.request_timeout_s) * 3 + 5
        return fut.result(limit)

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

    async def _metadata(self, topics: list[str] | None, auto_create: bool = False
                        ) -> ClusterMetadata:
        self.cluster = await self._admin.metadata(topics, allow_auto_create=auto_create)
        return self.cluster

    def all_topics(self) -> dict[str, list[int]]:
        """Every non-internal topic -> its partitions, sorted."""
        cluster = self._run(self._metadata(None))
        return {name: sorted(t.partitions) for name, t in cluster.topics.items()
                if t.error == ErrorCode.NONE and not t.is_internal}

    def partitions(self, topics: list[str]) -> dict[str, list[int]]:
        """topic -> sorted partitions, for the topics that exist (others left out)."""
        if not topics:
            return {}
        cluster = self._run(self._metadata(list(topics)))
        return {name: sorted(t.partitions) for name, t in cluster.topics.items()
                if t.error == ErrorCode.NONE and name in topics}

    async def _leader_conn(self, topic: str, partition: int, refresh: bool
                           ) -> KafkaConnection:
        cluster = self.cluster
        if refresh or cluster is None or cluster.leader(topic, partition) is None:
            cluster = await self._metadata([topic])
        t = cluster.topics.get(topic)
        if t is None or t.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or (
                t.error == ErrorCode.NONE and partition not in t.partitions):
            raise TopicGone(f"topic-partition {topic}-{partition} does not exist")
        leader = cluster.leader(topic, partition)
        if leader is None:
            raise KafkaConnectionError(f"{topic}-{partition} has no leader")
        return await self._pool.get(leader.host, leader.port)

    async def _by_leader(self, tps: list[TP], refresh: bool
                         ) -> dict[KafkaConnection, list[TP]]:
        out: dict[KafkaConnection, list[TP]] = {}
        for tp in tps:
            conn = await self._leader_conn(tp[0], tp[1], refresh)
            refresh = False  # one refresh per round is enough
            out.setdefault(conn, []).append(tp)
        return out

    # -- ListOffsets ---------------------------------------------------------------

    def list_offsets(self, specs: dict[TP, int]) -> dict[TP, int]:
        """tp -> offset for spec -2 (earliest), -1 (latest) or a timestamp (ms);
        a timestamp past every record gives -1. Raises TopicGone for a partition
        that does not exist."""
        return self._run(self._list_offsets(specs)) if specs else {}

    def earliest(self, tps: list[TP]) -> dict[TP, int]:
        return self.list_offsets({tp: EARLIEST for tp in tps})

    def latest(self, tps: list[TP]) -> dict[TP, int]:
        return self.list_offsets({tp: LATEST for tp in tps})

    async def _list_offsets(self, specs: dict[TP, int]) -> dict[TP, int]:
        result: dict[TP, int] = {}
        todo = dict(specs)
        deadline = time.monotonic() + self.config.request_timeout_s
        refresh = False
        last = "no attempt"
        while todo:
            try:
                groups = await self._by_leader(sorted(todo), refresh)
                for conn, tps in groups.items():
                    for tp, (err, offset) in (await self._list_offsets_on(conn, tps, todo)).items():
                        if err == ErrorCode.NONE:
                            result[tp] = offset
                            del todo[tp]
                        elif err in REFRESH_ERRORS:
                            last = f"{tp[0]}-{tp[1]}: {ErrorCode.from_code(err).name}"
                        else:
                            raise KafkaIOError(f"ListOffsets for {tp[0]}-{tp[1]} failed: "
                                               f"{ErrorCode.from_code(err).name}")
            except KafkaConnectionError as e:
                last = str(e)
            if todo:
                if time.monotonic() > deadline:
                    raise KafkaIOError(f"ListOffsets did not succeed within "
                                       f"{self.config.request_timeout_s:g} s: {last}")
                refresh = True
                await asyncio.sleep(self.config.retry_backoff_s)
        return result

    async def _list_offsets_on(self, conn: KafkaConnection, tps: list[TP],
                               specs: dict[TP, int]) -> dict[TP, tuple[int, int]]:
        spec = api(ApiKey.LIST_OFFSETS).request
        by_topic: dict[str, list[Any]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(spec.structs["ListOffsetsPartition"].new(
                partition_index=p, timestamp=specs[(t, p)]))
        body = spec.new(replica_id=-1, isolation_level=self.config.isolation, topics=[
            spec.structs["ListOffsetsTopic"].new(name=t, partitions=ps)
            for t, ps in by_topic.items()])
        version = conn.version_for(ApiKey.LIST_OFFSETS)
        if version < 1:
            raise KafkaIOError("the broker lacks ListOffsets v1+")
        resp = await conn.request(ApiKey.LIST_OFFSETS, body, version)
        assert resp is not None
        return {(t.name, p.partition_index): (p.error_code, p.offset)
                for t in resp.topics for p in t.partitions}

    # -- Fetch ---------------------------------------------------------------------

    def fetch(self, topic: str, partition: int, offset: int) -> FetchResult:
        return self._run(self._fetch(topic, partition, offset))

    def fetch_async(self, topic: str, partition: int, offset: int
                    ) -> Any:  # concurrent.futures.Future[FetchResult]
        return asyncio.run_coroutine_threadsafe(self._fetch(topic, partition, offset),
                                                self._loop)

    async def _fetch(self, topic: str, partition: int, offset: int) -> FetchResult:
        """One Fetch; retriable leader errors are retried here, other errors returned."""
        deadline = time.monotonic() + self.config.request_timeout_s
        refresh = False
        while True:
            try:
                conn = await self._leader_conn(topic, partition, refresh)
                res = await self._fetch_on(conn, topic, partition, offset)
                if res.error not in REFRESH_ERRORS:
                    return res
                last = ErrorCode.from_code(res.error).name
            except KafkaConnectionError as e:
                last = str(e)
            if time.monotonic() > deadline:
                raise KafkaIOError(f"Fetch of {topic}-{partition} at {offset} did not "
                                   f"succeed within {self.config.request_timeout_s:g} s: {last}")
            refresh = True
            await asyncio.sleep(self.config.retry_backoff_s)

    async def _fetch_on(self, conn: KafkaConnection, topic: str, partition: int,
                        offset: int) -> FetchResult:
        spec = api(ApiKey.FETCH).request
        version = conn.version_for(ApiKey.FETCH, FETCH_MAX_VERSION)
        if version < 4:
            raise KafkaIOError("the broker lacks Fetch v4+ (record batches v2)")
        fp = spec.structs["FetchPartition"].new(
            partition=partition, fetch_offset=offset,
            partition_max_bytes=self.config.partition_max_bytes)
        # max_wait 0: a range below the high watermark is always there to read.
        body = spec.new(replica_id=-1, max_wait_ms=0, min_bytes=0,
                        max_bytes=self.config.fetch_max_bytes,
                        isolation_level=self.config.isolation,
                        topics=[spec.structs["FetchTopic"].new(topic=topic, partitions=[fp])])
        resp = await conn.request(ApiKey.FETCH, body, version)
        assert resp is not None
        if getattr(resp, "error_code", 0):
            return FetchResult(resp.error_code, -1, -1, b"")
        for t in resp.responses:
            for p in t.partitions:
                if p.partition_index != partition:
                    continue
                bound = p.high_watermark
                if self.config.isolation == READ_COMMITTED and p.last_stable_offset >= 0:
                    bound = p.last_stable_offset
                aborted = [(a.producer_id, a.first_offset) for a in p.aborted_transactions or ()]
                return FetchResult(p.error_code, bound, p.log_start_offset,
                                   bytes(p.records or b""), aborted)
        return FetchResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, b"")

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
        async def run() -> dict[str, int]:
            for attempt in range(METADATA_RETRIES):
                cluster = await self._metadata(list(topics), auto_create=True)
                counts = {n: len(t.partitions) for n, t in cluster.topics.items()
                          if t.error == ErrorCode.NONE and t.partitions}
                if all(t in counts for t in topics):
                    return counts
                await asyncio.sleep(self.config.retry_backoff_s * (attempt + 1))
            missing = [t for t in topics if t not in counts]
            raise TopicGone(f"topics {missing} do not exist (and were not auto-created)")
        return self._run(run())

    def produce(self, batches: dict[TP, bytes], *, acks: int = -1) -> dict[TP, int]:
        """Send one batch per partition; -> tp -> base offset. Retriable errors
        are retried (after a metadata refresh) until the request timeout."""
        return self._run(self._produce(batches, acks)) if batches else {}

    async def _produce(self, batches: dict[TP, bytes], acks: int) -> dict[TP, int]:
        todo = dict(batches)
        done: dict[TP, int] = {}
        deadline = time.monotonic() + self.config.request_timeout_s
        refresh = False
        last = "no attempt"
        while todo:
            try:
                for conn, tps in (await self._by_leader(sorted(todo), refresh)).items():
                    for tp, (err, base, msg) in (await self._produce_on(conn, tps, todo,
                                                                         acks)).items():
                        if err == ErrorCode.NONE:
                            done[tp] = base
                            del todo[tp]
                        elif err in REFRESH_ERRORS:
                            last = f"{tp[0]}-{tp[1]}: {ErrorCode.from_code(err).name}"
                        else:
                            raise KafkaIOError(f"Produce to {tp[0]}-{tp[1]} failed: "
                                               f"{ErrorCode.from_code(err).name} {msg or ''}")
            except (KafkaConnectionError, TopicGone) as e:
                last = str(e)
            if todo:
                if time.monotonic() > deadline:
                    raise KafkaIOError(f"Produce did not succeed within "
                                       f"{self.config.request_timeout_s:g} s: {last}")
                refresh = True
                await asyncio.sleep(self.config.retry_backoff_s)
        return done

    async def _produce_on(self, conn: KafkaConnection, tps: list[TP], batches: dict[TP, bytes],
                          acks: int) -> dict[TP, tuple[int, int, str | None]]:
        spec = api(ApiKey.PRODUCE).request
        by_topic: dict[str, list[Any]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(spec.structs["PartitionProduceData"].new(
                index=p, records=batches[(t, p)]))
        body = spec.new(transactional_id=None, acks=acks,
                        timeout_ms=int(self.config.request_timeout_s * 1000),
                        topic_data=[spec.structs["TopicProduceData"].new(name=t, partition_data=ps)
                                    for t, ps in by_topic.items()])
        version = conn.version_for(ApiKey.PRODUCE)
        if version < 3:
            raise KafkaIOError("the broker lacks Produce v3+ (record batches v2)")
        resp = await conn.request(ApiKey.PRODUCE, body, version, expect_response=acks != 0)
        if resp is None:
            return {tp: (0, -1, None) for tp in tps}
        return {(t.name, p.index): (p.error_code, p.base_offset,
                                    getattr(p, "error_message", None))
                for t in resp.responses for p in t.partition_responses}

    # -- DeleteRecords -------------------------------------------------------------

    def delete_records(self, offsets: dict[TP, int]) -> dict[TP, tuple[int, int]]:
        """Advance log start offsets; -> tp -> (error code, low watermark)."""
        async def run() -> dict[TP, tuple[int, int]]:
            out: dict[TP, tuple[int, int]] = {}
            spec = api(ApiKey.DELETE_RECORDS).request
            for conn, tps in (await self._by_leader(sorted(offsets), True)).items():
                by_topic: dict[str, list[Any]] = {}
                for t, p in tps:
                    by_topic.setdefault(t, []).append(spec.structs["DeleteRecordsPartition"].new(
                        partition_index=p, offset=offsets[(t, p)]))
                body = spec.new(timeout_ms=int(self.config.request_timeout_s * 1000), topics=[
                    spec.structs["DeleteRecordsTopic"].new(name=t, partitions=ps)
                    for t, ps in by_topic.items()])
                resp = await conn.request(ApiKey.DELETE_RECORDS, body)
                assert resp is not None
                for t in resp.topics:
                    for p in t.partitions:
                        out[(t.name, p.partition_index)] = (p.error_code, p.low_watermark)
            return out
        return self._run(run())


def data_loss(fail: bool, message: str) -> None:
    """Spark's reportDataLoss: raise DataLossError (with the instruction Spark
    gives) when ``fail`` (failOnDataLoss), otherwise log a warning."""
    if fail:
        raise DataLossError(
            message + ". Some data may have been lost because they are not available in "
            "Kafka any more; either the data was aged out by Kafka or the topic may have "
            "been deleted before all the data in the topic was processed. If you want "
            "your streaming query to continue on such cases, set the source option "
            '"failOnDataLoss" to "false".')
    log.warning("%s. Some data may have been lost; skipping it (failOnDataLoss=false)", message)


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
