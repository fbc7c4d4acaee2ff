"""The transaction coordinator (exactly-once: Kafka's TransactionCoordinator,
TransactionStateManager and TransactionMarkerChannelManager), beside the group
coordinator in ``coordinator/`` (issue 14):

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
                   (fencing by epoch bump, KIP-360, producer id rotation),
                   AddPartitionsToTxn (and verify-only), EndTxn, timeout aborts,
                   id expiry, finishing Prepare* states after a failover
    markers.py     MarkerChannel: WriteTxnMarkers to each partition's leader until
                   every partition has its marker (retries, leader moves)
    local_markers.py  write_markers: one producer's markers on the partitions this
                   broker leads (the WriteTxnMarkers handler, and the coordinator's
                   own partitions in process)
    verification.py TxnVerifier: the partition leader's KIP-890 check that a
                   transaction's first batch on a partition was added to it
    inspection.py  what DescribeTransactions / ListTransactions read (read-only)

The Broker builds it (``build``) beside the group coordinator and routes
__transaction_state leadership to its state manager; FindCoordinator with key
type 1 creates the topic and names the partition's leader.

The handlers (InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, WriteTxnMarkers, TxnOffsetCommit, DescribeTransactions,
ListTransactions, DescribeProducers) are one module each under ``broker/handlers/``.
The partition side (open transactions, LSO, markers, the ``.txnindex`` files) is
``broker/replication/producer_state.py``, ``partition_txn.py`` and ``storage/``.

It may import ``protocol``, ``storage``, ``client`` and the rest of ``broker``;
nothing outside ``broker`` imports it.
"""

from __future__ import annotations

from typing import Any

from broker.coordinator.loader import BrokerOffsetsLog
from broker.metadata_cache import partition_count_or
from broker.topic_names import TRANSACTION_STATE_TOPIC
from client.inter_broker import verify_txn_partitions, write_txn_markers
from broker.transaction.coordinator import InitResult, TransactionCoordinator
from broker.transaction.local_markers import write_markers
from broker.transaction.markers import MarkerChannel, TxnMarker
from broker.transaction.state_manager import TransactionStateManager
from broker.transaction.verification import TxnVerifier
from storage.log import wall_clock_ms


def transaction_state_partitions(broker: Any) -> int:
    """The partition count of __transaction_state once it exists, else the config's."""
    return partition_count_or(broker.metadata, TRANSACTION_STATE_TOPIC,
                              broker.config.transaction_state_log_num_partitions)


def build(broker: Any) -> TransactionCoordinator:
    """The coordinator over the broker's replica manager, logs, metadata cache,
    producer-id blocks and connection pool (the markers)."""
    state = TransactionStateManager(BrokerOffsetsLog(broker, TRANSACTION_STATE_TOPIC),
                                    lambda: transaction_state_partitions(broker),
                                    clock=wall_clock_ms)
    return TransactionCoordinator(state, broker.producer_ids.generate_producer_id,
                                  max_timeout_ms=int(broker.config.transaction_max_timeout_ms),
                                  clock=wall_clock_ms, markers=marker_channel(broker),
                                  await_markers=bool(broker.config.transaction_end_await_markers),
                                  end_wait_s=broker.config.request_timeout_ms / 2000)


def marker_channel(broker: Any) -> MarkerChannel:
    """Markers over the broker's marker pool (connections of their own), to the
    leaders its metadata cache names; those for partitions this broker leads are
    written in process."""
    metadata = broker.metadata

    async def send(broker_id: int, marker: TxnMarker) -> dict[tuple[str, int], int]:
        if broker_id == broker.broker_id:      # partitions we lead: no request to ourselves
            return await write_markers(broker, marker.producer_id, marker.producer_epoch,
                                       marker.commit, marker.coordinator_epoch,
                                       list(marker.partitions))
        b = metadata.broker(broker_id)
        if b is None or b.port < 0:
            raise ConnectionError(f"broker {broker_id} is not known")
        conn = await broker.marker_pool.get(b.host, b.port)
        answers = await write_txn_markers(conn, [(
            marker.producer_id, marker.producer_epoch, marker.commit,
            marker.coordinator_epoch, list(marker.partitions))])
        return answers.get(marker.producer_id, {})

    def leader_of(tp: tuple[str, int]) -> int | None:
        p = metadata.partition(*tp)
        return None if p is None else p.leader

    return MarkerChannel(send, leader_of, metadata.has_topic)


def verifier(broker: Any) -> TxnVerifier:
    """The leader side of KIP-890 verification over the broker's coordinator (in
    process), metadata cache (the coordinator's broker) and pool."""
    metadata = broker.metadata
    coordinator = broker.transaction_coordinator

    def coordinator_of(transactional_id: str) -> int | None:
        p = metadata.partition(TRANSACTION_STATE_TOPIC,
                               coordinator.state.partition_for(transactional_id))
        return None if p is None or p.leader < 0 else p.leader

    async def send(broker_id: int, transactional_id: str, producer_id: int,
                   producer_epoch: int, tps: list[tuple[str, int]]
                   ) -> tuple[int, dict[tuple[str, int], int]]:
        b = metadata.broker(broker_id)
        if b is None or b.port < 0:
            raise ConnectionError(f"broker {broker_id} is not known")
        conn = await broker.pool.get(b.host, b.port)
        return await verify_txn_partitions(conn, transactional_id, producer_id,
                                           producer_epoch, tps)

    return TxnVerifier(broker.broker_id, coordinator_of, coordinator.verify_partitions, send,
                       timeout_s=broker.config.request_timeout_ms / 1000)


__all__ = ["TRANSACTION_STATE_TOPIC", "InitResult", "TransactionCoordinator",
           "TransactionStateManager", "TxnVerifier", "build", "transaction_state_partitions",
           "verifier"]
