"""InitProducerId (API key 22), versions 0-5: idempotent and transactional producers.

A null TransactionalId gets a fresh producer id (from the broker's
ProducerIdManager, blocks of 1000 from ZooKeeper) and epoch 0, whatever
ProducerId/ProducerEpoch a v3+ request carries (Kafka does the same for
idempotent producers). With an authorizer it needs IDEMPOTENT_WRITE on the
cluster or WRITE on at least one topic (KIP-679; broker/acl/checks.py), else
CLUSTER_AUTHORIZATION_FAILED.

A transactional id goes to the transaction coordinator
(coordinator/transaction/coordinator.py: fencing by epoch bump, KIP-360's expected
producer id and epoch from v3, the state written to __transaction_state before
the answer); it needs WRITE on the TransactionalId resource when an authorizer
is configured (TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise; an empty id is
checked too, as Kafka). PRODUCER_FENCED
is answered INVALID_PRODUCER_EPOCH below v4, as Kafka does (KIP-588).
"""

from __future__ import annotations

import logging

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.acl.checks import idempotent_producer_allowed
from broker.context import RequestContext
from broker.dispatch import handler
from coordinator.transaction.coordinator import error_for_version
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger(__name__)

SPEC = api(ApiKey.INIT_PRODUCER_ID).response


@handler(ApiKey.INIT_PRODUCER_ID)
async def handle_init_producer_id(ctx: RequestContext, request: Struct) -> Struct:
    tid = request.transactional_id
    if tid is not None:
        return await _transactional(ctx, request, tid)
    if not idempotent_producer_allowed(ctx):
        return SPEC.new(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, producer_id=-1,
                        producer_epoch=-1)
    try:
        producer_id = await ctx.broker.producer_ids.generate_producer_id()
    except Exception as e:  # ZooKeeper unreachable or similar: the client retries
        log.warning("cannot allocate a producer id: %s", e)
        return SPEC.new(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1,
                        producer_epoch=-1)
    return SPEC.new(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)


async def _transactional(ctx: RequestContext, request: Struct, tid: str) -> Struct:
    if not allowed(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        return SPEC.new(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        producer_id=-1, producer_epoch=-1)
    coordinator = ctx.broker.transaction_coordinator
    if coordinator is None:
        return SPEC.new(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1,
                        producer_epoch=-1)
    expected = None
    if ctx.version >= 3 and request.producer_id >= 0:
        expected = (int(request.producer_id), int(request.producer_epoch))
    try:
        result = await coordinator.init_producer_id(tid, int(request.transaction_timeout_ms),
                                                    expected)
    except Exception as e:  # producer ids from ZooKeeper unreachable, or similar: retriable
        log.warning("InitProducerId for %r: %s", tid, e)
        return SPEC.new(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1,
                        producer_epoch=-1)
    error = error_for_version(result.error, ctx.version, fenced_from=4)
    return SPEC.new(error_code=int(error), producer_id=result.producer_id,
                    producer_epoch=result.producer_epoch)
