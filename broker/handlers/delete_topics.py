"""DeleteTopics (API key 20), versions 0-6 (as Kafka's ZooKeeper-mode broker).

v0-5 name topics in TopicNames; v6 sends Topics entries of (nullable name,
topic id), exactly one of the two set: both -> INVALID_REQUEST for the whole
request, an id the metadata cache does not know -> UNKNOWN_TOPIC_ID.
``delete.topic.enable=false`` -> TOPIC_DELETION_DISABLED (INVALID_REQUEST
before v3). A name the metadata cache does not know -> UNKNOWN_TOPIC_OR_PARTITION.

Deletion is asynchronous in ZooKeeper mode: ClusterStore.delete_topic writes
/admin/delete_topics/<t> (already marked counts as success) and the controller
does the rest (StopReplica, files, znodes, UpdateMetadata). As Kafka's
DelayedDeleteTopics, the answer waits up to TimeoutMs for the topic to leave
the metadata cache; topics still there get REQUEST_TIMED_OUT (every one when
TimeoutMs <= 0). ACLs (broker/acl): DELETE on the topic, else
TOPIC_AUTHORIZATION_FAILED; a topic named by id also needs DESCRIBE, else
TOPIC_AUTHORIZATION_FAILED with a null name.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.checks import authorized_names
from broker.context import BrokerServices, RequestContext
from broker.dispatch import handler
from broker.topic_creation import wait_until
from controller import TopicNotFound
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import ZERO_UUID, Struct
from protocol.spec import api

if TYPE_CHECKING:
    from broker.metadata_cache import MetadataCache

log = logging.getLogger(__name__)

SPEC = api(ApiKey.DELETE_TOPICS).response
RESULT = SPEC.structs["DeletableTopicResult"]


@dataclass
class Deletion:
    name: str | None
    topic_id: uuid.UUID
    error: int = ErrorCode.NONE
    message: str | None = None


def _requested(version: int, request: Struct) -> list[tuple[str | None, uuid.UUID]]:
    if version >= 6:
        return [(t.name, t.topic_id) for t in request.topics]
    return [(name, ZERO_UUID) for name in request.topic_names]


def _response(items: list[Deletion]) -> Struct:
    return SPEC.new(throttle_time_ms=0, responses=[
        RESULT.new(name=d.name, topic_id=d.topic_id, error_code=int(d.error),
                   error_message=d.message) for d in items])


def _resolve(metadata: MetadataCache, name: str | None, topic_id: uuid.UUID) -> Deletion:
    if topic_id == ZERO_UUID:
        d = Deletion(name, topic_id)
    else:
        found = metadata.topic_name(topic_id)
        d = Deletion(found, topic_id)
        if found is None:
            d.error = ErrorCode.UNKNOWN_TOPIC_ID
            return d
    if d.name is None or not metadata.has_topic(d.name):
        d.error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return d


def _authorize(ctx: RequestContext, items: list[Deletion]) -> None:
    """ACL: DELETE on each topic, checked before its existence; a topic asked by id
    without DESCRIBE on it is answered with no name (Kafka does not disclose it)."""
    named = [d.name for d in items if d.name is not None]
    describable = authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, named)
    deletable = authorized_names(ctx, AclOperation.DELETE, ResourceType.TOPIC, named)
    for d in items:
        if d.name is None or d.error == ErrorCode.UNKNOWN_TOPIC_ID:
            continue
        if d.topic_id != ZERO_UUID and d.name not in describable:
            d.name, d.error, d.message = None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
        elif d.name not in deletable:
            d.error, d.message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, None


async def _mark(broker: BrokerServices, d: Deletion) -> None:
    try:
        assert d.name is not None
        await broker.cluster.delete_topic(d.name)
        log.info("topic %s marked for deletion", d.name)
    except TopicNotFound:
        d.error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@handler(ApiKey.DELETE_TOPICS)
async def handle_delete_topics(ctx: RequestContext, request: Struct) -> Struct:
    broker, v = ctx.broker, ctx.version
    wanted = _requested(v, request)
    if not broker.config.delete_topic_enable:
        error = ErrorCode.INVALID_REQUEST if v < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        return _response([Deletion(n, i, error) for n, i in wanted])
    if any(n is not None and i != ZERO_UUID for n, i in wanted):
        return _response([Deletion(n, i, ErrorCode.INVALID_REQUEST,
                                   "Topic name and topic ID can not both be specified.")
                          for n, i in wanted])
    items = [_resolve(broker.metadata, n, i) for n, i in wanted]
    _authorize(ctx, items)
    pending: dict[str, Deletion] = {}
    for d in items:
        if d.error == ErrorCode.NONE and d.name not in pending:
            await _mark(broker, d)
        if d.error == ErrorCode.NONE:
            pending.setdefault(d.name or "", d)
    if pending and request.timeout_ms > 0:
        await wait_until(lambda: not any(broker.metadata.has_topic(n) for n in pending),
                         request.timeout_ms)
    for d in items:
        if d.error == ErrorCode.NONE and (request.timeout_ms <= 0
                                          or (d.name is not None
                                              and broker.metadata.has_topic(d.name))):
            d.error = ErrorCode.REQUEST_TIMED_OUT
    return _response(items)
