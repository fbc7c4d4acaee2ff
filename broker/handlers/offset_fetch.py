"""OffsetFetch (API key 9), versions 0-9.

* v0-7 ask for one group; v8+ for a batch of groups, each answered on its own.
* A null topic list (v2+) means every partition the group has committed.
* Group errors: v0-1 put them on every requested partition; v2-7 answer them
  at the top level with no partitions; v8+ per group (Kafka's getErrorResponse).
* v9 MemberId/MemberEpoch: for a KIP-848 consumer group the member must exist
  and the epoch match (UNKNOWN_MEMBER_ID / STALE_MEMBER_EPOCH, per group); a null
  member id with epoch -1 (admin) reads freely (coordinator/group/consumer/admin_ops.py).
* v5+ return the committed leader epoch; v7+ RequireStable (honoured: only
  pending transactional commits make it wait, and there are none yet).
* Partitions without a commit: offset -1, metadata "", no error.
* ACLs (broker/acl): DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED
  (as the other group errors); topics as ``_fetch_group`` says.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.acl.checks import authorized_names
from coordinator.group.consumer import admin_ops
from broker.context import RequestContext
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.OFFSET_FETCH).response
TOPIC = SPEC.structs["OffsetFetchResponseTopic"]
PARTITION = SPEC.structs["OffsetFetchResponsePartition"]
GROUP = SPEC.structs["OffsetFetchResponseGroup"]
GROUP_TOPIC = SPEC.structs["OffsetFetchResponseTopics"]
GROUP_PARTITION = SPEC.structs["OffsetFetchResponsePartitions"]

Wanted = list[tuple[str, int]] | None
Fetched = tuple[int, int, str, int]     # (offset, leader epoch, metadata, error)


def _wanted(topics: list[Struct] | None) -> Wanted:
    if topics is None:
        return None
    return [(t.name, p) for t in topics for p in t.partition_indexes]


def _by_topic(found: dict[tuple[str, int], Fetched]) -> dict[str, list[tuple[int, Fetched]]]:
    out: dict[str, list[tuple[int, Fetched]]] = {}
    for (topic, partition), data in found.items():
        out.setdefault(topic, []).append((partition, data))
    return out


def _fetch_group(ctx: RequestContext, group_id: str, topics: list[Struct] | None,
                 require_stable: bool, member_id: str | None = None,
                 member_epoch: int = -1) -> tuple[int, dict[tuple[str, int], Fetched]]:
    """One group's (error, partition -> (offset, epoch, metadata, error)), with
    Kafka's checks: DESCRIBE on the group; of a null topic list (every committed
    partition) only DESCRIBE-able topics are answered; named topics without
    DESCRIBE get TOPIC_AUTHORIZATION_FAILED per partition, unasked of the coordinator."""
    if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, {}
    coordinator = coordinator_of(ctx.broker)
    member_error = admin_ops.fetch_error(coordinator, group_id, member_id, member_epoch)
    if member_error is not None:      # v9 on a KIP-848 consumer group (issue 19)
        return member_error, {}
    if topics is None:
        error, found = coordinator.offsets.fetch(group_id, None, require_stable)
        shown = authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                 (t for t, _ in found))
        return error, {tp: d for tp, d in found.items() if tp[0] in shown}
    shown = authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                             (t.name for t in topics))
    error, found = coordinator.offsets.fetch(
        group_id, _wanted([t for t in topics if t.name in shown]), require_stable)
    if error != ErrorCode.NONE:
        return error, {}
    for t in topics:
        if t.name not in shown:
            for p in t.partition_indexes:
                found[(t.name, p)] = (-1, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return error, found


@handler(ApiKey.OFFSET_FETCH)
async def handle_offset_fetch(ctx: RequestContext, request: Struct) -> Struct:
    v = ctx.version
    require_stable = bool(request.require_stable) if v >= 7 else False
    if v >= 8:
        groups = []
        for g in request.groups:
            error, found = _fetch_group(ctx, g.group_id, g.topics, require_stable,
                                        g.member_id if v >= 9 else None,
                                        g.member_epoch if v >= 9 else -1)
            groups.append(GROUP.new(group_id=g.group_id, error_code=int(error), topics=[
                GROUP_TOPIC.new(name=topic, partitions=[
                    GROUP_PARTITION.new(partition_index=p, committed_offset=o, metadata=m,
                                        committed_leader_epoch=e, error_code=int(err))
                    for p, (o, e, m, err) in parts])
                for topic, parts in _by_topic(found).items()]))
        return SPEC.new(throttle_time_ms=0, groups=groups)
    error, found = _fetch_group(ctx, request.group_id, request.topics, require_stable)
    if error != ErrorCode.NONE:
        if v >= 2:
            return SPEC.new(throttle_time_ms=0, error_code=int(error), topics=[])
        found = {tp: (-1, -1, "", error) for tp in _wanted(request.topics) or ()}
    return SPEC.new(throttle_time_ms=0, error_code=int(error), topics=[
        TOPIC.new(name=topic, partitions=[
            PARTITION.new(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                          metadata=m, error_code=int(err))
            for p, (o, e, m, err) in parts])
        for topic, parts in _by_topic(found).items()])
