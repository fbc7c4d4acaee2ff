"""ListTransactions (API key 66), versions 0-1, flexible (KIP-664).

Each broker lists the transactional ids it coordinates, filtered by state name
and producer id (empty filters match everything); v1 adds DurationFilter
(KIP-994): only transactions running longer than that many ms (-1: no filter).
State names the broker does not know come back in UnknownStateFilters.
"""

from protocol.schema import field, message

REQUEST = message("ListTransactionsRequest", api_key=66, valid="0-1", flexible="0+", fields=[
    field("StateFilters", "[]string", "0+"),
    field("ProducerIdFilters", "[]int64", "0+"),
    field("DurationFilter", "int64", "1+", default=-1),
])

RESPONSE = message("ListTransactionsResponse", api_key=66, valid="0-1", flexible="0+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "0+"),
    field("UnknownStateFilters", "[]string", "0+"),
    field("TransactionStates", "[]TransactionState", "0+", fields=[
        field("TransactionalId", "string", "0+"),
        field("ProducerId", "int64", "0+"),
        field("TransactionState", "string", "0+"),
    ]),
])
