"""The data-path request verbs, written once: Produce, Fetch, ListOffsets,
OffsetForLeaderEpoch, DeleteRecords and AlterPartition.

Each verb takes an open ``KafkaConnection`` and plain Python arguments keyed by
(topic, partition), builds the request body at the highest version both sides
speak (capped where a caller needs a layout, e.g. Fetch by topic name <= v12),
sends it, and returns per-partition results as small frozen dataclasses. They
do not route: the caller picks the connection (the leader, the controller), so
the same verb serves a follower fetching from its leader, a tool, the Spark
source and a benchmark. Error codes are returned, never raised; transport
failures raise ``client.errors.KafkaConnectionError`` as the connection does.

Version notes the verbs hide:
* Produce needs v3+ (record batches v2); Fetch v4+ for batches v2, and topic
  names up to v12 (v13+ names topics by id) — ``FETCH_BY_NAME_MAX``.
* ListOffsets v0 answers a list of old-style offsets; v1+ one offset.
* OffsetForLeaderEpoch v0 answers no leader epoch; the asked epoch stands in.
* AlterPartition names topics by name up to v1, by id from v2; ISR with broker
  epochs from v3.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from client.connection import KafkaConnection
from client.errors import NoCommonVersion
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.spec import api

TP = tuple[str, int]            # (topic, partition)
Records = bytes | bytearray | memoryview

PRODUCE_MIN = 3                 # record batches v2
FETCH_MIN = 4                   # record batches v2, isolation level, last stable offset
FETCH_BY_NAME_MAX = 12          # v13+ names topics by id
CONSUMER_REPLICA_ID = -1        # ReplicaId of an ordinary client (not a follower)

EARLIEST_TIMESTAMP = -2         # ListOffsets: the log start offset
LATEST_TIMESTAMP = -1           # ListOffsets: the log end offset (or LSO, read_committed)


def partitions_by_topic(tps: Iterable[TP]) -> dict[str, list[int]]:
    """[(topic, p), ...] -> topic -> [p, ...], topics in first-seen order (the shape
    of every request that lists partitions without per-partition data)."""
    out: dict[str, list[int]] = {}
    for topic, partition in tps:
        out.setdefault(topic, []).append(partition)
    return out


def _by_topic(items: Iterable[tuple[TP, Any]]) -> dict[str, list[tuple[int, Any]]]:
    """[((topic, p), x), ...] -> topic -> [(p, x), ...], topics in first-seen order."""
    out: dict[str, list[tuple[int, Any]]] = {}
    for (topic, partition), x in items:
        out.setdefault(topic, []).append((partition, x))
    return out


def _version(conn: KafkaConnection, api_key: int, lo: int = 0, hi: int | None = None) -> int:
    """The highest common version, capped at ``hi``; NoCommonVersion below ``lo``."""
    version = conn.version_for(api_key, hi)
    if version < lo:
        raise NoCommonVersion(f"{conn.host}:{conn.port} speaks {api(api_key).name} only up to "
                              f"v{version}; v{lo}+ is needed", conn.host, conn.port,
                              api_key=api_key)
    return version


# -- Produce ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ProduceResult:
    error: int
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    message: str | None = None


async def produce(conn: KafkaConnection, batches: Mapping[TP, Records], *, acks: int,
                  timeout_ms: int, transactional_id: str | None = None,
                  request_timeout: float | None = None,
                  max_version: int | None = None) -> dict[TP, ProduceResult] | None:
    """One Produce of one record batch (or several, concatenated) per partition.

    -> per-partition results; None for acks=0, which has no response (the frame
    is written and flushed). ``request_timeout`` (s) defaults to the connection's."""
    version = _version(conn, ApiKey.PRODUCE, PRODUCE_MIN, max_version)
    spec = api(ApiKey.PRODUCE).request
    s = spec.structs
    body = spec.new(transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms,
                    topic_data=[s["TopicProduceData"].new(name=topic, partition_data=[
                        s["PartitionProduceData"].new(index=p, records=recs) for p, recs in parts])
                        for topic, parts in _by_topic(batches.items()).items()])
    resp = await conn.request(ApiKey.PRODUCE, body, version, expect_response=acks != 0,
                              timeout=request_timeout)
    if resp is None:
        return None
    return {(t.name, p.index): ProduceResult(p.error_code, p.base_offset, p.log_append_time_ms,
                                             p.log_start_offset, p.error_message)
            for t in resp.responses for p in t.partition_responses}


# -- Fetch --------------------------------------------------------------------------------


# Built per request and never changed afterwards; not frozen=True, whose __init__
# sets each field through object.__setattr__ (5x the cost: 2 µs for 8 fields here).
@dataclass(slots=True)
class FetchPosition:
    """What a Fetch asks of one partition."""
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1       # a follower's own log start


# (not frozen: as above)
@dataclass(slots=True)
class FetchedPartition:
    error: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes | memoryview = b""
    aborted: tuple[tuple[int, int], ...] = ()           # (producer id, first offset)
    diverging_epoch: tuple[int, int] | None = None      # (epoch, end offset), KIP-320


# (not frozen: as above)
@dataclass(slots=True)
class FetchResponse:
    error: int                       # request level (fetch sessions, v7+)
    session_id: int
    partitions: dict[TP, FetchedPartition] = field(default_factory=dict)


async def fetch(conn: KafkaConnection, positions: Mapping[TP, FetchPosition], *,
                max_wait_ms: int, min_bytes: int, max_bytes: int, isolation_level: int = 0,
                replica_id: int = CONSUMER_REPLICA_ID, session_id: int = 0,
                session_epoch: int = -1, forgotten: Iterable[TP] = (), rack_id: str = "",
                request_timeout: float | None = None,
                max_version: int | None = None) -> FetchResponse:
    """One Fetch (topics by name, so at most v12). ``session_id``/``session_epoch``
    and ``forgotten`` are KIP-227 fetch sessions; the defaults fetch without one.
    ``request_timeout`` defaults to the connection's timeout plus ``max_wait_ms``."""
    cap = FETCH_BY_NAME_MAX if max_version is None else min(max_version, FETCH_BY_NAME_MAX)
    version = _version(conn, ApiKey.FETCH, FETCH_MIN, cap)
    spec = api(ApiKey.FETCH).request
    s = spec.structs
    topics = [s["FetchTopic"].new(topic=topic, partitions=[s["FetchPartition"].new(
        partition=p, current_leader_epoch=pos.current_leader_epoch,
        fetch_offset=pos.fetch_offset, last_fetched_epoch=pos.last_fetched_epoch,
        log_start_offset=pos.log_start_offset, partition_max_bytes=pos.max_bytes)
        for p, pos in parts]) for topic, parts in _by_topic(positions.items()).items()]
    gone = [s["ForgottenTopic"].new(topic=topic, partitions=parts)
            for topic, parts in partitions_by_topic(forgotten).items()]
    body = spec.new(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes,
                    max_bytes=max_bytes, isolation_level=isolation_level, session_id=session_id,
                    session_epoch=session_epoch, rack_id=rack_id, forgotten_topics_data=gone,
                    topics=topics)
    if request_timeout is None:
        request_timeout = conn.timeout + max_wait_ms / 1000
    resp = await conn.request(ApiKey.FETCH, body, version, timeout=request_timeout)
    assert resp is not None
    out: dict[TP, FetchedPartition] = {}
    for t in resp.responses:
        for p in t.partitions:
            div = p.diverging_epoch if version >= 12 else None
            out[(t.topic, p.partition_index)] = FetchedPartition(
                p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset,
                _payload(p.records),
                tuple((a.producer_id, a.first_offset) for a in p.aborted_transactions or ()),
                None if div is None or (div.epoch < 0 and div.end_offset < 0)
                else (div.epoch, div.end_offset))
    return FetchResponse(resp.error_code if version >= 7 else 0,
                         resp.session_id if version >= 7 else 0, out)


def _payload(data: Any) -> bytes | memoryview:
    """A partition's records as decoded: bytes or a view into the response frame."""
    if data is None:
        return b""
    if isinstance(data, (bytes, memoryview)):
        return data
    return bytes(data)


# -- ListOffsets ------------------------------------------------------------------------


@dataclass(frozen=True)
class ListedOffset:
    error: int
    offset: int = -1
    timestamp: int = -1
    leader_epoch: int = -1


async def list_offsets(conn: KafkaConnection, timestamps: Mapping[TP, int], *,
                       isolation_level: int = 0, replica_id: int = CONSUMER_REPLICA_ID,
                       current_leader_epochs: Mapping[TP, int] | None = None,
                       min_version: int = 0) -> dict[TP, ListedOffset]:
    """The offset for each partition's timestamp (``EARLIEST_TIMESTAMP``,
    ``LATEST_TIMESTAMP`` or a time in ms: the first offset at or after it)."""
    version = _version(conn, ApiKey.LIST_OFFSETS, min_version)
    spec = api(ApiKey.LIST_OFFSETS).request
    s = spec.structs
    epochs = current_leader_epochs or {}
    body = spec.new(replica_id=replica_id, isolation_level=isolation_level, topics=[
        s["ListOffsetsTopic"].new(name=topic, partitions=[s["ListOffsetsPartition"].new(
            partition_index=p, current_leader_epoch=epochs.get((topic, p), -1), timestamp=ts,
            max_num_offsets=1) for p, ts in parts])
        for topic, parts in _by_topic(timestamps.items()).items()])
    resp = await conn.request(ApiKey.LIST_OFFSETS, body, version)
    assert resp is not None
    out: dict[TP, ListedOffset] = {}
    for t in resp.topics:
        for p in t.partitions:
            if version == 0:
                out[(t.name, p.partition_index)] = ListedOffset(
                    p.error_code, (p.old_style_offsets or [-1])[0])
            else:
                out[(t.name, p.partition_index)] = ListedOffset(
                    p.error_code, p.offset, p.timestamp, p.leader_epoch)
    return out


# -- OffsetForLeaderEpoch ---------------------------------------------------------------


@dataclass(frozen=True)
class EpochEndOffset:
    error: int
    leader_epoch: int = -1
    end_offset: int = -1


async def offset_for_leader_epoch(conn: KafkaConnection, epochs: Mapping[TP, tuple[int, int]],
                                  *, replica_id: int = -2) -> dict[TP, EpochEndOffset]:
    """``epochs``: tp -> (current leader epoch, epoch asked about); -> the end
    offset of that epoch on the leader (KIP-101/279). ``replica_id`` -2 is a
    consumer's, a follower passes its broker id."""
    version = _version(conn, ApiKey.OFFSET_FOR_LEADER_EPOCH)
    spec = api(ApiKey.OFFSET_FOR_LEADER_EPOCH).request
    s = spec.structs
    body = spec.new(replica_id=replica_id, topics=[s["OffsetForLeaderTopic"].new(
        topic=topic, partitions=[s["OffsetForLeaderPartition"].new(
            partition=p, current_leader_epoch=current, leader_epoch=epoch)
            for p, (current, epoch) in parts])
        for topic, parts in _by_topic(epochs.items()).items()])
    resp = await conn.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, body, version)
    assert resp is not None
    out: dict[TP, EpochEndOffset] = {}
    for t in resp.topics:
        for p in t.partitions:
            tp = (t.topic, p.partition)
            epoch = p.leader_epoch if version >= 1 else epochs.get(tp, (-1, -1))[1]
            out[tp] = EpochEndOffset(p.error_code, epoch, p.end_offset)
    return out


# -- DeleteRecords ----------------------------------------------------------------------


@dataclass(frozen=True)
class DeletedRecords:
    error: int
    low_watermark: int = -1


async def delete_records(conn: KafkaConnection, offsets: Mapping[TP, int], *,
                         timeout_ms: int) -> dict[TP, DeletedRecords]:
    """Advance each partition's log start offset to ``offsets[tp]`` (-1: the high
    watermark); -> the new low watermark. Goes to the partitions' leader."""
    spec = api(ApiKey.DELETE_RECORDS).request
    s = spec.structs
    body = spec.new(timeout_ms=timeout_ms, topics=[s["DeleteRecordsTopic"].new(
        name=topic, partitions=[s["DeleteRecordsPartition"].new(partition_index=p, offset=o)
                                for p, o in parts])
        for topic, parts in _by_topic(offsets.items()).items()])
    resp = await conn.request(ApiKey.DELETE_RECORDS, body)
    assert resp is not None
    return {(t.name, p.partition_index): DeletedRecords(p.error_code, p.low_watermark)
            for t in resp.topics for p in t.partitions}


# -- AlterPartition (a leader asks the controller to change an ISR) ---------------------


@dataclass(frozen=True)
class IsrProposal:
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    topic_id: uuid.UUID


@dataclass(frozen=True)
class IsrAnswer:
    error: int
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


@dataclass(frozen=True)
class AlterPartitionResponse:
    error: int                       # request level (NOT_CONTROLLER, STALE_BROKER_EPOCH, ...)
    partitions: dict[TP, IsrAnswer] = field(default_factory=dict)


async def alter_partition(conn: KafkaConnection, proposals: Mapping[TP, IsrProposal], *,
                          broker_id: int, broker_epoch: int, max_version: int | None = None,
                          timeout: float | None = None) -> AlterPartitionResponse:
    """Propose new ISRs to the controller. Topics go by name up to v1 and by id
    from v2, so the version is capped at 1 unless every proposal has a topic id.
    ``timeout``: seconds for the answer (the connection's own by default)."""
    with_ids = all(p.topic_id != uuid.UUID(int=0) for p in proposals.values())
    cap = 3 if with_ids else 1
    version = _version(conn, ApiKey.ALTER_PARTITION, 0,
                       cap if max_version is None else min(cap, max_version))
    spec = api(ApiKey.ALTER_PARTITION).request
    s = spec.structs
    topics, names = [], {}
    for topic, parts in _by_topic(proposals.items()).items():
        topic_id = parts[0][1].topic_id
        names[topic_id if version >= 2 else topic] = topic
        topics.append(s["TopicData"].new(topic_name=topic, topic_id=topic_id, partitions=[
            s["PartitionData"].new(
                partition_index=p, leader_epoch=prop.leader_epoch,
                new_isr=sorted(prop.isr) if version < 3 else [],
                new_isr_with_epochs=[s["BrokerState"].new(broker_id=b, broker_epoch=-1)
                                     for b in sorted(prop.isr)] if version >= 3 else [],
                leader_recovery_state=0, partition_epoch=prop.partition_epoch)
            for p, prop in parts]))
    body = spec.new(broker_id=broker_id, broker_epoch=broker_epoch, topics=topics)
    resp = await conn.request(ApiKey.ALTER_PARTITION, body, version, timeout=timeout)
    assert resp is not None
    out: dict[TP, IsrAnswer] = {}
    for t in resp.topics:
        name = names.get(t.topic_id if version >= 2 else t.topic_name)
        if name is None:
            continue
        for p in t.partitions:
            out[(name, p.partition_index)] = IsrAnswer(p.error_code, p.leader_epoch,
                                                       tuple(p.isr), p.partition_epoch)
    return AlterPartitionResponse(resp.error_code, out)


def error_name(code: int) -> str:
    """'NOT_LEADER_OR_FOLLOWER' for its code (for messages)."""
    return ErrorCode.from_code(code).name


__all__ = [
    "CONSUMER_REPLICA_ID", "EARLIEST_TIMESTAMP", "FETCH_BY_NAME_MAX", "FETCH_MIN",
    "LATEST_TIMESTAMP", "PRODUCE_MIN", "TP", "AlterPartitionResponse", "DeletedRecords",
    "EpochEndOffset", "FetchPosition", "FetchResponse", "FetchedPartition", "IsrAnswer",
    "IsrProposal", "ListedOffset", "ProduceResult", "Records", "alter_partition",
    "delete_records", "error_name", "fetch", "list_offsets", "offset_for_leader_epoch",
    "partitions_by_topic",
    "produce",
]
