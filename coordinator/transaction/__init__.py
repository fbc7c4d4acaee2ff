"""The transaction coordinator (exactly-once: Kafka's TransactionCoordinator,
TransactionStateManager and TransactionMarkerChannelManager), beside the group
coordinator (coordinator/group/) on the same runtime (coordinator/runtime/):

    txn_state.py   TxnState (byte ids, names, the valid-previous-state table) and
                   TxnMetadata (one transactional id's state, checked transitions,
                   timeout) -- pure, no I/O
    txn_log.py     the ``__transaction_state`` key and value formats, as Kafka's
    state_manager.py  TransactionStateManager: ownership of __transaction_state
                   partitions (load on leadership, epochs fence), the ids' states,
                   writes installed once written, timeouts and expiration lists --
                   over the runtime's OffsetsLog seam (the broker's BrokerOffsetsLog
                   for __transaction_state)
    coordinator.py TransactionCoordinator: InitProducerId for transactional ids
                   (fencing by epoch bump, KIP-360, producer id rotation),
                   AddPartitionsToTxn (and verify-only), EndTxn, timeout aborts,
                   id expiry, finishing Prepare* states after a failover
    markers.py     MarkerChannel: WriteTxnMarkers to each partition's leader until
                   every partition has its marker (retries, leader moves)
    verification.py TxnVerifier: the partition leader's KIP-890 check that a
                   transaction's first batch on a partition was added to it
    inspection.py  what DescribeTransactions / ListTransactions read (read-only)

The Broker builds it (broker/coordination/transactions.py: ``build``, the marker
channel over its pools, the ``verifier``) beside the group coordinator and routes
__transaction_state leadership to its state manager; FindCoordinator with key
type 1 creates the topic and names the partition's leader.

The handlers (InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, WriteTxnMarkers, TxnOffsetCommit, DescribeTransactions,
ListTransactions, DescribeProducers) are one module each under ``broker/handlers/``.
The partition side (open transactions, LSO, markers, the ``.txnindex`` files) is
``broker/replication/producer_state.py``, ``partition_txn.py`` and ``storage/``.

Like all of coordinator/, it imports protocol and storage only.
"""

from __future__ import annotations

from coordinator.transaction.coordinator import InitResult, TransactionCoordinator
from coordinator.transaction.markers import MarkerChannel, TxnMarker
from coordinator.transaction.state_manager import TransactionStateManager
from coordinator.transaction.verification import TxnVerifier, VerificationUnsupported
from protocol.topic_names import TRANSACTION_STATE_TOPIC

__all__ = ["TRANSACTION_STATE_TOPIC", "InitResult", "MarkerChannel", "TransactionCoordinator",
           "TransactionStateManager", "TxnMarker", "TxnVerifier", "VerificationUnsupported"]
