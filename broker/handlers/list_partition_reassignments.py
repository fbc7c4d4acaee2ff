"""ListPartitionReassignments (API key 46), version 0 (KIP-455).

Null Topics = every ongoing reassignment; otherwise only the named partitions
that are being reassigned appear. Per partition: Replicas (the full set while
moving), AddingReplicas, RemovingReplicas. Only the active controller
answers; elsewhere top-level NOT_CONTROLLER.

ACLs (broker/acl): DESCRIBE on the cluster, checked first; else a top-level
CLUSTER_AUTHORIZATION_FAILED (with the message of Kafka's
ClusterAuthorizationException) and the named partitions listed bare.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation
from broker.acl.authorizer import allowed_cluster
from broker.acl.checks import cluster_denied_message
from broker.context import RequestContext
from broker.dispatch import handler
from controller import NotControllerError
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(46).response
TOPIC = SPEC.structs["OngoingTopicReassignment"]
PARTITION = SPEC.structs["OngoingPartitionReassignment"]


@handler(46)
async def handle_list_partition_reassignments(ctx: RequestContext, request: Struct) -> Struct:
    parts = None if request.topics is None else [
        (t.name, p) for t in request.topics for p in t.partition_indexes]
    if not allowed_cluster(ctx, AclOperation.DESCRIBE):
        return SPEC.new(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        error_message=cluster_denied_message(ctx), topics=[
                            TOPIC.new(name=t.name, partitions=[
                                PARTITION.new(partition_index=p, replicas=[],
                                              adding_replicas=[], removing_replicas=[])
                                for p in t.partition_indexes])
                            for t in request.topics or []])
    ctl = ctx.broker.controller
    try:
        if ctl is None or not ctl.is_active:
            raise NotControllerError()
        ongoing = await ctl.list_reassignments(parts)
    except NotControllerError:
        return SPEC.new(error_code=ErrorCode.NOT_CONTROLLER,
                        error_message=ErrorCode.NOT_CONTROLLER.message, topics=[])
    by_topic: dict[str, list[Struct]] = {}
    for (t, p), (replicas, adding, removing) in sorted(ongoing.items()):
        by_topic.setdefault(t, []).append(PARTITION.new(
            partition_index=p, replicas=replicas, adding_replicas=adding,
            removing_replicas=removing))
    return SPEC.new(error_code=0, error_message=None, topics=[
        TOPIC.new(name=t, partitions=ps) for t, ps in by_topic.items()])
