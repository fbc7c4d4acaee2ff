"""Replica states (Kafka's ReplicaStateMachine), one per (topic, partition, broker).

Legal transitions into each state:

    NewReplica                 <- NonExistentReplica
    OnlineReplica              <- NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionIneligible
    OfflineReplica             <- NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionIneligible
    ReplicaDeletionStarted     <- OfflineReplica
    ReplicaDeletionSuccessful  <- ReplicaDeletionStarted
    ReplicaDeletionIneligible  <- OfflineReplica, ReplicaDeletionStarted
    NonExistentReplica         <- ReplicaDeletionSuccessful
"""

from __future__ import annotations

from enum import Enum

from controller.partition_state_machine import IllegalStateTransition

Replica = tuple[str, int, int]  # topic, partition, broker id


class ReplicaState(Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"


_R = ReplicaState
VALID_PREVIOUS: dict[ReplicaState, frozenset[ReplicaState]] = {
    _R.NEW: frozenset({_R.NON_EXISTENT}),
    _R.ONLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE}),
    _R.OFFLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE}),
    _R.DELETION_STARTED: frozenset({_R.OFFLINE}),
    _R.DELETION_SUCCESSFUL: frozenset({_R.DELETION_STARTED}),
    _R.DELETION_INELIGIBLE: frozenset({_R.OFFLINE, _R.DELETION_STARTED}),
    _R.NON_EXISTENT: frozenset({_R.DELETION_SUCCESSFUL}),
}


class ReplicaStates:
    def __init__(self) -> None:
        self._states: dict[Replica, ReplicaState] = {}

    def get(self, r: Replica) -> ReplicaState:
        return self._states.get(r, _R.NON_EXISTENT)

    def move(self, r: Replica, target: ReplicaState) -> None:
        current = self.get(r)
        if current not in VALID_PREVIOUS[target]:
            raise IllegalStateTransition(f"replica {r}: {current.value} -> {target.value}")
        if target is _R.NON_EXISTENT:
            self._states.pop(r, None)
        else:
            self._states[r] = target

    def online_or_offline(self, r: Replica, live: bool) -> None:
        """The usual move of a replica of an existing partition: it becomes Online
        when its broker is live, Offline otherwise (from any state that allows it)."""
        target = _R.ONLINE if live else _R.OFFLINE
        if self.get(r) is _R.NON_EXISTENT:
            self.move(r, _R.NEW)
        self.move(r, target)

    def clear(self) -> None:
        self._states.clear()
