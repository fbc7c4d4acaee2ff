"""DescribeTransactions (API key 65), version 0: transactional ids' states on their
coordinator (KIP-664; ``pybroker transactions describe``).

Per id (``coordinator/transaction/inspection.py``): TRANSACTIONAL_ID_AUTHORIZATION_FAILED
without DESCRIBE on it; NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS when another
broker coordinates it or its partition is loading; TRANSACTIONAL_ID_NOT_FOUND when
unknown; else the state's name, timeout, start time (-1: no transaction), producer id
and epoch, and the partitions in the transaction by topic (only topics the caller
may DESCRIBE, as Kafka).
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.context import RequestContext
from broker.dispatch import handler
from coordinator.transaction.inspection import describe
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.DESCRIBE_TRANSACTIONS).response
STATE = SPEC.structs["TransactionState"]
TOPIC = SPEC.structs["TopicData"]


@handler(ApiKey.DESCRIBE_TRANSACTIONS)
async def handle_describe_transactions(ctx: RequestContext, request: Struct) -> Struct:
    return SPEC.new(throttle_time_ms=0, transaction_states=[
        _one(ctx, tid) for tid in request.transactional_ids])


def _one(ctx: RequestContext, tid: str) -> Struct:
    empty = STATE.new(transactional_id=tid, transaction_state="", transaction_timeout_ms=0,
                      transaction_start_time_ms=-1, producer_id=-1, producer_epoch=-1)
    if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
        empty.error_code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return empty
    coordinator = ctx.broker.transaction_coordinator
    error, meta = (ErrorCode.COORDINATOR_NOT_AVAILABLE, None) if coordinator is None \
        else describe(coordinator.state, tid)
    if meta is None:
        empty.error_code = error
        return empty
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return STATE.new(error_code=ErrorCode.NONE, transactional_id=tid,
                     transaction_state=meta.state.display_name,
                     transaction_timeout_ms=meta.txn_timeout_ms,
                     transaction_start_time_ms=meta.txn_start_timestamp,
                     producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
                     topics=[TOPIC.new(topic=t, partitions=ps) for t, ps in by_topic.items()
                             if allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t)])
