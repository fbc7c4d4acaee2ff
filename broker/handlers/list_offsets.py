"""ListOffsets (API key 2), versions 0-9.

Timestamps: -1 latest (the HW for read_uncommitted consumers, the LSO for
read_committed, the LEO for replicas), -2 earliest, -3 max timestamp (v7+),
-4 earliest local (= earliest, no tiered storage), -5 latest tiered (-1),
else the first offset whose record timestamp is at or after it (-1 when
none). v0 answers Kafka's old "offsets before" list (OldStyleOffsets) of up
to MaxNumOffsets segment boundaries. v4+ checks CurrentLeaderEpoch and
returns the leader epoch of the offset. ACLs (broker/acl): a topic needs
DESCRIBE, else TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.context import RequestContext
from broker.dispatch import handler
from broker.handler_support import refine_unknown
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.LIST_OFFSETS).response
TOPIC = SPEC.structs["ListOffsetsTopicResponse"]
PARTITION = SPEC.structs["ListOffsetsPartitionResponse"]

CONSUMER_REPLICA_ID = -1


@handler(ApiKey.LIST_OFFSETS)
async def handle_list_offsets(ctx: RequestContext, request: Struct) -> Struct:
    version = ctx.version
    replicas = ctx.broker.replicas
    from_client = request.replica_id == CONSUMER_REPLICA_ID
    isolation = (request.isolation_level if version >= 2 else 0) if from_client else None
    topics = []
    for topic in request.topics:
        parts = []
        describable = allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name)  # ACL
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            out = PARTITION.new(partition_index=p.partition_index)
            try:
                if not describable:
                    raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                if version == 0:
                    out.old_style_offsets = replicas.legacy_offsets_before(
                        tp, p.timestamp, p.max_num_offsets, from_client)
                else:
                    offset, ts, epoch = replicas.fetch_offset_for_timestamp(
                        tp, p.timestamp, isolation, p.current_leader_epoch if version >= 4 else -1)
                    out.offset, out.timestamp, out.leader_epoch = offset, ts, epoch
            except KafkaError as e:
                out.error_code = refine_unknown(ctx, topic.name, p.partition_index, e.code)
                if version >= 1:
                    out.offset, out.timestamp = -1, -1
            parts.append(out)
        topics.append(TOPIC.new(name=topic.name, partitions=parts))
    return SPEC.new(throttle_time_ms=0, topics=topics)
