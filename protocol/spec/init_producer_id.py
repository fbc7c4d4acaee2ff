"""InitProducerId (API key 22), versions 0-5, flexible from 2.

v1 as v0 (responses sent before throttling); v2 flexible; v3 lets a producer
pass its current ProducerId/ProducerEpoch to resume after
INVALID_PRODUCER_EPOCH (KIP-360); v4 may return PRODUCER_FENCED; v5 may return
TRANSACTION_ABORTABLE (KIP-890).
"""

from protocol.schema import field, message

REQUEST = message("InitProducerIdRequest", api_key=22, valid="0-5", flexible="2+", fields=[
    field("TransactionalId", "string", "0+", nullable="0+"),   # null: idempotent only
    field("TransactionTimeoutMs", "int32", "0+"),
    field("ProducerId", "int64", "3+", default=-1),
    field("ProducerEpoch", "int16", "3+", default=-1),
])

RESPONSE = message("InitProducerIdResponse", api_key=22, valid="0-5", flexible="2+", fields=[
    field("ThrottleTimeMs", "int32", "0+", ignorable=True),
    field("ErrorCode", "int16", "0+"),
    field("ProducerId", "int64", "0+", default=-1),
    field("ProducerEpoch", "int16", "0+"),
])
