"""The group coordinator: classic groups and KIP-848 consumer groups, one group id
space, one __consumer_offsets.

Map:

    classic/    the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup),
                committed offsets (OffsetCommit / OffsetFetch / TxnOffsetCommit),
                the __consumer_offsets layouts and loading
    consumer/   the consumer protocol (KIP-848 ConsumerGroupHeartbeat): the pure state
                machine, its records, assignors, and the migration between the two
    why/        what DescribeWhy reads of a group: its rebalance history and the
                reasons in words
"""
