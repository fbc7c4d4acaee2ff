"""The classic group's states and their legal transitions, as one table (Kafka's
``GroupState.validPreviousStates``). Pure: no asyncio, no I/O.

    Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
      ▲                 ▲      │                                   │        ▲
      │                 │      └─every member gone──▶ Empty        │ leader │
      │                 │                                          ▼  sync  │
      │                 └──── member joins/leaves/fails ───────── Stable ───┘
    any state ──unload / delete / expiry──▶ Dead (final)

What each state answers (GroupCoordinator):
* Empty: join from new members; sync/heartbeat -> UNKNOWN_MEMBER_ID; commits
  only with generation -1 (standalone).
* PreparingRebalance: joins are parked; heartbeat/sync -> REBALANCE_IN_PROGRESS;
  commits of the current generation still allowed.
* CompletingRebalance: syncs are parked until the leader's assignment;
  commits -> REBALANCE_IN_PROGRESS.
* Stable: heartbeats, syncs (current assignment) and commits answered normally.
* Dead: the group is gone from this coordinator -> COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from enum import Enum


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


E, PR, CR, S, D = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                   GroupState.COMPLETING_REBALANCE, GroupState.STABLE, GroupState.DEAD)

# target state -> the states it may be entered from (the whole machine, once)
VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    PR: frozenset({S, CR, E}),
    CR: frozenset({PR}),
    S: frozenset({CR}),
    E: frozenset({PR}),
    D: frozenset({S, PR, CR, E, D}),
}


class IllegalStateTransition(RuntimeError):
    def __init__(self, group_id: str, current: GroupState, target: GroupState) -> None:
        super().__init__(f"group {group_id} should be in one of "
                         f"{sorted(str(s) for s in VALID_PREVIOUS[target])} before moving to "
                         f"{target}, but it is {current}")
        self.current = current
        self.target = target


def is_legal(current: GroupState, target: GroupState) -> bool:
    return current in VALID_PREVIOUS[target]


def check_transition(group_id: str, current: GroupState, target: GroupState) -> None:
    """Raise IllegalStateTransition unless ``current -> target`` is in the table."""
    if not is_legal(current, target):
        raise IllegalStateTransition(group_id, current, target)


def can_rebalance(state: GroupState) -> bool:
    """A rebalance may start from exactly the states PreparingRebalance accepts."""
    return is_legal(state, PR)


def matches_filter(state: GroupState, states_filter: set[str]) -> bool:
    """ListGroups v4+: state names compared case-insensitively; empty = all."""
    return not states_filter or state.value.lower() in {s.lower() for s in states_filter}
