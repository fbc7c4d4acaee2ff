"""AddPartitionsToTxn (API key 24), versions 0-5: a transactional producer names the
partitions it is about to write to, before its first batch to each (Kafka's
handleAddPartitionsToTxnRequest).

v0-3 (clients): one transaction. With an authorizer, the transactional id needs
WRITE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition otherwise); each
topic needs WRITE (TOPIC_AUTHORIZATION_FAILED) and must exist
(UNKNOWN_TOPIC_OR_PARTITION); an internal topic is never WRITE-authorized here
(TOPIC_AUTHORIZATION_FAILED, authorizer or not, as Kafka: its offsets partition
comes through AddOffsetsToTxn); when any partition fails so, the others are answered
OPERATION_NOT_ATTEMPTED and nothing is added. Otherwise the coordinator's answer
(coordinator/transaction/coordinator.py) is every partition's: NONE, NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS, INVALID_PRODUCER_ID_MAPPING,
PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below v2).

v4+ (brokers, KIP-890): several transactions, each added or, with VerifyOnly,
checked (every partition NONE when it is in the producer's ongoing transaction,
INVALID_TXN_STATE when not); a top-level ErrorCode (NONE). This broker-to-broker
form needs CLUSTER_ACTION on the cluster (else a top-level
CLUSTER_AUTHORIZATION_FAILED and no results), and no transactional-id or topic ACLs.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.acl.checks import authorized_names, cluster_action_denied
from broker.context import RequestContext
from broker.dispatch import handler
from broker.handler_support import partition_exists
from protocol.topic_names import is_internal
from coordinator.transaction.coordinator import error_for_version
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.ADD_PARTITIONS_TO_TXN).response
RESULT = SPEC.structs["AddPartitionsToTxnResult"]
TOPIC = SPEC.structs["AddPartitionsToTxnTopicResult"]
PARTITION = SPEC.structs["AddPartitionsToTxnPartitionResult"]

TP = tuple[str, int]


@handler(ApiKey.ADD_PARTITIONS_TO_TXN)
async def handle_add_partitions_to_txn(ctx: RequestContext, request: Struct) -> Struct:
    if ctx.version >= 4:
        if cluster_action_denied(ctx):
            return SPEC.new(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            results_by_transaction=[])
        results = [RESULT.new(transactional_id=t.transactional_id,
                              topic_results=_topics(await _broker_form(ctx, t)))
                   for t in request.transactions]
        return SPEC.new(throttle_time_ms=0, error_code=ErrorCode.NONE,
                        results_by_transaction=results)
    tid = request.v3_and_below_transactional_id
    tps = _partitions(request.v3_and_below_topics)
    errors: dict[TP, int]
    if not allowed(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        errors = dict.fromkeys(tps, int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    else:
        writable = authorized_names(ctx, AclOperation.WRITE, ResourceType.TOPIC,
                                    (t for t, _ in tps if not is_internal(t)))
        errors = await _add(ctx, tid, int(request.v3_and_below_producer_id),
                            int(request.v3_and_below_producer_epoch), tps, writable)
    return SPEC.new(throttle_time_ms=0, results_by_topic_v3_and_below=_topics(errors))


async def _add(ctx: RequestContext, tid: str, producer_id: int, producer_epoch: int,
               tps: list[TP], writable: set[str]) -> dict[TP, int]:
    """Add ``tps`` to the transaction, unless one is not in ``writable`` or unknown."""
    refused: dict[TP, int] = {}
    for tp in tps:
        if tp[0] not in writable:
            refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif not partition_exists(ctx.broker.metadata, *tp):
            refused[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if refused:
        return {tp: refused.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in tps}
    coordinator = ctx.broker.transaction_coordinator
    if coordinator is None:
        return dict.fromkeys(tps, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    error = await coordinator.add_partitions(tid, producer_id, producer_epoch, tps)
    return dict.fromkeys(tps, error_for_version(error, ctx.version, fenced_from=2))


async def _broker_form(ctx: RequestContext, txn: Struct) -> dict[TP, int]:
    tps = _partitions(txn.topics)
    coordinator = ctx.broker.transaction_coordinator
    if coordinator is None:
        return dict.fromkeys(tps, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    pid, epoch = int(txn.producer_id), int(txn.producer_epoch)
    if txn.verify_only:
        return coordinator.verify_partitions(txn.transactional_id, pid, epoch, tps)
    return await _add(ctx, txn.transactional_id, pid, epoch, tps, {t for t, _ in tps})


def _partitions(topics: list[Struct]) -> list[TP]:
    return [(t.name, p) for t in topics for p in t.partitions]


def _topics(errors: dict[TP, int]) -> list[Struct]:
    by_topic: dict[str, list[Struct]] = {}
    for (topic, p), error in errors.items():
        by_topic.setdefault(topic, []).append(
            PARTITION.new(partition_index=p, partition_error_code=int(error)))
    return [TOPIC.new(name=name, results_by_partition=parts) for name, parts in by_topic.items()]
