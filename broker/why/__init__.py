"""Why: the few facts the broker keeps to explain what operators see, and the
DescribeWhy admin API that serves them (issue 18, the web console's "why").

What each fact answers:

* why a partition's ISR is what it is: the last ISR changes its leader made
  (shrink / expand, which replica, when, the reason, how far behind in ms and
  messages, the ISR after); kept per partition by its leader;
* why its high watermark is where it is: the ISR replicas whose LEO is the HW
  while the leader's LEO is beyond it (``hw_held_by``), with the leader's view of
  every replica (LEO, last caught up, last fetch);
* why a group last rebalanced: the last rebalances with what started each (who
  joined, rejoined, left, timed out, was replaced, the group deleted), the
  member id, client id, host and the client's KIP-800 reason; for a consumer
  group (KIP-848) its group epoch bumps and what caused each;
* the broker itself: ZooKeeper session state, controller, uptime.

All in memory, bounded (the last 32 events per partition and per group; at most
10,000 groups), written only by the code paths where things happen (one
writer), lost on restart: they say what happened since this broker became the
partition's leader / the group's coordinator.

Map:

    isr_history.py    IsrHistory: a partition's ISR changes (propose -> commit)
    isr_facts.py      the replication hooks (shrink/expand proposed, committed,
                      LeaderAndIsr) and the PartitionWhy view (hw_held_by, replicas)
    broker_status.py  ZkSessionWatch and BrokerStatus
    reasons.py        the ISR reasons' texts

The groups' facts live with the group coordinator, in coordinator/group/why/
(group_history.py: rebalance events per group; group_facts.py: the coordinator
hooks and the GroupWhy view; consumer_group_facts.py: each KIP-848 group epoch
bump and its cause, read from the records the coordinator applies).

Hook points (small calls, the logic is here): broker/replication/partition_isr.py
(maybe_shrink_isr, maybe_expand_isr, on_alter_partition_answer),
broker/replication/partition.py (make_leader: a LeaderAndIsr that changes the
ISR of a partition we keep leading), coordinator/group/classic/group_coordinator.py
(joins, rejoins, static replacement, leave, session expiry, rebalance and sync
timeouts, a new generation), coordinator/group/classic/offset_ops.py (DeleteGroups),
coordinator/group/consumer/coordinator.py (consumer_group_facts.epoch_bumped before
each batch of records is replayed),
broker/broker.py (the ZooKeeper session watch).

The DescribeWhy API (pybroker's own; schema protocol/spec/pybroker/describe_why.py,
handler broker/handlers/describe_why.py, client client/why_admin.py, the
dataclasses protocol/why_model.py):

    API key 10000 (outside Kafka's range), version 0, flexible; never listed in
    ApiVersions (stock clients never see it; our client sends it at v0 knowing
    it talks to pybroker).

    Request:  Resources [ {ResourceType int8, ResourceName string, Partition int32} ]
              ResourceType BROKER = 1 (name "" or this broker's id),
              PARTITION = 2 (name = topic, Partition = index), GROUP = 3 (name = group id)
    Response: ThrottleTimeMs int32,
              Results [ {ErrorCode int16, ErrorMessage string?, ResourceType,
                         ResourceName, Partition,
                         BrokerStatus? {BrokerId, ZkSessionState, IsController,
                                        ControllerId, UptimeMs},
                         PartitionWhy? {Leader, LeaderEpoch, Isr [], HighWatermark,
                                        LogEndOffset, HwHeldBy [], Replicas [..],
                                        IsrChanges [..]},
                         GroupWhy? {State, Generation, Rebalances [..]} } ]
              one result per resource, in the request's order; on success the
              struct of its type is set and the other two are null.

    Errors per resource: PARTITION asked of a broker that is not its leader ->
    NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION if the cluster does not
    know it); GROUP asked of a broker that is not its coordinator ->
    NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while loading); BROKER with
    another broker's id or an unknown type -> INVALID_REQUEST. ACLs as
    DescribeConfigs: DESCRIBE on the topic (TOPIC_AUTHORIZATION_FAILED), on the
    group (GROUP_AUTHORIZATION_FAILED), on the cluster for BROKER
    (CLUSTER_AUTHORIZATION_FAILED). More than 1,000 resources in one request:
    a single INVALID_REQUEST result (the decoder itself refuses lists longer
    than the bytes that carry them, as for every API).
"""
