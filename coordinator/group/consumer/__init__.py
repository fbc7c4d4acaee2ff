"""Consumer groups of the next-generation protocol (KIP-848) on a ZooKeeper cluster.

The broker computes the assignment (server-side assignors); members heartbeat
with ConsumerGroupHeartbeat (key 68) and reconcile one step at a time: a
partition is revoked by its owner before it is given to another member, so no
two members own a partition at once. Apache Kafka serves this protocol only in
KRaft mode; here it runs beside the classic coordinator on a ZooKeeper cluster.

Data path: a request -> coordinator.py takes the group's lock -> group_logic
(pure) answers and returns records -> they are written to __consumer_offsets
(acks=all) -> only then replay.py applies them to the model and the answer goes
out. A coordinator that loads the partition after a failover replays the same
records (coordinator/group/classic/loader.py routes their key versions here), so the
group goes on at the same epochs, without a rebalance.

Map:

    model.py            the group, its members, assignments (the shared contract)
    records.py          the typed __consumer_offsets records of these groups
    record_codec.py     records <-> key/value bytes (layouts: protocol/internal_topics.py)
    replay.py           records -> model; the one writer of a group's state
    group_logic.py      the pure state machine: a heartbeat's validation and steps
    group_records.py    leave/fence, metadata refresh, group deletion; record builders
    target_assignment.py subscription metadata, the group's assignor, the target
    reconciliation.py   a member's next epoch/assignment from its target (revoke first)
    assignors/          uniform and range (rack-aware), pure; spec.py what they see
    regex.py            broker-side regex subscriptions (re.fullmatch)
    topic_view.py       the TopicView over the metadata cache (a versioned snapshot)
    coordinator.py      the asyncio glue: locks, timers, writes, loading, the handlers' entry
    admin_ops.py        offsets with member epochs, OffsetDelete / DeleteGroups / ListGroups
    migration.py        classic <-> consumer group conversion (group.consumer.migration.policy)
    classic_members.py  classic-protocol members inside a consumer group (pure answers)
    classic_glue.py     ... and their JoinGroup/SyncGroup/Heartbeat/LeaveGroup on the loop

The classic protocol's coordinator is coordinator/group/classic/; both share group ids,
__consumer_offsets and committed offsets (a consumer group's offsets live in the
classic coordinator's entry of the same id, an Empty classic group without members).
Operators' view: tools/consumer_groups.py, broker/metrics/group_metrics.py,
tools/console/pages_groups.py, coordinator/group/why/consumer_group_facts.py.
"""
