"""OffsetCommit (API key 8), versions 0-9.

* v0 has no generation or member (a standalone commit, generation -1); it is
  stored in __consumer_offsets like every other version (Kafka's ZooKeeper
  mode kept v0 commits in ZooKeeper).
* v1 carries a commit timestamp per partition (-1 = now); v2-4 a retention
  time (-1 = the broker's offsets.retention.minutes), which becomes an explicit
  expire timestamp as Kafka's adapter does; v5+ neither.
* v6+ committed leader epoch; v7+ group.instance.id.
* A KIP-848 consumer group validates member epochs instead (v9 carries them):
  UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, UNSUPPORTED_VERSION below v9 for its
  consumer-protocol members (coordinator/group/consumer/admin_ops.py).
* ACLs (broker/acl): READ on the group, else every partition
  GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions
  TOPIC_AUTHORIZATION_FAILED (checked before the topic's existence).
* Partitions of topics the metadata cache does not know ->
  UNKNOWN_TOPIC_OR_PARTITION (KafkaApis), the rest go to the coordinator.
"""

from __future__ import annotations

from collections.abc import Callable

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.acl.checks import authorized_names
from coordinator.group.consumer import admin_ops
from broker.context import RequestContext
from coordinator.group.classic import OffsetAndMetadata
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from broker.handler_support import partition_exists
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.OFFSET_COMMIT).response
TOPIC = SPEC.structs["OffsetCommitResponseTopic"]
PARTITION = SPEC.structs["OffsetCommitResponsePartition"]
INT64_MAX = (1 << 63) - 1


@handler(ApiKey.OFFSET_COMMIT)
async def handle_offset_commit(ctx: RequestContext, request: Struct) -> Struct:
    v = ctx.version
    if not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _response(request, lambda _tp: ErrorCode.GROUP_AUTHORIZATION_FAILED)
    readable = authorized_names(ctx, AclOperation.READ, ResourceType.TOPIC,
                                (t.name for t in request.topics))
    coordinator = coordinator_of(ctx.broker)
    now = coordinator.runtime.clock()
    retention = request.retention_time_ms if 2 <= v <= 4 else -1
    # clamped to int64: the expiry is written to __consumer_offsets as one
    expire = max(0, min(now + retention, INT64_MAX)) if retention != -1 else -1
    errors: dict[tuple[str, int], int] = {}
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    for t in request.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if t.name not in readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if not partition_exists(ctx.broker.metadata, t.name, p.partition_index):
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            stamp = p.commit_timestamp if v == 1 and p.commit_timestamp != -1 else now
            offsets[tp] = OffsetAndMetadata(
                offset=p.committed_offset, metadata=p.committed_metadata or "",
                commit_timestamp=stamp,
                leader_epoch=p.committed_leader_epoch if v >= 6 else -1,
                expire_timestamp=expire)
    if offsets and coordinator.consumer.has_group(request.group_id):
        # a KIP-848 consumer group (issue 19): member epochs, not generations
        errors.update(await admin_ops.commit_offsets(
            coordinator, request.group_id, request.member_id if v >= 1 else "",
            request.generation_id_or_member_epoch if v >= 1 else -1, offsets, v))
    elif offsets:
        errors.update(await coordinator.offsets.commit(
            request.group_id, request.member_id if v >= 1 else "",
            request.group_instance_id if v >= 7 else None,
            request.generation_id_or_member_epoch if v >= 1 else -1, offsets))
    return _response(request, lambda tp: errors[tp])


def _response(request: Struct, error_of: Callable[[tuple[str, int]], int]) -> Struct:
    return SPEC.new(throttle_time_ms=0, topics=[
        TOPIC.new(name=t.name, partitions=[
            PARTITION.new(partition_index=p.partition_index,
                          error_code=int(error_of((t.name, p.partition_index))))
            for p in t.partitions])
        for t in request.topics])
