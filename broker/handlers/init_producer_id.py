"""InitProducerId (API key 22), versions 0-5: idempotent producers.

A null TransactionalId gets a fresh producer id (from the broker's
ProducerIdManager, blocks of 1000 from ZooKeeper) and epoch 0, whatever
ProducerId/ProducerEpoch a v3+ request carries (Kafka does the same for
idempotent producers). Transactions are not implemented yet: a transactional
id is answered COORDINATOR_NOT_AVAILABLE (retriable) with a log line; an empty
one is INVALID_REQUEST, as Kafka's transaction coordinator answers.
"""

from __future__ import annotations

import logging

from broker.context import RequestContext
from broker.dispatch import handler
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
        if tid == "":
            return SPEC.new(error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1)
        log.warning("InitProducerId for transactional id %r from %s: transactions are not "
                    "supported yet, answering COORDINATOR_NOT_AVAILABLE", tid,
                    ctx.connection.peer)
        return SPEC.new(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1,
                        producer_epoch=-1)
    try:
        producer_id = await ctx.broker.producer_ids.generate_producer_id()
    except Exception as e:  # ZooKeeper unreachable or similar: the client retries
        log.warning("cannot allocate a producer id: %s", e)
        return SPEC.new(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1,
                        producer_epoch=-1)
    return SPEC.new(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)
