"""Partition states and leader election rules (Kafka's PartitionStateMachine).

States and the legal transitions into each (anything else raises):

    NonExistent  <- Offline                (topic deleted)
    New          <- NonExistent            (assignment known, no state znode yet)
    Online       <- New, Online, Offline   (a leader was elected)
    Offline      <- New, Online, Offline   (its leader died / deletion started)

The election functions are pure: given the replicas, the current ISR and who is
live, they return the new (leader, isr) or None when no leader can be chosen.
"""

from __future__ import annotations

from enum import Enum

from controller.zkdata import NO_LEADER

TopicPartition = tuple[str, int]


class PartitionState(Enum):
    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


_P = PartitionState
VALID_PREVIOUS: dict[PartitionState, frozenset[PartitionState]] = {
    _P.NON_EXISTENT: frozenset({_P.OFFLINE}),
    _P.NEW: frozenset({_P.NON_EXISTENT}),
    _P.ONLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
    _P.OFFLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
}


class IllegalStateTransition(Exception):
    pass


class PartitionStates:
    """The state of every partition the controller knows, with checked moves."""

    def __init__(self) -> None:
        self._states: dict[TopicPartition, PartitionState] = {}

    def get(self, tp: TopicPartition) -> PartitionState:
        return self._states.get(tp, _P.NON_EXISTENT)

    def move(self, tp: TopicPartition, target: PartitionState) -> None:
        current = self.get(tp)
        if current not in VALID_PREVIOUS[target]:
            raise IllegalStateTransition(f"{tp}: {current.value} -> {target.value}")
        if target is _P.NON_EXISTENT:
            self._states.pop(tp, None)
        else:
            self._states[tp] = target

    def count(self, state: PartitionState) -> int:
        return sum(1 for s in self._states.values() if s is state)

    def in_state(self, state: PartitionState) -> list[TopicPartition]:
        return sorted(tp for tp, s in self._states.items() if s is state)

    def clear(self) -> None:
        self._states.clear()


# --- election rules ---------------------------------------------------------------------

def initial_leader(replicas: list[int], live: set[int]) -> tuple[int, list[int]] | None:
    """New partition: leader = first live replica in assignment order, ISR = the
    live replicas."""
    isr = [r for r in replicas if r in live]
    return (isr[0], isr) if isr else None


def offline_leader(replicas: list[int], isr: tuple[int, ...] | list[int], live: set[int],
                   unclean: bool, keep: frozenset[int] | set[int] = frozenset()
                   ) -> tuple[int, list[int]] | None:
    """Leader gone: first replica (assignment order) that is live and in the ISR;
    ISR = its live members, and the members in ``keep`` (live brokers that may not
    lead now but stay in sync: a controller failover's restarted leaders). With
    unclean election allowed and no such replica, the first live replica with
    ISR = [it] (may lose data)."""
    live_isr = [r for r in isr if r in live]
    for r in replicas:
        if r in live_isr:
            return r, [m for m in isr if m in live or m in keep]
    if unclean:
        for r in replicas:
            if r in live:
                return r, [r]
    return None


def controlled_shutdown_leader(replicas: list[int], isr: tuple[int, ...] | list[int],
                               live: set[int], shutting_down: set[int]
                               ) -> tuple[int, list[int]] | None:
    """Move leadership off brokers shutting down: first live ISR replica that is
    not shutting down; the shutting-down brokers leave the ISR."""
    new_isr = [r for r in isr if r not in shutting_down]
    for r in replicas:
        if r in live and r in new_isr:
            return r, new_isr
    return None


def without_replicas(leader: int, isr: tuple[int, ...], gone: set[int]) -> tuple[int, list[int]]:
    """Kafka's removeReplicasFromIsr: drop ``gone`` brokers from the ISR, keeping
    the last member so it is known who may lead when it returns; a gone leader
    becomes NO_LEADER."""
    kept = [r for r in isr if r not in gone]
    new_isr = kept if kept else list(isr[:1])
    return (NO_LEADER if leader in gone else leader), new_isr
