"""EndTxn (API key 26), versions 0-4: a transactional producer commits or aborts
(Kafka's handleEndTxnRequest). With an authorizer the transactional id needs WRITE
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

The coordinator answers once PrepareCommit / PrepareAbort is written to
``__transaction_state``; the markers then go out and the transaction completes in
the background (coordinator/transaction/coordinator.py, where the answers by state are
listed). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.context import RequestContext
from broker.dispatch import handler
from coordinator.transaction.coordinator import error_for_version
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.END_TXN).response


@handler(ApiKey.END_TXN)
async def handle_end_txn(ctx: RequestContext, request: Struct) -> Struct:
    tid = request.transactional_id
    if not allowed(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        return SPEC.new(throttle_time_ms=0,
                        error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    coordinator = ctx.broker.transaction_coordinator
    if coordinator is None:
        return SPEC.new(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    error = await coordinator.end_txn(tid, int(request.producer_id), int(request.producer_epoch),
                                      bool(request.committed))
    return SPEC.new(throttle_time_ms=0,
                    error_code=int(error_for_version(error, ctx.version, fenced_from=2)))
