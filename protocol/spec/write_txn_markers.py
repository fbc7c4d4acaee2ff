"""WriteTxnMarkers (API key 27), versions 0-1, flexible from 1.

Sent by the transaction coordinator to partition leaders to append COMMIT or
ABORT control batches. v1 only makes the message flexible.
"""

from protocol.schema import field, message

REQUEST = message("WriteTxnMarkersRequest", api_key=27, valid="0-1", flexible="1+", fields=[
    field("Markers", "[]WritableTxnMarker", "0+", fields=[
        field("ProducerId", "int64", "0+"),
        field("ProducerEpoch", "int16", "0+"),
        field("TransactionResult", "bool", "0+"),   # False: ABORT, True: COMMIT
        field("Topics", "[]WritableTxnMarkerTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("PartitionIndexes", "[]int32", "0+"),
        ]),
        field("CoordinatorEpoch", "int32", "0+"),
    ]),
])

RESPONSE = message("WriteTxnMarkersResponse", api_key=27, valid="0-1", flexible="1+", fields=[
    field("Markers", "[]WritableTxnMarkerResult", "0+", fields=[
        field("ProducerId", "int64", "0+"),
        field("Topics", "[]WritableTxnMarkerTopicResult", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]WritableTxnMarkerPartitionResult", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
            ]),
        ]),
    ]),
])
