"""The consumer group (KIP-848) state: what the records in __consumer_offsets say.

This is the shared contract of the package: the state machine (group_logic.py)
reads it and emits records (records.py); ``replay.py`` applies records to it,
both when the coordinator writes them and when a coordinator loads a
__consumer_offsets partition after failover. Nothing else changes it (state
has one writer: replay).

Assignments are ``{topic_id: frozenset(partitions)}`` with topic ids as
uuid.UUID; empty topics are left out, so two equal assignments compare equal.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field

Assignment = dict[uuid.UUID, frozenset[int]]


class MemberState(enum.IntEnum):
    """A member's reconciliation state (Kafka's MemberState; the int8 in
    ConsumerGroupCurrentMemberAssignmentValue.State)."""
    STABLE = 0                  # has its target assignment at the group's assignment epoch
    UNREVOKED_PARTITIONS = 1    # must revoke partitions before it gets a new epoch
    UNRELEASED_PARTITIONS = 2   # waits for partitions other members still own
    UNKNOWN = 127


class GroupState(enum.Enum):
    """ConsumerGroupDescribe's / ListGroups' state strings for a consumer group."""
    EMPTY = "Empty"
    ASSIGNING = "Assigning"         # group epoch > assignment epoch
    RECONCILING = "Reconciling"     # some member's epoch < assignment epoch, or not stable
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class TopicMeta:
    """A subscribed topic as the assignors see it (ConsumerGroupPartitionMetadataValue)."""
    topic_id: uuid.UUID
    name: str
    partitions: int
    racks: dict[int, frozenset[str]] = field(default_factory=dict)   # partition -> replica racks


@dataclass(slots=True)
class ClassicMemberMetadata:
    """A member that still speaks the classic protocol inside a consumer group
    (migration): its session timeout and JoinGroup protocols (name, metadata)."""
    session_timeout_ms: int
    protocols: list[tuple[str, bytes]]


@dataclass(slots=True)
class Member:
    """One member: subscription (ConsumerGroupMemberMetadataValue) and current
    assignment (ConsumerGroupCurrentMemberAssignmentValue)."""
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    classic: ClassicMemberMetadata | None = None
    # current assignment
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)


@dataclass(slots=True)
class ResolvedRegex:
    """A regex subscription evaluated on the broker (ConsumerGroupRegularExpressionValue)."""
    topics: frozenset[str]
    version: int          # the metadata version it was evaluated against
    timestamp_ms: int


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)      # member id -> target
    subscription_metadata: dict[str, TopicMeta] = field(default_factory=dict)  # by name
    resolved_regexes: dict[str, ResolvedRegex] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)     # instance id -> member id
    # derived, rebuilt by replay: partition -> member epoch of its current owner
    owners: dict[tuple[uuid.UUID, int], str] = field(default_factory=dict)
