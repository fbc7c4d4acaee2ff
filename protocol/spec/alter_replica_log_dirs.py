"""AlterReplicaLogDirs (API key 34), versions 0-2, flexible from 2 (v0 deprecated in Kafka).

Moves replicas between the log dirs of one broker (JBOD). v1 is v0 (answers
before throttling); v2 goes flexible. Dirs is keyed by Path, Topics by Name.
"""

from protocol.schema import field, message

REQUEST = message("AlterReplicaLogDirsRequest", api_key=34, valid="0-2", flexible="2+", fields=[
    field("Dirs", "[]AlterReplicaLogDir", "0+", fields=[
        field("Path", "string", "0+"),
        field("Topics", "[]AlterReplicaLogDirTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
    ]),
])

RESPONSE = message("AlterReplicaLogDirsResponse", api_key=34, valid="0-2", flexible="2+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("Results", "[]AlterReplicaLogDirTopicResult", "0+", fields=[
        field("TopicName", "string", "0+"),
        field("Partitions", "[]AlterReplicaLogDirPartitionResult", "0+", fields=[
            field("PartitionIndex", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
        ]),
    ]),
])
