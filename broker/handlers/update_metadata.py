"""UpdateMetadata (API key 6), versions 0-8; controller -> broker.

Replaces the live-broker list and upserts the partition states it carries
(v0-4 ungrouped with TopicName; v5+ grouped under TopicStates, v7+ with topic
ids; v0 brokers give one host/port, v1+ a list of endpoints). A request from a
controller epoch older than the newest seen is answered STALE_CONTROLLER_EPOCH
and changes nothing. ACLs (broker/acl): CLUSTER_ACTION on the cluster, else
CLUSTER_AUTHORIZATION_FAILED and nothing changed. After an update, KIP-848
consumer groups re-check their subscribed topics (created, deleted, grown).
"""

from __future__ import annotations

import logging

from broker.acl.checks import cluster_action_denied
from broker.context import RequestContext
from broker.dispatch import handler
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger("pybroker.broker")
SPEC = api(6).response


@handler(6)
async def handle_update_metadata(ctx: RequestContext, request: Struct) -> Struct:
    cache = ctx.broker.metadata
    if cluster_action_denied(ctx):
        return SPEC.new(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if cache.is_stale(request.controller_epoch):
        log.warning("dropping UpdateMetadata from controller %d with stale epoch %d (newest %d)",
                    request.controller_id, request.controller_epoch, cache.controller_epoch)
        return SPEC.new(error_code=ErrorCode.STALE_CONTROLLER_EPOCH)
    cache.update_metadata(request, ctx.version)
    coordinator = ctx.broker.group_coordinator
    if coordinator is not None:   # consumer groups follow topic changes (issue 19)
        coordinator.consumer.on_metadata_update()
    return SPEC.new(error_code=0)
