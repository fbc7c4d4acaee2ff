"""What DescribeTransactions and ListTransactions read of the coordinator's state
(``TransactionStateManager.ids``), kept out of the coordinator: read-only, no writes.

* ``describe``: one id's state on this coordinator: NOT_COORDINATOR or
  COORDINATOR_LOAD_IN_PROGRESS when its ``__transaction_state`` partition is not
  served here (yet), TRANSACTIONAL_ID_NOT_FOUND when unknown (or Dead).
* ``list_states``: the ids of every partition loaded here, filtered by state names
  (unknown names are returned separately and match nothing, as Kafka), producer ids
  and, KIP-994, a minimum running time of the open transaction.
"""

from __future__ import annotations

from collections.abc import Iterable

from coordinator.transaction.state_manager import TransactionStateManager
from coordinator.transaction.txn_state import TxnMetadata, TxnState
from protocol.errors import ErrorCode


def describe(state: TransactionStateManager, transactional_id: str
             ) -> tuple[int, TxnMetadata | None]:
    status = state.status(transactional_id)
    if status is not None:
        return status, None
    meta = state.get(transactional_id)
    if meta is None or meta.state is TxnState.DEAD:
        return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
    return ErrorCode.NONE, meta


def list_states(state: TransactionStateManager, state_names: Iterable[str],
                producer_ids: Iterable[int], min_duration_ms: int, now_ms: int
                ) -> tuple[list[str], list[TxnMetadata]]:
    """-> (unknown state names, the matching ids' states, by id)."""
    wanted: set[TxnState] = set()
    unknown: list[str] = []
    names = list(state_names)
    for name in names:
        try:
            wanted.add(TxnState.from_name(name))
        except ValueError:
            unknown.append(name)
    pids = set(producer_ids)
    out = []
    for by_id in list(state.ids.values()):
        for meta in by_id.values():
            if meta.state is TxnState.DEAD:
                continue
            if names and meta.state not in wanted:
                continue
            if pids and meta.producer_id not in pids:
                continue
            if min_duration_ms >= 0 and (meta.txn_start_timestamp < 0 or
                                         now_ms - meta.txn_start_timestamp < min_duration_ms):
                continue
            out.append(meta)
    return unknown, sorted(out, key=lambda m: m.transactional_id)


__all__ = ["describe", "list_states"]
