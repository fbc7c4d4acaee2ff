"""OffsetDelete (API key 47), version 0: deletes a group's committed offsets.

An Empty group loses them all as asked; a live consumer group only those of
topics none of its members subscribes to (the others ->
GROUP_SUBSCRIBED_TO_TOPIC); a live group of another protocol -> NON_EMPTY_GROUP;
unknown group -> GROUP_ID_NOT_FOUND. A KIP-848 consumer group: as a live
consumer group (coordinator/group/consumer/admin_ops.py). Unknown topics ->
UNKNOWN_TOPIC_OR_PARTITION per partition (KafkaApis).

ACLs (broker/acl): DELETE on the group, else a top-level
GROUP_AUTHORIZATION_FAILED; READ on each topic, else TOPIC_AUTHORIZATION_FAILED
for its partitions (checked before the topic's existence).
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.acl.checks import authorized_names
from coordinator.group.consumer import admin_ops
from broker.context import RequestContext
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from broker.handler_support import partition_exists
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.OFFSET_DELETE).response
TOPIC = SPEC.structs["OffsetDeleteResponseTopic"]
PARTITION = SPEC.structs["OffsetDeleteResponsePartition"]


@handler(ApiKey.OFFSET_DELETE)
async def handle_offset_delete(ctx: RequestContext, request: Struct) -> Struct:
    if not allowed(ctx, AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return SPEC.new(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, throttle_time_ms=0,
                        topics=[])
    readable = authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC,
                                (t.name for t in request.topics))
    errors: dict[tuple[str, int], int] = {}
    wanted: list[tuple[str, int]] = []
    for t in request.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if t.name not in readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif partition_exists(ctx.broker.metadata, t.name, p.partition_index):
                wanted.append(tp)
            else:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    coordinator = coordinator_of(ctx.broker)
    if coordinator.consumer.has_group(request.group_id):     # KIP-848 group (issue 19)
        blocked = admin_ops.offsets_not_deletable(coordinator, request.group_id, wanted)
        errors.update(blocked)
        wanted = [tp for tp in wanted if tp not in blocked]
    group_error, found = (await coordinator.offsets.delete(request.group_id, wanted)
                          if wanted or not coordinator.consumer.has_group(request.group_id)
                          else (ErrorCode.NONE, {}))
    if group_error != ErrorCode.NONE:
        return SPEC.new(error_code=int(group_error), throttle_time_ms=0, topics=[])
    errors.update(found)
    return SPEC.new(error_code=0, throttle_time_ms=0, topics=[
        TOPIC.new(name=t.name, partitions=[
            PARTITION.new(partition_index=p.partition_index,
                          error_code=int(errors.get((t.name, p.partition_index), 0)))
            for p in t.partitions])
        for t in request.topics])
