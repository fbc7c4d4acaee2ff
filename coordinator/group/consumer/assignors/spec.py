"""What an assignor sees and returns (Kafka's GroupSpec / MemberSubscription /
GroupAssignment), plus the rack helpers both assignors use.

A ``GroupSpec`` holds every member's subscribed topic ids (existing topics
only), rack, instance id and *current target* (stickiness is relative to the
target), and the subscribed topics' metadata by id. An assignor returns a
target for every member: every partition of a subscribed topic goes to
exactly one of its subscribers.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Protocol

from coordinator.group.consumer.model import Assignment, TopicMeta


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """What an assignor knows of one member."""
    topics: frozenset[uuid.UUID]                  # subscribed topics that exist
    rack: str | None = None
    instance_id: str | None = None
    current: Assignment = field(default_factory=dict)   # the member's current target


@dataclass(frozen=True, slots=True)
class GroupSpec:
    members: dict[str, MemberSpec]
    topics: dict[uuid.UUID, TopicMeta]            # every subscribed topic, by id

    @property
    def homogeneous(self) -> bool:
        """All members subscribe to the same topics (Kafka's SubscriptionType)."""
        first: frozenset[uuid.UUID] | None = None
        for spec in self.members.values():
            if first is None:
                first = spec.topics
            elif spec.topics != first:
                return False
        return True


class Assignor(Protocol):
    name: str

    def assign(self, spec: GroupSpec) -> dict[str, Assignment]:
        """A target assignment for every member of ``spec`` (empty ones too);
        every partition of a subscribed topic goes to exactly one of its
        subscribers when it has any."""
        ...


def partition_racks(topic: TopicMeta, partition: int) -> frozenset[str]:
    return topic.racks.get(partition, frozenset())


def uses_racks(spec: GroupSpec) -> bool:
    """Rack-awareness applies when some member has a rack and some partition
    lists replica racks."""
    if not any(m.rack for m in spec.members.values()):
        return False
    return any(t.racks for t in spec.topics.values())


def to_assignment(pairs: dict[uuid.UUID, set[int]]) -> Assignment:
    return {t: frozenset(ps) for t, ps in pairs.items() if ps}
