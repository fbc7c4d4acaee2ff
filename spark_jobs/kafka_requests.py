"""The Spark source's and sink's Kafka requests, asyncio side: routing and retries.

``KafkaRequests`` runs on ``spark_jobs.kafka_io.KafkaIO``'s event loop; the
requests themselves are ``client.verbs`` (ListOffsets, Fetch, Produce,
DeleteRecords) and metadata and leader connections come from
``client.KafkaAdmin``. What this module adds is the source's policy, all by
(topic, partition):

* Routing: partitions are grouped by leader from the cached metadata, which is
  refreshed when a leader is unknown and before every retry. A topic or
  partition missing from fresh metadata is ``TopicGone``.
* Retries with a deadline: an error in ``REFRESH_ERRORS`` (the leader may have
  moved, or is not ready) or a lost connection is retried after
  ``retry_backoff_s`` until ``request_timeout_s`` has passed, then
  ``KafkaIOError`` names the last error. Any other error is final at once
  (``fetch`` returns it: OFFSET_OUT_OF_RANGE is the caller's to handle).
* The options of ours that mean something to a Kafka client (``ClientConfig``,
  from Spark's ``kafka.*`` options) and the errors the source raises
  (``KafkaIOError``, ``DataLossError``, ``TopicGone``; ``data_loss`` is Spark's
  reportDataLoss).
* Security: ``kafka.security.protocol``, ``kafka.ssl.*`` and ``kafka.sasl.*``
  (plus librdkafka's ``kafka.enable.ssl.certificate.verification``) are kept in
  ``ClientConfig.security`` as plain (key, value) pairs without the prefix, so the
  config stays picklable and hashable for the executors; ``client_security()``
  makes the ``client.security.ClientSecurity`` where the connections are opened.
  ``AuthenticationFailed`` (TLS or SASL refused) is not retried.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from client import ClusterMetadata, KafkaAdmin, KafkaConnection, KafkaConnectionError
from client import verbs
from client.errors import AuthenticationFailed, NoCommonVersion
from client.security import ClientSecurity
from protocol.errors import ErrorCode

log = logging.getLogger("spark_jobs.kafka_io")

TP = tuple[str, int]

EARLIEST = verbs.EARLIEST_TIMESTAMP    # -2
LATEST = verbs.LATEST_TIMESTAMP        # -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
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
    # Kafka client keys ("kafka." stripped) and values; not in repr: passwords
    security: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def client_security(self) -> ClientSecurity:
        """The TLS/SASL settings (PLAINTEXT when none); ValueError on a bad one."""
        return ClientSecurity.from_config(dict(self.security))

    @classmethod
    def from_kafka_options(cls, options: Mapping[str, str]) -> ClientConfig:
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
        security = security_options(options)
        try:
            ClientSecurity.from_config(dict(security))   # fail on the driver, not in tasks
        except ValueError as e:
            raise ValueError(f"Kafka security options (kafka.*): {e}") from None
        return cls(
            bootstrap=servers,
            client_id=kafka.get("client.id", cls.client_id),
            request_timeout_s=int(kafka.get("request.timeout.ms", "30000")) / 1000,
            fetch_max_bytes=int(kafka.get("fetch.max.bytes", str(cls.fetch_max_bytes))),
            partition_max_bytes=int(kafka.get("max.partition.fetch.bytes",
                                              str(cls.partition_max_bytes))),
            isolation=READ_COMMITTED if iso == "read_committed" else READ_UNCOMMITTED,
            retry_backoff_s=int(kafka.get("retry.backoff.ms", "100")) / 1000,
            security=security)


SECURITY_PREFIXES = ("security.protocol", "ssl.", "sasl.", "enable.ssl.certificate.verification")


def security_options(options: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The ``kafka.security.protocol``, ``kafka.ssl.*`` and ``kafka.sasl.*`` options
    as sorted (Kafka key, value) pairs, the prefix stripped and the key lower-cased
    (Spark's options are case-insensitive; Kafka's security keys are lower case)."""
    out = {}
    for key, value in options.items():
        low = key.lower()
        if low.startswith("kafka.") and low[6:].startswith(SECURITY_PREFIXES):
            out[low[6:]] = value
    return tuple(sorted(out.items()))


@dataclass
class FetchResult:
    error: int
    high_watermark: int            # HW, or the last stable offset under read_committed
    log_start_offset: int
    records: bytes
    aborted: list[tuple[int, int]] = field(default_factory=list)  # (producer id, first offset)


class KafkaRequests:
    """The source's requests with routing and deadline-bound retries; see the module
    docstring. Every method is a coroutine for one event loop (``KafkaIO``'s)."""

    def __init__(self, config: ClientConfig, admin: KafkaAdmin) -> None:
        self.config = config
        self.admin = admin

    @property
    def cluster(self) -> ClusterMetadata | None:
        return self.admin.cluster

    def _deadline(self) -> float:
        return time.monotonic() + self.config.request_timeout_s

    def _give_up(self, what: str, last: str) -> KafkaIOError:
        return KafkaIOError(f"{what} did not succeed within "
                            f"{self.config.request_timeout_s:g} s: {last}")

    # -- metadata and routing ------------------------------------------------------

    async def metadata(self, topics: list[str] | None, auto_create: bool = False
                       ) -> ClusterMetadata:
        return await self.admin.metadata(topics, allow_auto_create=auto_create)

    async def leader(self, topic: str, partition: int, refresh: bool) -> KafkaConnection:
        """The partition leader's connection; TopicGone when the (fresh) metadata lacks
        the partition, KafkaConnectionError when it has no leader."""
        cluster = self.admin.cluster
        if refresh or cluster is None or cluster.leader(topic, partition) is None:
            cluster = await self.metadata([topic])
        t = cluster.topics.get(topic)
        if t is None or t.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or (
                t.error == ErrorCode.NONE and partition not in t.partitions):
            raise TopicGone(f"topic-partition {topic}-{partition} does not exist")
        if cluster.leader(topic, partition) is None:
            raise KafkaConnectionError(f"{topic}-{partition} has no leader")
        return await self.admin.leader_connection(topic, partition)

    async def by_leader(self, tps: list[TP], refresh: bool) -> dict[KafkaConnection, list[TP]]:
        out: dict[KafkaConnection, list[TP]] = {}
        for tp in tps:
            conn = await self.leader(tp[0], tp[1], refresh)
            refresh = False  # one refresh per round is enough
            out.setdefault(conn, []).append(tp)
        return out

    async def partition_counts(self, topics: list[str]) -> dict[str, int]:
        """topic -> partition count, asking the broker to auto-create unknown topics
        (as a producer's metadata request does; the broker decides)."""
        counts: dict[str, int] = {}
        for attempt in range(METADATA_RETRIES):
            cluster = await self.metadata(list(topics), auto_create=True)
            counts = {n: len(t.partitions) for n, t in cluster.topics.items()
                      if t.error == ErrorCode.NONE and t.partitions}
            if all(t in counts for t in topics):
                return counts
            await asyncio.sleep(self.config.retry_backoff_s * (attempt + 1))
        missing = [t for t in topics if t not in counts]
        raise TopicGone(f"topics {missing} do not exist (and were not auto-created)")

    # -- ListOffsets ---------------------------------------------------------------

    async def list_offsets(self, specs: dict[TP, int]) -> dict[TP, int]:
        """tp -> offset for spec EARLIEST, LATEST or a timestamp (ms; -1 past every record)."""
        answers = await self._at_leaders(
            "ListOffsets", specs,
            lambda conn, tps: self._list_offsets_on(conn, tps, specs), (KafkaConnectionError,),
            lambda tp, a: f"ListOffsets for {tp} failed: {verbs.error_name(a.error)}")
        return {tp: a.offset for tp, a in answers.items()}

    async def _at_leaders(self, what: str, todo: dict[TP, Any],
                          send: Callable[[KafkaConnection, list[TP]], Awaitable[dict[TP, Any]]],
                          retry_on: tuple[type[Exception], ...],
                          failure: Callable[[str, Any], str]) -> dict[TP, Any]:
        """``send`` each leader its pending partitions until every one answers NONE.
        A leader error (REFRESH_ERRORS) or a ``retry_on`` exception refreshes the
        metadata and retries after the back-off, until the request deadline; any other
        partition error raises KafkaIOError with ``failure("<topic>-<p>", answer)``.
        -> tp -> its answer (a verbs result with ``.error``)."""
        pending = set(todo)
        done: dict[TP, Any] = {}
        deadline = self._deadline()
        refresh = False
        last = "no attempt"
        while pending:
            try:
                for conn, tps in (await self.by_leader(sorted(pending), refresh)).items():
                    for tp, answer in (await send(conn, tps)).items():
                        if answer.error == ErrorCode.NONE:
                            done[tp] = answer
                            pending.discard(tp)
                        elif answer.error in REFRESH_ERRORS:
                            last = f"{tp[0]}-{tp[1]}: {verbs.error_name(answer.error)}"
                        else:
                            raise KafkaIOError(failure(f"{tp[0]}-{tp[1]}", answer))
            except AuthenticationFailed:
                raise
            except retry_on as e:
                last = str(e)
            if pending:
                if time.monotonic() > deadline:
                    raise self._give_up(what, last)
                refresh = True
                await asyncio.sleep(self.config.retry_backoff_s)
        return done

    async def _list_offsets_on(self, conn: KafkaConnection, tps: list[TP],
                               specs: dict[TP, int]) -> dict[TP, verbs.ListedOffset]:
        try:
            return await verbs.list_offsets(conn, {tp: specs[tp] for tp in tps},
                                            isolation_level=self.config.isolation,
                                            min_version=1)
        except NoCommonVersion:
            raise KafkaIOError("the broker lacks ListOffsets v1+") from None

    # -- Fetch ---------------------------------------------------------------------

    async def fetch(self, topic: str, partition: int, offset: int) -> FetchResult:
        """One Fetch; retriable leader errors are retried here, other errors returned."""
        deadline = self._deadline()
        refresh = False
        while True:
            try:
                conn = await self.leader(topic, partition, refresh)
                res = await self._fetch_on(conn, topic, partition, offset)
                if res.error not in REFRESH_ERRORS:
                    return res
                last = verbs.error_name(res.error)
            except AuthenticationFailed:
                raise
            except KafkaConnectionError as e:
                last = str(e)
            if time.monotonic() > deadline:
                raise self._give_up(f"Fetch of {topic}-{partition} at {offset}", last)
            refresh = True
            await asyncio.sleep(self.config.retry_backoff_s)

    async def _fetch_on(self, conn: KafkaConnection, topic: str, partition: int,
                        offset: int) -> FetchResult:
        tp = (topic, partition)
        try:
            # max_wait 0: a range below the high watermark is always there to read.
            resp = await verbs.fetch(
                conn, {tp: verbs.FetchPosition(offset, self.config.partition_max_bytes)},
                max_wait_ms=0, min_bytes=0, max_bytes=self.config.fetch_max_bytes,
                isolation_level=self.config.isolation)
        except NoCommonVersion:
            raise KafkaIOError("the broker lacks Fetch v4+ (record batches v2)") from None
        if resp.error:
            return FetchResult(resp.error, -1, -1, b"")
        p = resp.partitions.get(tp)
        if p is None:
            return FetchResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, b"")
        bound = p.high_watermark
        if self.config.isolation == READ_COMMITTED and p.last_stable_offset >= 0:
            bound = p.last_stable_offset
        return FetchResult(p.error, bound, p.log_start_offset, bytes(p.records), list(p.aborted))

    # -- Produce -------------------------------------------------------------------

    async def produce(self, batches: dict[TP, bytes], acks: int) -> dict[TP, int]:
        """tp -> base offset (-1 for acks=0); KafkaIOError on a final error or timeout."""
        answers = await self._at_leaders(
            "Produce", batches, lambda conn, tps: self._produce_on(conn, tps, batches, acks),
            (KafkaConnectionError, TopicGone),
            lambda tp, a: f"Produce to {tp} failed: {verbs.error_name(a.error)} {a.message or ''}")
        return {tp: a.base_offset for tp, a in answers.items()}

    async def _produce_on(self, conn: KafkaConnection, tps: list[TP], batches: dict[TP, bytes],
                          acks: int) -> dict[TP, verbs.ProduceResult]:
        try:
            answers = await verbs.produce(conn, {tp: batches[tp] for tp in tps}, acks=acks,
                                          timeout_ms=int(self.config.request_timeout_s * 1000))
        except NoCommonVersion:
            raise KafkaIOError("the broker lacks Produce v3+ (record batches v2)") from None
        if answers is None:  # acks=0: nothing to hear
            return {tp: verbs.ProduceResult(ErrorCode.NONE) for tp in tps}
        return answers

    # -- DeleteRecords -------------------------------------------------------------

    async def delete_records(self, offsets: dict[TP, int]) -> dict[TP, tuple[int, int]]:
        """Advance log start offsets; -> tp -> (error code, low watermark). No retries."""
        out: dict[TP, tuple[int, int]] = {}
        for conn, tps in (await self.by_leader(sorted(offsets), True)).items():
            answers = await verbs.delete_records(
                conn, {tp: offsets[tp] for tp in tps},
                timeout_ms=int(self.config.request_timeout_s * 1000))
            out.update({tp: (a.error, a.low_watermark) for tp, a in answers.items()})
        return out
