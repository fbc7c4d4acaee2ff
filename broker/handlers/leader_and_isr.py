"""LeaderAndIsr (API key 4), versions 0-7; controller -> broker.

v0-1 carry UngroupedPartitionStates (each with its TopicName); v2+ group them
under TopicStates (v5+ with a TopicId). Each becomes a
broker.replication.partition_state.PartitionState handed to
``ReplicaManager.become_leader_or_follower_paced``; the metadata cache learns the
leadership at once. Response: v0-4 a flat PartitionErrors list with topic
names; v5+ per topic id. A stale controller epoch: STALE_CONTROLLER_EPOCH, no change.
ACLs (broker/acl): CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED
at the top and on every partition, nothing changed.
"""

from __future__ import annotations

import logging
import uuid

from broker.acl.checks import cluster_action_denied
from broker.context import RequestContext
from broker.dispatch import handler
from broker.replication.partition_state import PartitionState
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger("pybroker.broker")
SPEC = api(4).response
PART_ERR = SPEC.structs["LeaderAndIsrPartitionError"]
TOPIC_ERR = SPEC.structs["LeaderAndIsrTopicError"]


def partition_states(request: Struct, version: int) -> list[PartitionState]:
    if version < 2:
        return [PartitionState.from_request(ps.topic_name, None, ps)
                for ps in request.ungrouped_partition_states]
    return [PartitionState.from_request(ts.topic_name, ts.topic_id if version >= 5 else None, ps)
            for ts in request.topic_states for ps in ts.partition_states]


def _response(states: list[PartitionState], errors: dict[tuple[str, int], int], version: int,
              top_error: int = 0) -> Struct:
    if version < 5:
        return SPEC.new(error_code=top_error, partition_errors=[
            PART_ERR.new(topic_name=s.topic, partition_index=s.partition,
                         error_code=errors.get(s.tp, top_error)) for s in states])
    by_id: dict[uuid.UUID, list[Struct]] = {}
    for s in states:
        by_id.setdefault(s.topic_id, []).append(PART_ERR.new(
            partition_index=s.partition, error_code=errors.get(s.tp, top_error)))
    return SPEC.new(error_code=top_error, topics=[
        TOPIC_ERR.new(topic_id=tid, partition_errors=errs) for tid, errs in by_id.items()])


@handler(4)
async def handle_leader_and_isr(ctx: RequestContext, request: Struct) -> Struct:
    cache = ctx.broker.metadata
    states = partition_states(request, ctx.version)
    if cluster_action_denied(ctx):
        return _response(states, {}, ctx.version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if cache.is_stale(request.controller_epoch):
        log.warning("dropping LeaderAndIsr from controller %d with stale epoch %d (newest %d)",
                    request.controller_id, request.controller_epoch, cache.controller_epoch)
        return _response(states, {}, ctx.version, ErrorCode.STALE_CONTROLLER_EPOCH)
    cache.note_controller(request.controller_id, request.controller_epoch)
    # a new topic's creation configs must be known before its logs are created
    await ctx.broker.ensure_topic_configs({s.topic for s in states})
    # paced: a topic of many new partitions must not stop the event loop while its
    # logs are created (the loop gets a turn every few ms of this work)
    errors = await ctx.broker.replicas.become_leader_or_follower_paced(
        request.controller_epoch, states)
    cache.apply_leader_and_isr([s for s in states if not errors.get(s.tp)])
    ctx.broker.on_leader_and_isr(states, errors)
    return _response(states, errors, ctx.version)
