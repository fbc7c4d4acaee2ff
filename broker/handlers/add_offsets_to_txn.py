"""AddOffsetsToTxn (API key 25), versions 0-4: a transactional producer that will
commit a group's offsets in its transaction (sendOffsetsToTransaction) first adds the
group's ``__consumer_offsets`` partition to the transaction, so that the commit or
abort marker reaches it (Kafka's handleAddOffsetsToTxnRequest).

With an authorizer the transactional id needs WRITE
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and the group READ
(GROUP_AUTHORIZATION_FAILED). The answer is the coordinator's, as for
AddPartitionsToTxn (PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2).
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.context import RequestContext
from broker.dispatch import handler
from protocol.topic_names import GROUP_METADATA_TOPIC
from coordinator.transaction.coordinator import error_for_version
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.ADD_OFFSETS_TO_TXN).response


@handler(ApiKey.ADD_OFFSETS_TO_TXN)
async def handle_add_offsets_to_txn(ctx: RequestContext, request: Struct) -> Struct:
    return SPEC.new(throttle_time_ms=0, error_code=int(await _add(ctx, request)))


async def _add(ctx: RequestContext, request: Struct) -> int:
    tid = request.transactional_id
    if not allowed(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    coordinator = ctx.broker.transaction_coordinator
    groups = ctx.broker.group_coordinator
    if coordinator is None or groups is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    offsets_partition = (GROUP_METADATA_TOPIC, groups.partition_for(request.group_id))
    error = await coordinator.add_partitions(tid, int(request.producer_id),
                                             int(request.producer_epoch), [offsets_partition])
    return error_for_version(error, ctx.version, fenced_from=2)
