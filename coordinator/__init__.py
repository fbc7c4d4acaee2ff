"""The coordinators, shaped like Kafka 4's coordinator modules: the group
coordinator (classic and KIP-848 consumer groups, committed offsets) and the
transaction coordinator, on one runtime. They own their internal topics'
partitions (__consumer_offsets, __transaction_state) while this broker leads them,
keep their state in memory, write it through a seam the broker provides and load it
back after a failover.

Map:

    runtime/       what both coordinators stand on: CoordinatorRuntime (one each: the
                   log seam they write and load through, partition ownership and
                   coordinator epochs, the key -> partition hash, their tasks), the
                   purgatory of delayed operations and its timers
    group/         the group coordinator: classic/ (JoinGroup, SyncGroup, Heartbeat,
                   offsets), consumer/ (KIP-848 ConsumerGroupHeartbeat, migration
                   between the two), why/ (the rebalance histories DescribeWhy reads)
    transaction/   the transaction coordinator: InitProducerId, AddPartitionsToTxn,
                   EndTxn, markers, KIP-890 verification

Boundary: this package imports protocol and storage only (tests/unit/test_layering.py).
The broker builds the coordinators over its replica manager, metadata cache and
pools in broker/coordination/, and its handlers (broker/handlers/) call them.
"""
