"""Fetch (API key 1), versions 0-17, with incremental fetch sessions (KIP-227).

Per request: 1. resolve topics (names, or topic ids from v13: unknown ids
answer UNKNOWN_TOPIC_ID); 2. pick the session context (below); 3. the
ReplicaManager reads (min_bytes / max_wait through the fetch purgatory,
max_bytes with the "at least one batch" rule from v3; v0-2 have a hard
per-partition limit); 4. v0-3 answers are down-converted to magic 0 (v0-1)
or 1 (v2-3); 5. the session context decides what goes in the response.

Sessions (Kafka ``FetchSession``/``FetchManager``), by (SessionId, SessionEpoch):

* (any, -1)  full fetch without a session; a named session is closed first.
* (any, 0)   full fetch; a named session is closed; a new session is created
             holding every partition and what the response said of it
             (SessionId 0 in the answer when the cache is full).
* (id, n>0)  incremental: the session must exist (FETCH_SESSION_ID_NOT_FOUND)
             at epoch n (INVALID_FETCH_SESSION_EPOCH) and use topic ids as
             this version does (FETCH_SESSION_TOPIC_ID_ERROR). Request
             partitions are added/updated, forgotten ones removed, all session
             partitions are read, and only those with records, a changed HW or
             log start offset, or an error are answered. Partitions that
             returned records move to the end of the session (fairness).
             The epoch then advances (wrapping to 1).

Replication quotas (replication/throttle.py): a follower's fetch of a throttled
partition gets no records while the leader's quota is exceeded (ReplicaManager),
and the bytes of throttled partitions in its answer are recorded here. Replica
fetches are exempt from client quotas.

ACLs (broker/acl): a consumer needs READ on each topic, a follower
CLUSTER_ACTION on the cluster; denied partitions answer TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.checks import authorized_names, cluster_action_denied
from broker.context import RequestContext
from broker.dispatch import handler
from broker.metrics.topic_stats import BrokerTopicStats
from broker.handler_support import LEADER_HINT_ERRORS, leader_hint, node_endpoints, refine_unknown
from broker.replication.fetch_reads import FetchPartitionRequest, FetchPartitionResult
from broker.replication.fetch_sessions import CachedPartition, FetchSession
from broker.replication.throttle import ReplicationQuota, throttled_bytes
from protocol import legacy_records, records
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.fetch_session import (FINAL_EPOCH, INITIAL_EPOCH, INT32_MAX, INVALID_SESSION_ID,
                                    next_epoch)
from protocol.schema import ZERO_UUID, Struct
from protocol.spec import api

log = logging.getLogger(__name__)

SPEC = api(ApiKey.FETCH).response
TOPIC = SPEC.structs["FetchableTopicResponse"]
PARTITION = SPEC.structs["PartitionData"]
EPOCH_END = SPEC.structs["EpochEndOffset"]
LEADER = SPEC.structs["LeaderIdAndEpoch"]
NODE = SPEC.structs["NodeEndpoint"]
ABORTED = SPEC.structs["AbortedTransaction"]


TP = tuple[str, int]


# -- the handler ------------------------------------------------------------------------

@dataclass(slots=True)
class _Request:
    """The request, resolved: partitions in order, with topic ids and unknown ids set aside."""

    fetch: dict[TP, FetchPartitionRequest]
    topic_ids: dict[str, uuid.UUID]
    unknown_ids: list[tuple[uuid.UUID, int]]
    forgotten: list[TP]


def _resolve(ctx: RequestContext, request: Struct) -> _Request:
    version = ctx.version
    names = _topic_names(ctx, [t.topic_id for t in request.topics]
                         + [t.topic_id for t in request.forgotten_topics_data]
                         ) if version >= 13 else {}
    out = _Request({}, {}, [], [])
    for topic in request.topics:
        name = topic.topic
        if version >= 13:
            name = names.get(topic.topic_id)
            if name is None:
                out.unknown_ids.extend((topic.topic_id, p.partition) for p in topic.partitions)
                continue
            out.topic_ids[name] = topic.topic_id
        for p in topic.partitions:
            out.fetch[(name, p.partition)] = FetchPartitionRequest(
                p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch, p.log_start_offset,
                p.last_fetched_epoch)
    for topic in request.forgotten_topics_data:
        name = names.get(topic.topic_id) if version >= 13 else topic.topic
        if name is not None:
            out.forgotten.extend((name, p) for p in topic.partitions)
    return out


def _topic_names(ctx: RequestContext, ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    """topic id -> name for the ids a request names: the metadata cache's map, then
    (for an id it does not know yet) the partitions we host. Per id, not a map of
    every topic built per request: a consumer fetch would walk all partitions."""
    names: dict[uuid.UUID, str] = {}
    metadata = ctx.broker.metadata
    unknown = False
    for tid in ids:
        name = metadata.topic_name(tid)
        if name is None:
            unknown = True
        else:
            names[tid] = name
    if unknown:
        for p in ctx.broker.replicas.partitions.values():
            if p.topic_id != ZERO_UUID and p.topic_id in ids and p.topic_id not in names:
                names[p.topic_id] = p.topic
    return names


@handler(ApiKey.FETCH)
async def handle_fetch(ctx: RequestContext, request: Struct) -> Struct:
    version = ctx.version
    replicas = ctx.broker.replicas
    cache = ctx.broker.fetch_sessions
    replica_id = request.replica_state.replica_id if version >= 15 else request.replica_id
    req = _resolve(ctx, request)
    session_id, epoch = (request.session_id, request.session_epoch) if version >= 7 else (0, FINAL_EPOCH)
    session: FetchSession | None = None
    fetch = req.fetch
    unchanged_since: dict[TP, int] | None = None
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)
    else:
        session = cache.get(session_id)
        error = _session_error(session, epoch, version)
        if error:
            return SPEC.new(error_code=error, session_id=INVALID_SESSION_ID, responses=[])
        assert session is not None
        for tp, preq in req.fetch.items():
            cached = session.partitions.get(tp)
            if cached is None:
                session.partitions[tp] = CachedPartition(req.topic_ids.get(tp[0], ZERO_UUID), preq)
            else:
                cached.request = preq
                cached.caught_up_seq = -1   # a new position: read it
        for tp in req.forgotten:
            session.partitions.pop(tp, None)
        if not session.partitions:
            cache.remove(session.id)
            session = None
        else:
            session.epoch = next_epoch(session.epoch)
            session.last_used_ms = replicas.clock()
            fetch, unchanged_since = {}, {}
            for tp, c in session.partitions.items():
                fetch[tp] = c.request
                if c.caught_up_seq >= 0:
                    unchanged_since[tp] = c.caught_up_seq
    expected_epoch = session.epoch if session is not None else None
    denied = _unauthorized(ctx, replica_id, fetch)  # ACL: READ topic / CLUSTER_ACTION
    allowed_fetch = {tp: f for tp, f in fetch.items() if tp not in denied} if denied else fetch
    results: dict[TP, FetchPartitionResult] = {}
    if allowed_fetch or not denied:
        results = await replicas.fetch(
            replica_id, request.max_wait_ms, request.min_bytes,
            request.max_bytes if version >= 3 else INT32_MAX,
            request.isolation_level if version >= 4 else 0, allowed_fetch,
            hard_max_bytes_limit=version <= 2, unchanged_since=unchanged_since)
    for tp in denied:
        results[tp] = FetchPartitionResult(error=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    response_session = INVALID_SESSION_ID
    if session is not None:
        if session.epoch != expected_epoch:  # a concurrent duplicate moved it meanwhile
            return SPEC.new(error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id=session.id,
                            responses=[])
        response_session = session.id
        results = _incremental(session, results)
    elif epoch == INITIAL_EPOCH and version >= 7:
        created = cache.create(replicas.clock(), version >= 13)
        if created is not None:
            for tp, r in results.items():
                created.partitions[tp] = CachedPartition(req.topic_ids.get(tp[0], ZERO_UUID), fetch[tp],
                                                         r.high_watermark, r.log_start_offset,
                                                         r.caught_up_seq)
            response_session = created.id
    if replica_id >= 0:
        _record_replication(replicas.leader_quota, results)
    stats = replicas.topic_stats      # metrics (broker/metrics/); None without them
    if stats is not None:
        _count_out(stats, replica_id, results)
    topic_ids = dict(req.topic_ids)
    if session is not None:
        topic_ids.update({tp[0]: c.topic_id for tp, c in session.partitions.items()})
    return _build(ctx, request, results, fetch, topic_ids, req.unknown_ids, response_session)


def _record_replication(quota: ReplicationQuota | None, results: dict[TP, FetchPartitionResult]
                        ) -> None:
    """A follower's answer is built: count the bytes of its throttled partitions
    against the leader's replication quota (KafkaApis.sizeOfThrottledPartitions;
    they were checked against it before they were read)."""
    if quota is not None:
        quota.record(throttled_bytes(quota, {tp: r.size for tp, r in results.items()}))


def _count_out(stats: BrokerTopicStats, replica_id: int, results: dict[TP, FetchPartitionResult]) -> None:
    """Per-topic BrokerTopicMetrics of the answered partitions: bytes out to consumers,
    replication bytes out to followers, partitions answered and failed."""
    for tp, r in results.items():
        c = stats.of(tp[0])
        c.total_fetch += 1
        if r.error:
            c.failed_fetch += 1
        elif replica_id < 0:
            c.bytes_out += r.size
        else:
            c.replication_bytes_out += r.size


def _unauthorized(ctx: RequestContext, replica_id: int,
                  fetch: dict[TP, FetchPartitionRequest]) -> set[TP]:
    """Partitions the caller may not read (KafkaApis.handleFetchRequest): a
    follower (replica id >= 0) needs CLUSTER_ACTION on the cluster for all of
    them, a consumer READ on each topic."""
    if replica_id >= 0:
        return set(fetch) if cluster_action_denied(ctx) else set()
    readable = authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC, (t for t, _ in fetch))
    return {tp for tp in fetch if tp[0] not in readable}


def _session_error(session: FetchSession | None, epoch: int, version: int) -> int:
    if session is None:
        return ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    if session.epoch != epoch:
        return ErrorCode.INVALID_FETCH_SESSION_EPOCH
    if session.uses_topic_ids != (version >= 13):
        return ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    return ErrorCode.NONE


def _incremental(session: FetchSession, results: dict[TP, FetchPartitionResult]
                 ) -> dict[TP, FetchPartitionResult]:
    out: dict[TP, FetchPartitionResult] = {}
    for tp, r in results.items():
        cached = session.partitions.get(tp)
        if cached is None or not cached.must_respond(r):
            continue
        out[tp] = r
        if r.size > 0:  # fairness: partitions that returned data go to the back
            session.partitions[tp] = session.partitions.pop(tp)
    return out


def _build(ctx: RequestContext, request: Struct, results: dict[TP, FetchPartitionResult],
           fetch: dict[TP, FetchPartitionRequest], topic_ids: dict[str, uuid.UUID],
           unknown_ids: list[tuple[uuid.UUID, int]], session_id: int) -> Struct:
    version = ctx.version
    isolation = request.isolation_level if version >= 4 else 0
    by_topic: dict[str, list[Struct]] = {}
    leaders: set[int] = set()
    for tp, r in results.items():
        part = _partition(ctx, tp, r, fetch[tp].fetch_offset, isolation, leaders)
        by_topic.setdefault(tp[0], []).append(part)
    topics = [TOPIC.new(topic=name, topic_id=topic_ids.get(name, ZERO_UUID), partitions=parts)
              for name, parts in by_topic.items()]
    unknown: dict[uuid.UUID, list[Struct]] = {}
    for tid, index in unknown_ids:
        unknown.setdefault(tid, []).append(PARTITION.new(
            partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_ID, high_watermark=-1,
            records=b""))
    topics += [TOPIC.new(topic_id=tid, partitions=parts) for tid, parts in unknown.items()]
    response = SPEC.new(throttle_time_ms=0, error_code=0, session_id=session_id, responses=topics)
    if leaders and version >= 16:
        response.node_endpoints = node_endpoints(ctx, leaders, NODE)
    return response


def _partition(ctx: RequestContext, tp: TP, r: FetchPartitionResult, fetch_offset: int,
               isolation: int, leaders: set[int]) -> Struct:
    version = ctx.version
    error = refine_unknown(ctx, tp[0], tp[1], r.error)
    part = PARTITION.new(partition_index=tp[1], error_code=error, high_watermark=r.high_watermark,
                         last_stable_offset=r.last_stable_offset, log_start_offset=r.log_start_offset,
                         aborted_transactions=[ABORTED.new(producer_id=t.producer_id,
                                                           first_offset=t.first_offset)
                                               for t in r.aborted] if isolation == 1 else None,
                         records=r.records)
    if r.diverging_epoch is not None:
        part.diverging_epoch = EPOCH_END.new(epoch=r.diverging_epoch[0], end_offset=r.diverging_epoch[1])
    if error in LEADER_HINT_ERRORS and version >= 12:
        hint = leader_hint(ctx, tp[0], tp[1])
        if hint is not None and hint[0] >= 0:
            part.current_leader = LEADER.new(leader_id=hint[0], leader_epoch=hint[1])
            leaders.add(hint[0])
    if version <= 3 and r.size:
        try:
            part.records = downconvert(_bytes(r.records), 0 if version <= 1 else 1, fetch_offset)
        except legacy_records.UnsupportedLegacyCodec:
            part.error_code, part.records = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, b""
    return part


def _bytes(data: Any) -> bytes | bytearray | memoryview:
    return data.tobytes() if hasattr(data, "wire_size") else data


def downconvert(data: bytes | bytearray | memoryview, magic: int, fetch_offset: int) -> bytes:
    """Whole magic-2 batches as a magic ``magic`` message set (control batches dropped;
    a partial trailing batch is left out, as an old client could not use it)."""
    out = []
    for pos, header in records.iter_batches(data):
        if header.is_control:
            continue
        rows = [(rec.offset, rec.timestamp, rec.key, rec.value)
                for rec in records.iter_records(data, pos)]
        out.append(legacy_records.downconvert(
            rows, magic, codec=header.compression, timestamp_type=header.timestamp_type,
            log_append_time=header.max_timestamp if header.timestamp_type == records.LOG_APPEND_TIME else None,
            first_offset=fetch_offset))
    return b"".join(out)
