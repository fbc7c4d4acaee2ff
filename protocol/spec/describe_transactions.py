"""DescribeTransactions (API key 65), version 0, flexible (KIP-664).

Asked of a transactional id's coordinator: the id's state by name (Empty,
Ongoing, PrepareCommit, ...), timeout, start time, producer id and epoch, and
the partitions in its transaction.
"""

from protocol.schema import field, message

REQUEST = message("DescribeTransactionsRequest", api_key=65, valid="0", flexible="0+", fields=[
    field("TransactionalIds", "[]string", "0+"),
])

RESPONSE = message("DescribeTransactionsResponse", api_key=65, valid="0", flexible="0+",
                   fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("TransactionStates", "[]TransactionState", "0+", fields=[
        field("ErrorCode", "int16", "0+"),
        field("TransactionalId", "string", "0+"),
        field("TransactionState", "string", "0+"),
        field("TransactionTimeoutMs", "int32", "0+"),
        field("TransactionStartTimeMs", "int64", "0+"),
        field("ProducerId", "int64", "0+"),
        field("ProducerEpoch", "int16", "0+"),
        field("Topics", "[]TopicData", "0+", fields=[
            field("Topic", "string", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
    ]),
])
