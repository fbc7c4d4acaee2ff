"""The transaction coordinator (exactly-once: Kafka's TransactionCoordinator,
TransactionStateManager and TransactionMarkerChannelManager), beside the group
coordinator in ``coordinator/``. Issue 14 builds it; what is here so far:

    txn_state.py   TxnState (byte ids, names, the valid-previous-state table) and
                   TxnMetadata (one transactional id's state, checked transitions,
                   timeout) -- pure, no I/O
    txn_log.py     the ``__transaction_state`` key and value formats, as Kafka's
    state_manager.py  TransactionStateManager: ownership of __transaction_state
                   partitions (load on leadership, epochs fence), the ids' states,
                   writes installed once written, timeouts and expiration lists --
                   over the group coordinator's OffsetsLog seam (BrokerOffsetsLog
                   for __transaction_state)
    coordinator.py TransactionCoordinator: InitProducerId for transactional ids
                   (fencing by epoch bump, KIP-360, producer id rotation)

The Broker builds it (``build``) beside the group coordinator and routes
__transaction_state leadership to its state manager; FindCoordinator with key
type 1 creates the topic and names the partition's leader.

Where the rest goes: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and the abort
of timed-out transactions grow ``coordinator.py``; the marker channel (WriteTxnMarkers
to partition leaders, through ``client/``) in ``markers.py``; the handlers (InitProducerId with a
transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
WriteTxnMarkers, Describe/ListTransactions) stay one module each under
``broker/handlers/``. The partition side (ongoing transactions, LSO, the
``.txnindex`` files, producer-state snapshots) belongs to
``broker/replication/producer_state.py`` and ``storage/``.

It may import ``protocol``, ``storage``, ``client`` and the rest of ``broker``;
nothing outside ``broker`` imports it.
"""

from __future__ import annotations

from typing import Any

from broker.coordinator.loader import BrokerOffsetsLog
from broker.metadata_cache import partition_count_or
from broker.topic_names import TRANSACTION_STATE_TOPIC
from broker.transaction.coordinator import InitResult, TransactionCoordinator
from broker.transaction.state_manager import TransactionStateManager
from storage.log import wall_clock_ms


def transaction_state_partitions(broker: Any) -> int:
    """The partition count of __transaction_state once it exists, else the config's."""
    return partition_count_or(broker.metadata, TRANSACTION_STATE_TOPIC,
                              broker.config.transaction_state_log_num_partitions)


def build(broker: Any) -> TransactionCoordinator:
    """The coordinator over the broker's replica manager, logs, metadata cache and
    producer-id blocks."""
    state = TransactionStateManager(BrokerOffsetsLog(broker, TRANSACTION_STATE_TOPIC),
                                    lambda: transaction_state_partitions(broker),
                                    clock=wall_clock_ms)
    return TransactionCoordinator(state, broker.producer_ids.generate_producer_id,
                                  max_timeout_ms=int(broker.config.transaction_max_timeout_ms),
                                  clock=wall_clock_ms)


__all__ = ["TRANSACTION_STATE_TOPIC", "InitResult", "TransactionCoordinator",
           "TransactionStateManager", "build", "transaction_state_partitions"]
