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
                   over the group coordinator's OffsetsLog seam; not wired into the
                   Broker yet

Where the rest goes: the coordinator (InitProducerId with fencing and KIP-360
bumps, AddPartitions, EndTxn, the abort of timed-out transactions) in
``coordinator.py`` over the state manager; the marker channel (WriteTxnMarkers
to partition leaders, through ``client/``) in ``markers.py``; the handlers (InitProducerId with a
transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
WriteTxnMarkers, Describe/ListTransactions) stay one module each under
``broker/handlers/``. The partition side (ongoing transactions, LSO, the
``.txnindex`` files, producer-state snapshots) belongs to
``broker/replication/producer_state.py`` and ``storage/``.

It may import ``protocol``, ``storage``, ``client`` and the rest of ``broker``;
nothing outside ``broker`` imports it.
"""
