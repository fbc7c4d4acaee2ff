"""WriteTxnMarkers (API key 27), versions 0-1: a transaction coordinator asks the
leader of each partition of a finished transaction to write its COMMIT or ABORT
marker (a control batch), as Kafka's handleWriteTxnMarkersRequest.

Per marker (one producer) and partition: the control batch is appended at the
leader's epoch and the answer waits until the high watermark passes it (acks=all,
``request.timeout.ms``), so a committed transaction is visible to read_committed
readers on every ISR replica once the coordinator writes CompleteCommit.
Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (the
coordinator finds the new leader and retries), INVALID_PRODUCER_EPOCH (the
producer moved on: the marker is stale), NOT_ENOUGH_REPLICAS_AFTER_APPEND /
REQUEST_TIMED_OUT (retried).

Markers on ``__consumer_offsets`` also end the producer's transactional offset
commits (TxnOffsetCommit) in the group coordinator, once written: applied on
COMMIT, dropped on ABORT.

Authorization (CLUSTER_ACTION) waits for issue 15, with the other inter-broker
APIs, which are not checked yet either.
"""

from __future__ import annotations

import asyncio

from broker.context import RequestContext
from broker.dispatch import handler
from broker.topic_names import GROUP_METADATA_TOPIC
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.WRITE_TXN_MARKERS).response
RESULT = SPEC.structs["WritableTxnMarkerResult"]
TOPIC = SPEC.structs["WritableTxnMarkerTopicResult"]
PARTITION = SPEC.structs["WritableTxnMarkerPartitionResult"]


@handler(ApiKey.WRITE_TXN_MARKERS)
async def handle_write_txn_markers(ctx: RequestContext, request: Struct) -> Struct:
    results = await asyncio.gather(*(_one(ctx, m) for m in request.markers))
    return SPEC.new(markers=list(results))


async def _one(ctx: RequestContext, marker: Struct) -> Struct:
    tps = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
    timeout_ms = int(ctx.broker.config.request_timeout_ms)
    errors = await ctx.broker.replicas.append_markers(
        timeout_ms, int(marker.producer_id), int(marker.producer_epoch),
        bool(marker.transaction_result), int(marker.coordinator_epoch), tps)
    offsets = [p for (topic, p) in tps
               if topic == GROUP_METADATA_TOPIC and errors[(topic, p)] == ErrorCode.NONE]
    groups = ctx.broker.group_coordinator
    if offsets and groups is not None:
        groups.complete_txn_offsets(int(marker.producer_id), offsets,
                                    bool(marker.transaction_result))
    by_topic: dict[str, list[Struct]] = {}
    for (topic, p) in tps:
        by_topic.setdefault(topic, []).append(
            PARTITION.new(partition_index=p, error_code=int(errors[(topic, p)])))
    return RESULT.new(producer_id=marker.producer_id, topics=[
        TOPIC.new(name=name, partitions=parts) for name, parts in by_topic.items()])
