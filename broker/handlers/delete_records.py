"""DeleteRecords (API key 21), versions 0-2.

Moves each partition's log start offset up to the requested offset (-1 = the
high watermark); an offset above the high watermark is OFFSET_OUT_OF_RANGE.
The answer's LowWatermark is the new log start offset. Segments wholly below
it go with the next retention pass. (With followers, Kafka waits for their
log start offsets too: issue 4 adds that wait; with RF 1 it is immediate.)
ACLs (broker/acl): DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.context import RequestContext
from broker.dispatch import handler
from broker.handler_support import refine_unknown
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.DELETE_RECORDS).response
TOPIC = SPEC.structs["DeleteRecordsTopicResult"]
PARTITION = SPEC.structs["DeleteRecordsPartitionResult"]


@handler(ApiKey.DELETE_RECORDS)
async def handle_delete_records(ctx: RequestContext, request: Struct) -> Struct:
    replicas = ctx.broker.replicas
    topics = []
    for topic in request.topics:
        parts = []
        deletable = allowed(ctx, AclOperation.DELETE, ResourceType.TOPIC, topic.name)  # ACL
        for p in topic.partitions:
            error: int
            low: int
            if not deletable:
                error, low = ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1
            else:
                error, low = replicas.delete_records((topic.name, p.partition_index), p.offset)
                error = refine_unknown(ctx, topic.name, p.partition_index, error)
            parts.append(PARTITION.new(partition_index=p.partition_index, low_watermark=low,
                                       error_code=error))
        topics.append(TOPIC.new(name=topic.name, partitions=parts))
    return SPEC.new(throttle_time_ms=0, topics=topics)
