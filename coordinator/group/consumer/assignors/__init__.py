"""Server-side assignors of consumer groups (KIP-848), by name.

An assignor is a pure function from a ``GroupSpec`` (every member's rack,
instance id, subscribed topic ids and *current target* assignment) and the
subscribed topics' metadata to a new target assignment for every member.
Assignors are deterministic: the same input gives the same output (members
and partitions are walked in sorted order), so a coordinator that reloads a
group after failover computes what the previous one would have.

    uniform   balanced across members, sticky (members keep what they had
              while it fits the balance), for homogeneous and heterogeneous
              subscriptions; rack-aware for the partitions it moves.
    range     Kafka's range: per topic, contiguous ranges in member order
              (static members by instance id first), so co-partitioned
              topics line up; rack-aware inside each topic's quotas.
    spec      what an assignor sees and returns (GroupSpec, MemberSpec, TopicMeta)

Rack-awareness: a member with a rack prefers partitions that have a replica
in that rack (``TopicMeta.racks``); it never beats balance.
"""

from __future__ import annotations

from coordinator.group.consumer.assignors.range import RangeAssignor
from coordinator.group.consumer.assignors.spec import Assignor, GroupSpec, MemberSpec, \
    partition_racks, to_assignment, uses_racks
from coordinator.group.consumer.assignors.uniform import UniformAssignor

__all__ = ["ASSIGNORS", "Assignor", "GroupSpec", "MemberSpec", "RangeAssignor",
           "UniformAssignor", "assignor_named", "partition_racks", "to_assignment",
           "uses_racks"]

ASSIGNORS: dict[str, Assignor] = {"uniform": UniformAssignor(), "range": RangeAssignor()}


def assignor_named(name: str) -> Assignor:
    """The assignor called ``name``; KeyError names the known ones."""
    try:
        return ASSIGNORS[name]
    except KeyError:
        raise KeyError(f"unknown assignor {name!r}; known: {', '.join(ASSIGNORS)}") from None
