"""The consumer group's records in __consumer_offsets, typed (KIP-848's record
types; Kafka's group-coordinator ``ConsumerGroup*Key/Value`` messages). The byte
layouts are protocol/internal_topics.py's; record_codec.py turns these into keys
and values and back. A record whose ``tombstone`` is true is written with a null
value and deletes what its key names.

    key version  record
    3            GroupEpoch              ConsumerGroupMetadataKey/Value (Epoch)
    4            SubscriptionMetadata    ConsumerGroupPartitionMetadataKey/Value
    5            MemberSubscription      ConsumerGroupMemberMetadataKey/Value
    6            TargetAssignmentEpoch   ConsumerGroupTargetAssignmentMetadataKey/Value
    7            TargetAssignmentMember  ConsumerGroupTargetAssignmentMemberKey/Value
    8            CurrentAssignment       ConsumerGroupCurrentMemberAssignmentKey/Value
    16           RegexResolution         ConsumerGroupRegularExpressionKey/Value

Order on the log, as Kafka writes them: a join writes the member's subscription,
then the subscription metadata, then the new group epoch (replay creates a group
on any non-tombstone record of it); a member's tombstones come current-assignment
first, then target, then subscription; the group's own tombstones last.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.group.consumer.model import Assignment, ClassicMemberMetadata, MemberState, \
    ResolvedRegex, TopicMeta


@dataclass(frozen=True, slots=True)
class GroupEpoch:
    group_id: str
    epoch: int = 0
    tombstone: bool = False


@dataclass(frozen=True, slots=True)
class SubscriptionMetadata:
    group_id: str
    topics: tuple[TopicMeta, ...] = ()
    tombstone: bool = False


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    group_id: str
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    classic: ClassicMemberMetadata | None = None
    tombstone: bool = False


@dataclass(frozen=True, slots=True)
class TargetAssignmentEpoch:
    group_id: str
    assignment_epoch: int = 0
    tombstone: bool = False


@dataclass(frozen=True, slots=True)
class TargetAssignmentMember:
    group_id: str
    member_id: str
    partitions: Assignment | None = None
    tombstone: bool = False


@dataclass(frozen=True, slots=True)
class CurrentAssignment:
    group_id: str
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment | None = None
    pending_revocation: Assignment | None = None
    tombstone: bool = False


@dataclass(frozen=True, slots=True)
class RegexResolution:
    group_id: str
    regex: str
    resolved: ResolvedRegex | None = None
    tombstone: bool = False


Record = (GroupEpoch | SubscriptionMetadata | MemberSubscription | TargetAssignmentEpoch
          | TargetAssignmentMember | CurrentAssignment | RegexResolution)
