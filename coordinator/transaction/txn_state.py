"""A transactional id's state on its coordinator (Kafka's TransactionState and
TransactionMetadata), without I/O.

The state machine (Kafka 3.9, ``TransactionState.validPreviousStates``)::

    Empty ──AddPartitions──> Ongoing ──EndTxn(commit)──> PrepareCommit ──markers──> CompleteCommit
      ^                      │  │  └──EndTxn(abort) / timeout──> PrepareAbort ──markers──> CompleteAbort
      │                      │  └──InitProducerId while ongoing──> PrepareEpochFence ──> PrepareAbort
      └── InitProducerId <───┴── (CompleteCommit / CompleteAbort / Empty start the next one)
    Empty / CompleteCommit / CompleteAbort ──transactional.id.expiration.ms──> Dead (tombstone)

A transition is checked against the previous state before the coordinator
writes it to ``__transaction_state``; the byte id of each state is what the log
value's TransactionStatus holds, and the name is what DescribeTransactions and
ListTransactions report.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


class TxnState(enum.IntEnum):
    """Byte ids as in ``__transaction_state`` values (TransactionStatus)."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """'PrepareCommit' etc.: DescribeTransactions / ListTransactions names."""
        return _NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> TxnState:
        """The state called ``name`` (ListTransactions' StateFilters); ValueError if none."""
        for state, text in _NAMES.items():
            if text == name:
                return state
        raise ValueError(f"unknown transaction state {name!r}")

    @property
    def is_complete(self) -> bool:
        """No transaction in flight: a new one may begin, or the id may expire."""
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @property
    def is_preparing(self) -> bool:
        """Markers are being written; requests for the id answer CONCURRENT_TRANSACTIONS."""
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)


_NAMES = {
    TxnState.EMPTY: "Empty", TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit", TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit", TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead", TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}

_COMPLETE = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: _COMPLETE,
    TxnState.ONGOING: _COMPLETE | {TxnState.ONGOING},
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    TxnState.PREPARE_ABORT: frozenset({TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE}),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: _COMPLETE,
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.ONGOING}),
}


class IllegalTransition(Exception):
    """A transition the state machine forbids (a coordinator bug, never a client error)."""


TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class TxnMetadata:
    """What the coordinator keeps per transactional id (and writes to the log).

    ``producer_id``/``producer_epoch`` are the current ones; ``last_producer_id``
    and ``last_producer_epoch`` the ones before the last bump, so that a retry
    of InitProducerId from the previous epoch (KIP-360) can be recognised.
    Timestamps are ms; ``txn_start_timestamp`` is -1 with no transaction."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH

    def transition(self, to: TxnState, now_ms: int, **changes: Any) -> TxnMetadata:
        """A copy in state ``to`` (with ``changes``), last updated at ``now_ms``;
        IllegalTransition when ``to`` may not follow the current state."""
        if self.state not in VALID_PREVIOUS[to]:
            raise IllegalTransition(f"transactional id {self.transactional_id!r}: "
                                    f"{self.state.display_name} -> {to.display_name}")
        return replace(self, state=to, txn_last_update_timestamp=now_ms, **changes)

    def has_timed_out(self, now_ms: int) -> bool:
        """An Ongoing transaction past its timeout (the coordinator aborts it)."""
        return (self.state is TxnState.ONGOING and self.txn_start_timestamp >= 0
                and now_ms > self.txn_start_timestamp + self.txn_timeout_ms)


__all__ = ["NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "VALID_PREVIOUS", "IllegalTransition",
           "TopicPartition", "TxnMetadata", "TxnState"]
