"""Metadata (API key 3), versions 0-12, answered from the metadata cache (what the
controller's UpdateMetadata said), as Kafka's KafkaApis.handleTopicMetadataRequest
with ZkMetadataCache.

Version notes:
* "all topics": a null topic list (v1+), or an empty one in v0.
* v0 lists only live replicas/ISR members and flags a partition with a missing
  one REPLICA_NOT_AVAILABLE; v1+ list every replica with no error.
* a partition whose leader is not a live broker: LEADER_NOT_AVAILABLE, leader -1.
* v10-11 must name every topic (null name or a topic id -> INVALID_REQUEST for
  the request); v12 may ask by topic id: unknown ids -> UNKNOWN_TOPIC_ID with a
  null name, known ids answered under their names (names are then ignored).
* v8+: topic authorized operations only when asked (else Integer.MIN_VALUE);
  cluster ones only in v8-10. With no authorizer every operation is allowed.
* ACLs (broker/acl): a topic needs DESCRIBE (else TOPIC_AUTHORIZATION_FAILED
  when named, left out of "all topics"); auto-creation needs CREATE on the
  cluster or the topic (else TOPIC_AUTHORIZATION_FAILED).

Unknown topics asked by name (never for "all topics"): with
``auto.create.topics.enable`` and the request's AllowAutoTopicCreation (v4+;
always true before) the topic is created with num.partitions and
default.replication.factor (the internal topics with their own settings)
through the topic-creation core (``broker.topic_creation``), and answered LEADER_NOT_AVAILABLE this
time, as Kafka; a creation error (e.g. INVALID_REPLICATION_FACTOR) is answered
as is. Otherwise UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for an
illegal name.
"""

from __future__ import annotations

import uuid
from typing import Any

from protocol import topic_names
from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed, allowed_cluster, authorized_operations
from broker.acl.checks import authorized_names, cluster_operations
from broker.context import RequestContext
from broker.dispatch import handler
from broker.handler_support import CLUSTER_OPERATIONS, OPERATIONS_NOT_REQUESTED, \
    TOPIC_OPERATIONS, controller_id
from broker.topic_creation import auto_create_request, create_topic
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import ZERO_UUID, Struct
from protocol.spec import api

SPEC = api(ApiKey.METADATA).response
BROKER = SPEC.structs["MetadataResponseBroker"]
TOPIC = SPEC.structs["MetadataResponseTopic"]
PARTITION = SPEC.structs["MetadataResponsePartition"]

def _topic(error: int, name: str | None, topic_id: uuid.UUID | None,
           partitions: list[Struct] | None = None) -> Struct:
    return TOPIC.new(error_code=int(error), name=name, topic_id=topic_id or ZERO_UUID,
                     is_internal=topic_names.is_internal(name), partitions=partitions or [])


def _partition(metadata: Any, p: Any, v0: bool) -> Struct:
    """ZkMetadataCache.getPartitionMetadata for one partition."""
    replicas, isr = list(p.replicas), list(p.isr)
    if v0:  # only live replicas are listed, and their absence is an error
        replicas = [b for b in replicas if metadata.broker(b) is not None]
        isr = [b for b in isr if metadata.broker(b) is not None]
    error, leader = ErrorCode.NONE, p.leader
    if p.leader < 0 or metadata.broker(p.leader) is None:
        error, leader = ErrorCode.LEADER_NOT_AVAILABLE, -1
    elif len(replicas) < len(p.replicas) or len(isr) < len(p.isr):
        error = ErrorCode.REPLICA_NOT_AVAILABLE
    return PARTITION.new(error_code=int(error), partition_index=p.partition, leader_id=leader,
                         leader_epoch=p.leader_epoch, replica_nodes=replicas, isr_nodes=isr,
                         offline_replicas=list(p.offline_replicas))


def _known_topic(metadata: Any, name: str, v0: bool) -> Struct:
    parts = sorted(metadata.partitions(name), key=lambda p: p.partition)
    return _topic(ErrorCode.NONE, name, metadata.topic_id(name),
                  [_partition(metadata, p, v0) for p in parts])


async def _unknown_topic(ctx: RequestContext, name: str, auto_create: bool) -> Struct:
    # ACL: auto-creation needs CREATE on the cluster (that denial not logged) or on
    # the topic, checked before the name is (as Kafka)
    if auto_create and not (allowed_cluster(ctx, AclOperation.CREATE, log_denied=False)
                            or allowed(ctx, AclOperation.CREATE, ResourceType.TOPIC, name)):
        return _topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name, None)
    if not topic_names.is_valid(name):
        return _topic(ErrorCode.INVALID_TOPIC_EXCEPTION, name, None)
    if not auto_create:
        return _topic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, None)
    out = await create_topic(ctx.broker, auto_create_request(ctx.broker.config, name))
    error = out.error
    if error in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
        error = ErrorCode.LEADER_NOT_AVAILABLE
    return _topic(error, name, None)


def _describable(ctx: RequestContext, name: str, log_denied: bool = True) -> bool:
    return allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name, log_denied)


def _bad_request(version: int, request: Struct) -> Struct:
    """MetadataRequest.getErrorResponse(INVALID_REQUEST): every requested topic errs
    (a null name becomes "" where the response cannot carry null, before v12)."""
    return SPEC.new(topics=[
        _topic(ErrorCode.INVALID_REQUEST, t.name if t.name is not None or version >= 12
               else "", t.topic_id) for t in request.topics])


async def _topics(ctx: RequestContext, request: Struct) -> list[Struct]:
    v, metadata = ctx.version, ctx.broker.metadata
    if request.topics is None or (v == 0 and not request.topics):
        names = sorted(metadata.topics())  # ACL: topics without DESCRIBE are left out
        shown = authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names,
                                 log_denied=False)
        return [_known_topic(metadata, n, v == 0) for n in names if n in shown]
    out: list[Struct] = []
    ids = [t.topic_id for t in request.topics if t.topic_id != ZERO_UUID]
    if ids:  # v12: by id; names in the request are ignored (as Kafka)
        names = []
        for tid in dict.fromkeys(ids):
            name = metadata.topic_name(tid)
            if name is not None and not _describable(ctx, name):  # ACL: DESCRIBE topic
                out.append(_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, tid))
            elif name is not None:
                names.append(name)
            else:
                out.append(_topic(ErrorCode.UNKNOWN_TOPIC_ID, None, tid))
        return out + [_known_topic(metadata, n, False) for n in names
                      if metadata.has_topic(n)]
    auto_create = (ctx.broker.config.auto_create_topics_enable
                   and (v < 4 or request.allow_auto_topic_creation))
    for name in dict.fromkeys(t.name for t in request.topics):
        if not _describable(ctx, name):  # ACL: DESCRIBE topic, existence not disclosed
            out.append(_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name, None))
        elif metadata.has_topic(name):
            out.append(_known_topic(metadata, name, v == 0))
        else:
            out.append(await _unknown_topic(ctx, name, auto_create))
    return out


def _hide_fenced_leaders(ctx: RequestContext, topics: list[Struct]) -> None:
    """Partitions we lead but fence (broker/replication/leader_fence.py: cut off from
    ZooKeeper and our followers, or our session expired) are answered leaderless,
    LEADER_NOT_AVAILABLE: naming ourselves would send a client that asks only us
    straight back to the refusal, while the others know the new leader."""
    replicas = ctx.broker.replicas
    fence = replicas.fence
    if not fence.up:
        return
    me, now = ctx.broker.broker_id, replicas.clock()
    for t in topics:
        for part in t.partitions or ():
            if part.leader_id != me:
                continue
            p = replicas.partition(t.name, part.partition_index)
            if p is not None and fence.fenced((t.name, part.partition_index), p, now):
                part.error_code, part.leader_id = int(ErrorCode.LEADER_NOT_AVAILABLE), -1


@handler(ApiKey.METADATA)
async def handle_metadata(ctx: RequestContext, request: Struct) -> Struct:
    v, metadata = ctx.version, ctx.broker.metadata
    if request.topics is not None and v < 12 and any(
            t.name is None or t.topic_id != ZERO_UUID for t in request.topics):
        return _bad_request(v, request)
    if request.topics is not None and any(
            t.name is None and t.topic_id == ZERO_UUID for t in request.topics):
        return _bad_request(v, request)
    # a broker started again answers once the controller told it the cluster (a
    # client would take an empty answer for an empty cluster: MetadataCache.wait_received)
    await metadata.wait_received(ctx.broker.config.request_timeout_ms / 2000)
    topics = await _topics(ctx, request)
    _hide_fenced_leaders(ctx, topics)
    if v >= 8 and request.include_topic_authorized_operations:
        for t in topics:
            if t.name is not None and t.error_code != ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                t.topic_authorized_operations = authorized_operations(
                    ctx, ResourceType.TOPIC, t.name, TOPIC_OPERATIONS)
    cluster_ops = OPERATIONS_NOT_REQUESTED
    if 8 <= v <= 10 and request.include_cluster_authorized_operations:
        cluster_ops = cluster_operations(ctx, CLUSTER_OPERATIONS)
    brokers = [BROKER.new(node_id=b.id, host=b.host, port=b.port, rack=b.rack)
               for b in sorted(metadata.brokers_on(ctx.connection.listener),
                               key=lambda b: b.id)]
    return SPEC.new(throttle_time_ms=0, brokers=brokers, cluster_id=ctx.broker.cluster_id,
                    controller_id=controller_id(metadata), topics=topics,
                    cluster_authorized_operations=cluster_ops)
