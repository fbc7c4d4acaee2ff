"""What each console page shows, as plain frozen dataclasses: data.py fills
them from the cluster, the pages_* modules render them (so page rendering is
tested with hand-made values, no cluster).

Offsets are -1 where unknown; ``*_why`` fields are ``WhyAnswer``s (a
``protocol.why_model`` value or the reason it is unavailable).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from client.operator_admin import LogDirInfo
from protocol.why_model import BrokerStatus, GroupWhy, PartitionWhy
from tools.console.why_source import WhyAnswer


@dataclass(frozen=True)
class BrokerRow:
    broker_id: int
    host: str
    port: int
    rack: str | None
    status: WhyAnswer[BrokerStatus]
    log_dirs: tuple[LogDirInfo, ...] = ()     # DescribeLogDirs
    log_dirs_error: str = ""                  # why they are unknown, if they are


@dataclass(frozen=True)
class Overview:
    cluster_id: str | None
    controller_id: int
    brokers: list[BrokerRow]
    topics: int
    partitions: int
    under_replicated: int
    offline: int


@dataclass(frozen=True)
class TopicSummary:
    name: str
    internal: bool
    error: str                       # "" or the error name
    partitions: int
    replication_factor: int
    under_replicated: int
    offline: int


@dataclass(frozen=True)
class PartitionRow:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    log_start_offset: int = -1
    high_watermark: int = -1
    log_end_offset: int = -1         # the leader's
    replica_leo: dict[int, int] = field(default_factory=dict)   # from the why facts
    error: str = ""

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def offline(self) -> bool:
        return self.leader < 0


@dataclass(frozen=True)
class TopicView:
    name: str
    internal: bool
    error: str
    partitions: list[PartitionRow]
    why_note: str = ""               # why per-replica LEOs are missing, if they are


@dataclass(frozen=True)
class PartitionView:
    topic: str
    row: PartitionRow
    why: WhyAnswer[PartitionWhy]
    now_ms: int
    replica_bytes: dict[int, int] = field(default_factory=dict)   # DescribeLogDirs: broker -> size


@dataclass(frozen=True)
class GroupSummary:
    group_id: str
    state: str
    group_type: str = ""             # "Classic" / "Consumer" (KIP-848); "" unknown


@dataclass(frozen=True)
class MemberRow:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[tuple[str, int], ...]
    # consumer groups (KIP-848) only; None / () for a classic group's members
    member_epoch: int | None = None
    target_assignment: tuple[tuple[str, int], ...] | None = None
    upgraded: bool | None = None     # False: a classic-protocol member of a consumer group


@dataclass(frozen=True)
class OffsetRow:
    topic: str
    partition: int
    committed: int                   # -1: none
    log_end: int                     # the HW consumers can reach; -1 unknown
    owner: str                       # the member's client id, "-" when unassigned

    @property
    def lag(self) -> int | None:
        if self.committed < 0 or self.log_end < 0:
            return None
        return max(0, self.log_end - self.committed)


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    coordinator: tuple[int, str, int]
    members: list[MemberRow]
    offsets: list[OffsetRow]
    why: WhyAnswer[GroupWhy]
    now_ms: int
    group_type: str = "classic"      # "classic" / "consumer" (KIP-848)
    group_epoch: int | None = None           # consumer groups only
    assignment_epoch: int | None = None      # consumer groups only


@dataclass(frozen=True)
class Message:
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


@dataclass(frozen=True)
class BrowseQuery:
    topic: str = ""
    partition: int = 0
    offset: int | None = None        # None: the last ``count`` before the HW
    timestamp_ms: int | None = None  # ListOffsets by time instead of an offset
    count: int = 20


@dataclass(frozen=True)
class BrowseView:
    query: BrowseQuery
    start_offset: int
    high_watermark: int
    log_start_offset: int
    messages: list[Message]
    note: str = ""


__all__ = ["BrokerRow", "BrowseQuery", "BrowseView", "GroupSummary", "GroupView", "MemberRow",
           "Message", "OffsetRow", "Overview", "PartitionRow", "PartitionView", "TopicSummary",
           "TopicView"]
