"""Partitions hosted by this broker: leader/follower state, purgatory, replica manager.

Map (Kafka's layers: LogSegment -> UnifiedLog (storage/) -> Partition -> ReplicaManager):

    replica_manager.py        ReplicaManager: LeaderAndIsr/StopReplica transitions, Fetch
                              with DelayedFetch
    leader_appends.py         LeaderAppends (ReplicaManager.appends): record and marker
                              appends as leader, the acks=all wait (DelayedProduce)
    fetch_reads.py            the read side of Fetch (per-partition reads, follower checks)
    fetch_sessions.py         the leader's KIP-227 fetch sessions (Broker.fetch_sessions)
    offset_lookup.py          ListOffsets: special timestamps, offset for a timestamp
    partition.py              Partition: leader/follower appends, reads, high watermark
    record_checks.py          heavy produce data (compressed, many records) validated in a
                              worker thread before the append, so the event loop goes on
    partition_isr.py          ISR expand/shrink, proposals to the controller
    partition_state.py        the LeaderAndIsr state a partition holds
    producer_state.py         idempotent/transactional producer state per partition
    purgatory.py              DelayedProduce, DelayedFetch (on coordinator/runtime/purgatory.py)
    fetcher.py                follower fetchers, one per source broker
    throttle.py               replication quotas (KIP-73): the windowed rate and
                              which replicas are throttled, leader and follower side
    leader_endpoint.py        a follower's requests to its leader (client.verbs)
    alter_partition_manager.py  AlterPartition to the controller (client.verbs), batched
    partition_txn.py          a partition's transactions: markers, aborted index, LSO
    txn_verify.py             which produce entries need KIP-890 verification first
    leader_fence.py           a leader cut off from ZooKeeper and followers refuses writes

It may import storage/, protocol/ and client/ (its outgoing requests go through
client.verbs; a test fails if a module here imports protocol.spec).
"""
