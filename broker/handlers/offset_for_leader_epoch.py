"""OffsetForLeaderEpoch (API key 23), versions 0-4.

"Where does leader epoch E end?" answered from the leader-epoch cache
(KIP-101/279): the start offset of the first epoch above E (the LEO when E is
the latest), with the largest epoch <= E (v1+). Leader only; v2+ fences with
CurrentLeaderEpoch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH). An unknown
or future epoch answers epoch -1, offset -1 with no error, as Kafka does.

ACLs (broker/acl), as KIP-320 left them: a caller with CLUSTER_ACTION on the
cluster (a follower; that denial not logged) may ask for any partition; anyone
else needs DESCRIBE on each topic, else TOPIC_AUTHORIZATION_FAILED for its
partitions (whatever the ReplicaId, v3+).
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed_cluster
from broker.acl.checks import authorized_names
from broker.context import RequestContext
from broker.dispatch import handler
from broker.handler_support import refine_unknown
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.OFFSET_FOR_LEADER_EPOCH).response
TOPIC = SPEC.structs["OffsetForLeaderTopicResult"]
PARTITION = SPEC.structs["EpochEndOffset"]


@handler(ApiKey.OFFSET_FOR_LEADER_EPOCH)
async def handle_offset_for_leader_epoch(ctx: RequestContext, request: Struct) -> Struct:
    replicas = ctx.broker.replicas
    names = [t.topic for t in request.topics]
    visible = (set(names) if allowed_cluster(ctx, AclOperation.CLUSTER_ACTION, log_denied=False)
               else authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names))
    topics = []
    for topic in request.topics:
        parts = []
        for p in topic.partitions:
            if topic.topic not in visible:
                parts.append(PARTITION.new(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                           partition=p.partition, leader_epoch=-1,
                                           end_offset=-1))
                continue
            current = p.current_leader_epoch if ctx.version >= 2 else -1
            error, epoch, end = replicas.last_offset_for_leader_epoch(
                (topic.topic, p.partition), current, p.leader_epoch)
            error = refine_unknown(ctx, topic.topic, p.partition, error)
            parts.append(PARTITION.new(error_code=error, partition=p.partition,
                                       leader_epoch=epoch, end_offset=end))
        topics.append(TOPIC.new(topic=topic.topic, partitions=parts))
    return SPEC.new(throttle_time_ms=0, topics=topics)
