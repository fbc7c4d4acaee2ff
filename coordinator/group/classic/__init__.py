"""The classic group coordinator (classic groups, and the writes of committed offsets
of both kinds of group; the groups themselves are in ../group_map.py, the offsets by
group id in ../committed_offsets.py).

Handlers reach it with ``broker.coordination.groups.coordinator_of(broker)``; the
Broker builds it in ``start`` (``groups.build(broker)``, then ``start()``), routes
__consumer_offsets leadership to ``ownership.on_become_leader`` / ``on_resign`` and
awaits ``shutdown()``.

Map:

    group_coordinator.py  GroupCoordinator: JoinGroup, rebalances, heartbeats, LeaveGroup,
                          DescribeGroups / ListGroups
    ownership.py          GroupOwnership (GroupCoordinator.ownership): loading /
                          unloading __consumer_offsets partitions
    sync_ops.py           GroupSync (GroupCoordinator.sync): SyncGroup, the group-metadata write
    offset_ops.py         GroupOffsets (GroupCoordinator.offsets): OffsetCommit /
                          OffsetFetch / OffsetDelete / DeleteGroups, offset expiry;
                          ``store`` / ``remove`` write any group's offsets
    group_metadata.py     a group and its members (Kafka's GroupMetadata)
    group_state.py        the group state machine
    delayed.py            DelayedJoin / DelayedSync / DelayedHeartbeat (purgatory ops)
                          over DelayedCallbacks
    offset_records.py     committed offsets as records: written, then replayed from the
                          bytes written (the one writer of an id's committed offsets)
    loader.py             replaying a __consumer_offsets partition (LoadedPartition)
    offsets_topic.py      the __consumer_offsets key and value layouts
    coordinator_types.py  settings, request dataclasses, purgatory keys, the write-error
                          mapping (and, re-exported, the group -> partition hash)
    port.py               ClassicGroups: what the consumer-group side uses of this
                          coordinator (a Protocol, so consumer/ never imports it)
    txn_offset_ops.py     TxnOffsets (GroupCoordinator.txn): TxnOffsetCommit, offsets pending
                          in a transaction until its marker

The handlers (broker/handlers/join_group.py, sync_group.py, heartbeat.py,
offset_*.py, find_coordinator.py, ...) call the coordinator; it writes through
the ``OffsetsLog`` seam (coordinator/runtime/log_seam.py) to the replica manager;
partition ownership is coordinator/runtime/partitions.py, its delayed operations
wait in coordinator/runtime/purgatory.py.
"""

from __future__ import annotations

from coordinator.group.classic.group_coordinator import CoordinatorConfig, GroupCoordinator, \
    JoinRequest, LeaveMember, java_string_hash, partition_for_group
from coordinator.group.classic.group_metadata import JoinResult, SyncResult
from coordinator.group.classic.group_state import GroupState
from coordinator.group.classic.loader import OFFSETS_TOPIC
from coordinator.group.classic.offsets_topic import OffsetAndMetadata

__all__ = ["CoordinatorConfig", "GroupCoordinator", "JoinRequest", "LeaveMember", "JoinResult",
           "SyncResult", "GroupState", "OffsetAndMetadata", "OFFSETS_TOPIC", "java_string_hash",
           "partition_for_group"]

