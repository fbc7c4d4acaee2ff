"""AddOffsetsToTxn (API key 25), versions 0-4, flexible from 3.

Adds the group's __consumer_offsets partition to the transaction before
TxnOffsetCommit. v1 as v0 (responses sent before throttling); v2 may return
PRODUCER_FENCED; v3 flexible; v4 may return TRANSACTION_ABORTABLE (KIP-890).
"""

from protocol.schema import field, message

REQUEST = message("AddOffsetsToTxnRequest", api_key=25, valid="0-4", flexible="3+", fields=[
    field("TransactionalId", "string", "0+"),
    field("ProducerId", "int64", "0+"),
    field("ProducerEpoch", "int16", "0+"),
    field("GroupId", "string", "0+"),
])

RESPONSE = message("AddOffsetsToTxnResponse", api_key=25, valid="0-4", flexible="3+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "0+"),
])
