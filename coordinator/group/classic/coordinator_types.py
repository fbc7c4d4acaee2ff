"""The group coordinator's plain data: its settings, the JoinGroup and LeaveGroup
inputs, and (from coordinator/runtime/partitions.py) the group -> __consumer_offsets
partition hash. No state and no event loop here; the coordinator itself is in
``group_coordinator``, which re-exports these names.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from coordinator.group.classic.group_metadata import Protocols
from coordinator.runtime.partitions import java_string_hash, partition_for_group
from protocol.errors import ErrorCode

INT32_MAX = 2**31 - 1


# purgatory keys: a group's rebalance, its pending-sync deadline, a member's session
def join_key(group_id: str) -> Hashable:
    return ("join", group_id)


def sync_key(group_id: str) -> Hashable:
    return ("sync", group_id)


def member_key(group_id: str, member_id: str) -> Hashable:
    return ("member", group_id, member_id)


def group_write_error(error: int) -> int:
    """Kafka's storeGroup error mapping."""
    if error == ErrorCode.NONE:
        return ErrorCode.NONE
    if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                 ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error == ErrorCode.REQUEST_TIMED_OUT:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.UNKNOWN_SERVER_ERROR

@dataclass(frozen=True)
class CoordinatorConfig:
    """Kafka's group coordinator settings (server.properties keys with '_')."""

    offsets_topic_num_partitions: int = 50
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = INT32_MAX
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    offsets_commit_timeout_ms: int = 5000

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000

    @classmethod
    def from_broker(cls, config: Any) -> CoordinatorConfig:
        """Every field from the broker config when it has it, else Kafka's default."""
        values = {name: getattr(config, name) for name in cls.__dataclass_fields__
                  if getattr(config, name, None) is not None}
        return cls(**values)


@dataclass
class JoinRequest:
    group_id: str
    member_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    group_instance_id: str | None = None
    require_known_member_id: bool = False   # v4+ dynamic members (KIP-394)
    support_skip_assignment: bool = False   # v9+
    client_id: str = ""
    client_host: str = ""
    reason: str | None = None


@dataclass
class LeaveMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None
    error: int = field(default=ErrorCode.NONE)


__all__ = ["CoordinatorConfig", "JoinRequest", "LeaveMember", "group_write_error",
           "java_string_hash", "join_key", "member_key", "partition_for_group", "sync_key"]
