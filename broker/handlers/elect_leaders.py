"""ElectLeaders (API key 43), versions 0-2 (KIP-183, KIP-460).

v0 is always a preferred-replica election; v1+ carries ElectionType (0
preferred, 1 unclean). Null TopicPartitions = every partition, and then, as
Kafka, partitions that needed no election (ELECTION_NOT_NEEDED) are left out
of the answer. The active controller decides (controller/leader_election.py);
on any other broker every partition (and, v1+, the top level) gets
NOT_CONTROLLER so admin clients find the controller and retry.

ACLs (broker/acl): ALTER on the cluster, checked first; else every named
partition (none for a null list) and, v1+, the top level answer
CLUSTER_AUTHORIZATION_FAILED with a null message.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation
from broker.acl.authorizer import allowed_cluster
from broker.context import RequestContext
from broker.dispatch import handler
from controller import NotControllerError
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(43).response
RESULT = SPEC.structs["ReplicaElectionResult"]
PARTITION = SPEC.structs["PartitionResult"]

Results = dict[tuple[str, int], tuple[int, str | None]]


def _response(results: Results, top_error: int = 0) -> Struct:
    by_topic: dict[str, list[Struct]] = {}
    for (t, p), (code, message) in sorted(results.items()):
        by_topic.setdefault(t, []).append(PARTITION.new(partition_id=p, error_code=int(code),
                                                        error_message=message))
    return SPEC.new(error_code=top_error, replica_election_results=[
        RESULT.new(topic=t, partition_result=ps) for t, ps in by_topic.items()])


@handler(43)
async def handle_elect_leaders(ctx: RequestContext, request: Struct) -> Struct:
    parts = None if request.topic_partitions is None else [
        (tp.topic, p) for tp in request.topic_partitions for p in tp.partitions]
    kind = request.election_type if ctx.version >= 1 else 0
    if not allowed_cluster(ctx, AclOperation.ALTER):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _response({tp: (code, None) for tp in parts or []},
                         code if ctx.version >= 1 else 0)
    ctl = ctx.broker.controller
    try:
        if ctl is None or not ctl.is_active:
            raise NotControllerError()
        results: Results = await ctl.elect_leaders(parts, kind)
    except NotControllerError:
        top = ErrorCode.NOT_CONTROLLER if ctx.version >= 1 else 0
        return _response({tp: (ErrorCode.NOT_CONTROLLER, None) for tp in parts or []}, top)
    if parts is None:
        results = {tp: r for tp, r in results.items() if r[0] != ErrorCode.ELECTION_NOT_NEEDED}
    return _response(results)
