"""OffsetFetch (API key 9), versions 0-9.

* v0-7 ask for one group; v8+ for a batch of groups, each answered on its own.
* A null topic list (v2+) means every partition the group has committed.
* Group errors: v0-1 put them on every requested partition; v2-7 answer them
  at the top level with no partitions; v8+ per group (Kafka's getErrorResponse).
* v5+ return the committed leader epoch; v7+ RequireStable (honoured: only
  pending transactional commits make it wait, and there are none yet).
* Partitions without a commit: offset -1, metadata "", no error.
"""

from __future__ import annotations

from broker.context import RequestContext
from broker.coordinator import coordinator_of
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


def _wanted(topics: list[Struct] | None) -> Wanted:
    if topics is None:
        return None
    return [(t.name, p) for t in topics for p in t.partition_indexes]


def _by_topic(found: dict[tuple[str, int], tuple[int, int, str, int]]
              ) -> dict[str, list[tuple[int, tuple[int, int, str, int]]]]:
    out: dict[str, list[tuple[int, tuple[int, int, str, int]]]] = {}
    for (topic, partition), data in found.items():
        out.setdefault(topic, []).append((partition, data))
    return out


@handler(ApiKey.OFFSET_FETCH)
async def handle_offset_fetch(ctx: RequestContext, request: Struct) -> Struct:
    v = ctx.version
    coordinator = coordinator_of(ctx.broker)
    require_stable = bool(request.require_stable) if v >= 7 else False
    if v >= 8:
        groups = []
        for g in request.groups:
            error, found = coordinator.fetch_offsets(g.group_id, _wanted(g.topics), require_stable)
            groups.append(GROUP.new(group_id=g.group_id, error_code=int(error), topics=[
                GROUP_TOPIC.new(name=topic, partitions=[
                    GROUP_PARTITION.new(partition_index=p, committed_offset=o, metadata=m,
                                        committed_leader_epoch=e, error_code=int(err))
                    for p, (o, e, m, err) in parts])
                for topic, parts in _by_topic(found).items()]))
        return SPEC.new(throttle_time_ms=0, groups=groups)
    wanted = _wanted(request.topics)
    error, found = coordinator.fetch_offsets(request.group_id, wanted, require_stable)
    if error != ErrorCode.NONE:
        if v >= 2:
            return SPEC.new(throttle_time_ms=0, error_code=int(error), topics=[])
        found = {tp: (-1, -1, "", error) for tp in wanted or ()}
    return SPEC.new(throttle_time_ms=0, error_code=int(error), topics=[
        TOPIC.new(name=topic, partitions=[
            PARTITION.new(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                          metadata=m, error_code=int(err))
            for p, (o, e, m, err) in parts])
        for topic, parts in _by_topic(found).items()])
