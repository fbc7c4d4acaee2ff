"""ListTransactions (API key 66), versions 0-1: the transactional ids this broker
coordinates (KIP-664; an admin client asks every broker and merges; ``pybroker
transactions list``).

Filters (``coordinator/transaction/inspection.py``): state names (unknown ones are echoed
in UnknownStateFilters and match nothing), producer ids, and from v1 DurationFilter:
transactions open longer than that many ms (KIP-994). Only ids the caller may
DESCRIBE are listed.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.context import RequestContext
from broker.dispatch import handler
from coordinator.transaction.inspection import list_states
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api
from storage.log import wall_clock_ms

SPEC = api(ApiKey.LIST_TRANSACTIONS).response
STATE = SPEC.structs["TransactionState"]


@handler(ApiKey.LIST_TRANSACTIONS)
async def handle_list_transactions(ctx: RequestContext, request: Struct) -> Struct:
    coordinator = ctx.broker.transaction_coordinator
    if coordinator is None:
        return SPEC.new(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    duration = int(request.duration_filter) if ctx.version >= 1 else -1
    unknown, metas = list_states(coordinator.state, request.state_filters,
                                 request.producer_id_filters, duration, wall_clock_ms())
    return SPEC.new(throttle_time_ms=0, error_code=ErrorCode.NONE, unknown_state_filters=unknown,
                    transaction_states=[
                        STATE.new(transactional_id=m.transactional_id, producer_id=m.producer_id,
                                  transaction_state=m.state.display_name)
                        for m in metas if allowed(ctx, AclOperation.DESCRIBE,
                                                  ResourceType.TRANSACTIONAL_ID,
                                                  m.transactional_id)])
