"""StopReplica (API key 5), versions 0-4; controller -> broker.

v0: DeletePartitions + UngroupedPartitions (topic, partition); v1-2:
DeletePartitions + Topics (name, partition indexes); v3+: TopicStates with a
per-partition LeaderEpoch and DeletePartition flag. All become
(topic, partition, delete, leader_epoch) entries for
``ReplicaManager.stop_replicas``. A stale controller epoch:
STALE_CONTROLLER_EPOCH, no change. ACLs (broker/acl): CLUSTER_ACTION on the
cluster, else CLUSTER_AUTHORIZATION_FAILED at the top and on every partition.
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
SPEC = api(5).response
PART_ERR = SPEC.structs["StopReplicaPartitionError"]

Entry = tuple[str, int, bool, int]


def entries(request: Struct, version: int) -> list[Entry]:
    if version == 0:
        return [(p.topic_name, p.partition_index, bool(request.delete_partitions), -1)
                for p in request.ungrouped_partitions]
    if version <= 2:
        return [(t.name, p, bool(request.delete_partitions), -1)
                for t in request.topics for p in t.partition_indexes]
    return [(t.topic_name, p.partition_index, bool(p.delete_partition), p.leader_epoch)
            for t in request.topic_states for p in t.partition_states]


@handler(5)
async def handle_stop_replica(ctx: RequestContext, request: Struct) -> Struct:
    todo = entries(request, ctx.version)
    if cluster_action_denied(ctx):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return SPEC.new(error_code=code, partition_errors=[
            PART_ERR.new(topic_name=t, partition_index=p, error_code=code)
            for t, p, _d, _e in todo])
    if ctx.broker.metadata.is_stale(request.controller_epoch):
        log.warning("dropping StopReplica from controller %d with stale epoch %d",
                    request.controller_id, request.controller_epoch)
        return SPEC.new(error_code=ErrorCode.STALE_CONTROLLER_EPOCH, partition_errors=[])
    ctx.broker.metadata.note_controller(request.controller_id, request.controller_epoch)
    async with ctx.broker.replicas.state_change_lock:   # not inside a paced LeaderAndIsr
        errors = ctx.broker.replicas.stop_replicas(request.controller_epoch, todo)
    ctx.broker.on_stop_replica([(t, p) for t, p, _d, _e in todo if not errors.get((t, p))])
    return SPEC.new(error_code=0, partition_errors=[
        PART_ERR.new(topic_name=t, partition_index=p, error_code=errors.get((t, p), 0))
        for t, p, _d, _e in todo])
