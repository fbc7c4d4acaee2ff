"""What the broker says about *why* a partition or a group is as it is: the
dataclasses the DescribeWhy admin API (pybroker's own, see client/why_admin.py
and broker/why/) decodes into, read by the web console (tools/console/).

Times are epoch milliseconds (-1: unknown). Lists of events are oldest first and
bounded by the broker (it keeps the last few per partition / group, in memory:
they say what happened since the broker became leader / coordinator).

The facts, and who keeps them:

* ``PartitionWhy`` comes from the partition's leader. ``replicas`` is the
  leader's view of every assigned replica (the LEO it last fetched from, when it
  was last caught up); ``hw_held_by`` names the ISR replicas whose LEO is the
  high watermark (the minimum LEO across the ISR) when that is below the
  leader's own LEO, i.e. the replicas holding the HW back; ``isr_changes`` are
  the ISR shrinks and expands this leader made, each with its reason.
* ``GroupWhy`` comes from the group's coordinator: the group's rebalances, each
  with what started it (a member joined, left, timed out, was replaced, ...).
* ``BrokerStatus`` comes from any broker: its ZooKeeper session state and
  whether it is the controller.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SHRINK, EXPAND = "shrink", "expand"


@dataclass(frozen=True)
class ReplicaProgress:
    """One assigned replica as the leader sees it."""

    broker_id: int
    log_end_offset: int          # the leader's own LEO for itself; -1 never fetched
    last_caught_up_ms: int       # last time its LEO reached the leader's LEO then; -1
    last_fetch_ms: int           # last Fetch from it; -1 (the leader itself: -1)
    in_isr: bool


@dataclass(frozen=True)
class IsrChange:
    """One ISR change the leader made."""

    time_ms: int
    kind: str                    # SHRINK or EXPAND
    replica: int                 # the replica removed or added
    reason: str                  # human text, e.g. "not caught up for 31,002 ms
                                 #  (replica.lag.time.max.ms=30000)"
    lag_ms: int                  # shrink: time since it was last caught up; expand: 0
    lag_messages: int            # leader LEO - its LEO at the time; -1 unknown
    isr_after: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class PartitionWhy:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: list[int]
    high_watermark: int
    log_end_offset: int          # the leader's LEO
    hw_held_by: list[int]        # ISR replicas holding the HW below the leader's LEO
    replicas: list[ReplicaProgress]
    isr_changes: list[IsrChange]


@dataclass(frozen=True)
class RebalanceEvent:
    time_ms: int
    generation: int              # the generation this rebalance produced (-1 if it failed)
    kind: str                    # "join", "leave", "timeout", "static-replace",
                                 # "metadata-change", "new-group", "deleted", ...
    member_id: str
    client_id: str
    host: str
    reason: str                  # human text; the JoinGroup/LeaveGroup Reason (KIP-800) if sent


@dataclass(frozen=True)
class GroupWhy:
    group_id: str
    state: str
    generation: int
    rebalances: list[RebalanceEvent]


@dataclass(frozen=True)
class BrokerStatus:
    broker_id: int
    zk_session_state: str        # "CONNECTED", "SUSPENDED", "LOST", ...
    is_controller: bool
    controller_id: int           # -1 unknown
    uptime_ms: int
