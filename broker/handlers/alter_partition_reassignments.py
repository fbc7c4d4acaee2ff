"""AlterPartitionReassignments (API key 45), version 0 (KIP-455).

Per partition: Replicas = the target replica list, null = cancel the running
reassignment. Only the active controller answers (controller/reassignment.py
validates: empty / duplicate / negative ids or dead new replicas ->
INVALID_REPLICA_ASSIGNMENT; unknown partition -> UNKNOWN_TOPIC_OR_PARTITION;
cancel with none running -> NO_REASSIGNMENT_IN_PROGRESS). The answer comes
once the reassignment has *started*; ListPartitionReassignments shows its
progress. Elsewhere: top-level NOT_CONTROLLER.

ACLs (broker/acl): ALTER on the cluster, checked first; else
CLUSTER_AUTHORIZATION_FAILED at the top and on every partition, with the
message of Kafka's ClusterAuthorizationException.
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

SPEC = api(45).response
TOPIC = SPEC.structs["ReassignableTopicResponse"]
PARTITION = SPEC.structs["ReassignablePartitionResponse"]


@handler(45)
async def handle_alter_partition_reassignments(ctx: RequestContext, request: Struct) -> Struct:
    targets: dict[tuple[str, int], list[int] | None] = {
        (t.name, p.partition_index): None if p.replicas is None else list(p.replicas)
        for t in request.topics for p in t.partitions}
    if not allowed_cluster(ctx, AclOperation.ALTER):
        message = cluster_denied_message(ctx)
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return SPEC.new(error_code=code, error_message=message, responses=[
            TOPIC.new(name=t.name, partitions=[
                PARTITION.new(partition_index=p.partition_index, error_code=code,
                              error_message=message) for p in t.partitions])
            for t in request.topics])
    ctl = ctx.broker.controller
    try:
        if ctl is None or not ctl.is_active:
            raise NotControllerError()
        results = await ctl.alter_reassignments(targets)
    except NotControllerError:
        return SPEC.new(error_code=ErrorCode.NOT_CONTROLLER,
                        error_message=ErrorCode.NOT_CONTROLLER.message, responses=[])
    by_topic: dict[str, list[Struct]] = {}
    for (t, p) in targets:
        error, text = results.get((t, p), (int(ErrorCode.UNKNOWN_SERVER_ERROR), None))
        by_topic.setdefault(t, []).append(PARTITION.new(partition_index=p, error_code=int(error),
                                                        error_message=text))
    return SPEC.new(error_code=0, error_message=None, responses=[
        TOPIC.new(name=t, partitions=ps) for t, ps in by_topic.items()])
