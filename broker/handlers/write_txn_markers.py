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
REQUEST_TIMED_OUT (retried); INVALID_PRODUCER_ID_MAPPING for a marker naming no producer
(a negative producer id or epoch: no control batch can carry it).

Markers on ``__consumer_offsets`` also end the producer's transactional offset
commits (TxnOffsetCommit) in the group coordinator, once written: applied on
COMMIT, dropped on ABORT.

ACLs (broker/acl): ALTER on the cluster (that denial not logged) or else
CLUSTER_ACTION, as Kafka; without either every partition of every marker
answers CLUSTER_AUTHORIZATION_FAILED and nothing is written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from broker.acl.acl_model import AclOperation
from broker.acl.authorizer import allowed_cluster
from broker.acl.checks import cluster_action_denied
from broker.context import RequestContext
from broker.dispatch import handler
from broker.coordination.local_markers import write_markers
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
    if not allowed_cluster(ctx, AclOperation.ALTER, log_denied=False) \
            and cluster_action_denied(ctx):
        return SPEC.new(markers=[_result(m, lambda _tp: ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
                                 for m in request.markers])
    results = await asyncio.gather(*(_one(ctx, m) for m in request.markers))
    return SPEC.new(markers=list(results))


async def _one(ctx: RequestContext, marker: Struct) -> Struct:
    if marker.producer_id < 0 or marker.producer_epoch < 0:
        # no producer a marker could end (a forged request): nothing is written
        return _result(marker, lambda _tp: ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    tps = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
    errors = await write_markers(ctx.broker, int(marker.producer_id),
                                 int(marker.producer_epoch), bool(marker.transaction_result),
                                 int(marker.coordinator_epoch), tps)
    return _result(marker, lambda tp: errors[tp])


def _result(marker: Struct, error_of: Callable[[tuple[str, int]], int]) -> Struct:
    by_topic: dict[str, list[Struct]] = {}
    for t in marker.topics:
        for p in t.partition_indexes:
            by_topic.setdefault(t.name, []).append(
                PARTITION.new(partition_index=p, error_code=int(error_of((t.name, p)))))
    return RESULT.new(producer_id=marker.producer_id, topics=[
        TOPIC.new(name=name, partitions=parts) for name, parts in by_topic.items()])
