"""DescribeLogDirs (API key 35), versions 0-4, flexible from 2.

A null topic list asks for every partition in every log dir. v1 as v0
(throttling after the response); v2 flexible; v3 adds a top-level ErrorCode;
v4 adds TotalBytes and UsableBytes per log dir.
"""

from protocol.schema import field, message

REQUEST = message("DescribeLogDirsRequest", api_key=35, valid="0-4", flexible="2+", fields=[
    field("Topics", "[]DescribableLogDirTopic", "0+", nullable="0+", fields=[
        field("Topic", "string", "0+"),
        field("Partitions", "[]int32", "0+"),
    ]),
])

RESPONSE = message("DescribeLogDirsResponse", api_key=35, valid="0-4", flexible="2+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "3+", ignorable=True),
    field("Results", "[]DescribeLogDirsResult", "0+", fields=[
        field("ErrorCode", "int16", "0+"),
        field("LogDir", "string", "0+"),
        field("Topics", "[]DescribeLogDirsTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]DescribeLogDirsPartition", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("PartitionSize", "int64", "0+"),
                field("OffsetLag", "int64", "0+"),
                field("IsFutureKey", "bool", "0+"),
            ]),
        ]),
        field("TotalBytes", "int64", "4+", default=-1, ignorable=True),
        field("UsableBytes", "int64", "4+", default=-1, ignorable=True),
    ]),
])
