"""The group coordinator: classic groups and KIP-848 consumer groups, one group id
space, one __consumer_offsets.

Map:

    classic/    the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup),
                the writes of committed offsets (OffsetCommit / OffsetFetch /
                TxnOffsetCommit, for both kinds),
                the __consumer_offsets layouts and loading
    consumer/   the consumer protocol (KIP-848 ConsumerGroupHeartbeat): the pure state
                machine, its records, assignors, and the migration between the two
    why/        what DescribeWhy reads of a group: its rebalance history and the
                reasons in words
    group_map.py          one map of the groups of both kinds (Kafka 4's
                          GroupMetadataManager.groups), with a view per kind
    committed_offsets.py  committed offsets keyed by group id, either kind (Kafka 4's
                          OffsetMetadataManager): a change of kind keeps them
"""
