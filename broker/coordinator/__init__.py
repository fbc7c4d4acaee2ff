"""The classic group coordinator (consumer groups and committed offsets).

Handlers reach it with ``coordinator_of(broker)``; the Broker should build it in
``start`` (``build(broker)``, then ``start()``), route __consumer_offsets
leadership to ``on_become_leader`` / ``on_resign`` and ``await shutdown()``.
Until it does, ``coordinator_of`` builds one on first use, and the coordinator
follows leadership from the replica manager by itself (see ``status``).

Map:

    group_coordinator.py  GroupCoordinator: JoinGroup, rebalances, heartbeats, LeaveGroup
    ownership.py          loading / unloading __consumer_offsets partitions (mixin)
    coordinator_partitions.py  served / loading / newest-epoch bookkeeping (shared
                          with the transaction coordinator's state manager)
    sync_ops.py           SyncGroup and the group-metadata write (mixin)
    offset_ops.py         OffsetCommit / OffsetFetch / OffsetDelete / DeleteGroups,
                          offset expiry (mixin)
    group_metadata.py     a group and its members (Kafka's GroupMetadata)
    group_state.py        the group state machine
    delayed.py            DelayedJoin / DelayedSync / DelayedHeartbeat (purgatory ops)
    loader.py             replaying a __consumer_offsets partition (LoadedPartition)
    offsets_topic.py      the __consumer_offsets key and value layouts
    coordinator_types.py  settings, request dataclasses, the group -> partition hash
    txn_offset_ops.py     TxnOffsetCommit: offsets pending in a transaction until its marker

The handlers (broker/handlers/join_group.py, sync_group.py, heartbeat.py,
offset_*.py, find_coordinator.py, ...) call the coordinator; it writes through
the ``OffsetsLog`` seam to the replica manager.
"""

from __future__ import annotations

from typing import Any

from broker.coordinator.group_coordinator import CoordinatorConfig, GroupCoordinator, \
    JoinRequest, LeaveMember, java_string_hash, partition_for_group
from broker.coordinator.group_metadata import JoinResult, SyncResult
from broker.coordinator.group_state import GroupState
from broker.coordinator.loader import OFFSETS_TOPIC, BrokerOffsetsLog
from broker.coordinator.offsets_topic import OffsetAndMetadata
from broker.metadata_cache import partition_count_or

__all__ = ["CoordinatorConfig", "GroupCoordinator", "JoinRequest", "LeaveMember", "JoinResult",
           "SyncResult", "GroupState", "OffsetAndMetadata", "OFFSETS_TOPIC", "BrokerOffsetsLog",
           "build", "coordinator_of", "java_string_hash", "partition_for_group"]


def offsets_topic_partitions(broker: Any) -> int:
    """The partition count of __consumer_offsets once it exists, else the config's."""
    return partition_count_or(broker.metadata, OFFSETS_TOPIC,
                              broker.config.offsets_topic_num_partitions)


def build(broker: Any) -> GroupCoordinator:
    """The coordinator over the broker's replica manager, logs and metadata cache."""
    coordinator = GroupCoordinator(broker.broker_id, CoordinatorConfig.from_broker(broker.config),
                                   BrokerOffsetsLog(broker),
                                   num_partitions=lambda: offsets_topic_partitions(broker))
    coordinator.consumer.configure(broker)    # KIP-848 consumer groups (issue 19)
    return coordinator


def coordinator_of(broker: Any) -> GroupCoordinator:
    coordinator: GroupCoordinator | None = broker.group_coordinator
    if coordinator is None:
        coordinator = build(broker)
        broker.group_coordinator = coordinator
        coordinator.start()
    return coordinator
