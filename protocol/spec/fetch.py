"""Fetch (API key 1), versions 0-17, flexible from 12.

v1-v2 as v0 (v1 adds the response ThrottleTimeMs, v2 message format 1); v3 adds
MaxBytes and makes partition order significant; v4 adds IsolationLevel,
LastStableOffset and AbortedTransactions (transactions, record batches v2); v5
adds LogStartOffset; v6 as v5; v7 adds incremental fetch sessions (SessionId,
SessionEpoch, ForgottenTopicsData, top-level ErrorCode); v8 as v7; v9 adds
CurrentLeaderEpoch (KIP-320); v10 zstd; v11 adds RackId and
PreferredReadReplica (KIP-392); v12 flexible, with LastFetchedEpoch and the
tagged ClusterId / DivergingEpoch / CurrentLeader / SnapshotId; v13 replaces
topic names with topic IDs (KIP-516); v14 as v13; v15 moves ReplicaId into the
tagged ReplicaState with ReplicaEpoch (KIP-903); v16 adds the tagged
NodeEndpoints (KIP-951); v17 adds the tagged ReplicaDirectoryId (KIP-853).
"""

from protocol.schema import field, message

REQUEST = message("FetchRequest", api_key=1, valid="0-17", flexible="12+", fields=[
    field("ClusterId", "string", "12+", nullable="12+", tagged="12+", tag=0, default=None,
          ignorable=True),
    field("ReplicaId", "int32", "0-14", default=-1),
    field("ReplicaState", "ReplicaState", "15+", tagged="15+", tag=1, fields=[
        field("ReplicaId", "int32", "15+", default=-1),
        field("ReplicaEpoch", "int64", "15+", default=-1),
    ]),
    field("MaxWaitMs", "int32", "0+"),
    field("MinBytes", "int32", "0+"),
    field("MaxBytes", "int32", "3+", default=0x7fffffff, ignorable=True),
    field("IsolationLevel", "int8", "4+", default=0, ignorable=True),
    field("SessionId", "int32", "7+", default=0, ignorable=True),
    field("SessionEpoch", "int32", "7+", default=-1, ignorable=True),
    field("Topics", "[]FetchTopic", "0+", fields=[
        field("Topic", "string", "0-12", ignorable=True),
        field("TopicId", "uuid", "13+", ignorable=True),
        field("Partitions", "[]FetchPartition", "0+", fields=[
            field("Partition", "int32", "0+"),
            field("CurrentLeaderEpoch", "int32", "9+", default=-1, ignorable=True),
            field("FetchOffset", "int64", "0+"),
            field("LastFetchedEpoch", "int32", "12+", default=-1),
            field("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
            field("PartitionMaxBytes", "int32", "0+"),
            field("ReplicaDirectoryId", "uuid", "17+", tagged="17+", tag=0, ignorable=True),
        ]),
    ]),
    field("ForgottenTopicsData", "[]ForgottenTopic", "7+", fields=[
        field("Topic", "string", "7-12", ignorable=True),
        field("TopicId", "uuid", "13+", ignorable=True),
        field("Partitions", "[]int32", "7+"),
    ]),
    field("RackId", "string", "11+", default="", ignorable=True),
])

RESPONSE = message("FetchResponse", api_key=1, valid="0-17", flexible="12+", fields=[
    field("ThrottleTimeMs", "int32", "1+", ignorable=True),
    field("ErrorCode", "int16", "7+", ignorable=True),
    field("SessionId", "int32", "7+", default=0),
    field("Responses", "[]FetchableTopicResponse", "0+", fields=[
        field("Topic", "string", "0-12", ignorable=True),
        field("TopicId", "uuid", "13+", ignorable=True),
        field("Partitions", "[]PartitionData", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("HighWatermark", "int64", "0+"),
            field("LastStableOffset", "int64", "4+", default=-1, ignorable=True),
            field("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
            field("DivergingEpoch", "EpochEndOffset", "12+", tagged="12+", tag=0, fields=[
                field("Epoch", "int32", "12+", default=-1),
                field("EndOffset", "int64", "12+", default=-1),
            ]),
            field("CurrentLeader", "LeaderIdAndEpoch", "12+", tagged="12+", tag=1, fields=[
                field("LeaderId", "int32", "12+", default=-1),
                field("LeaderEpoch", "int32", "12+", default=-1),
            ]),
            field("SnapshotId", "SnapshotId", "12+", tagged="12+", tag=2, fields=[
                field("EndOffset", "int64", "0+", default=-1),
                field("Epoch", "int32", "0+", default=-1),
            ]),
            field("AbortedTransactions", "[]AbortedTransaction", "4+", nullable="4+",
                  ignorable=True, fields=[
                field("ProducerId", "int64", "4+"),
                field("FirstOffset", "int64", "4+"),
            ]),
            field("PreferredReadReplica", "int32", "11+", default=-1),
            field("Records", "records", "0+", nullable="0+"),
        ]),
    ]),
    field("NodeEndpoints", "[]NodeEndpoint", "16+", tagged="16+", tag=0, fields=[
        field("NodeId", "int32", "16+"),
        field("Host", "string", "16+"),
        field("Port", "int32", "16+"),
        field("Rack", "string", "16+", nullable="16+", default=None),
    ]),
])
