"""The transaction coordinator over this broker: ``build`` (the Broker calls it in
``start``), its MarkerChannel (WriteTxnMarkers over the marker pool; the partitions
this broker leads in process) and the partition leader's KIP-890 ``verifier``."""

from __future__ import annotations

from broker.coordination.host import TransactionHost
from broker.coordination.local_markers import write_markers
from broker.coordination.offsets_log import BrokerOffsetsLog
from broker.metadata_cache import partition_count_or
from client.errors import NoCommonVersion
from client.inter_broker import verify_txn_partitions, write_txn_markers
from coordinator.transaction import MarkerChannel, TransactionCoordinator, \
    TransactionStateManager, TxnMarker, TxnVerifier, VerificationUnsupported
from protocol.topic_names import TRANSACTION_STATE_TOPIC
from storage.log import wall_clock_ms


def transaction_state_partitions(broker: TransactionHost) -> int:
    """The partition count of __transaction_state once it exists, else the config's."""
    return partition_count_or(broker.metadata, TRANSACTION_STATE_TOPIC,
                              broker.config.transaction_state_log_num_partitions)


def build(broker: TransactionHost) -> TransactionCoordinator:
    """The coordinator over the broker's replica manager, logs, metadata cache,
    producer-id blocks and connection pool (the markers)."""
    assert broker.producer_ids is not None, "built in Broker.start, after the producer ids"
    state = TransactionStateManager(BrokerOffsetsLog(broker, TRANSACTION_STATE_TOPIC),
                                    lambda: transaction_state_partitions(broker),
                                    clock=wall_clock_ms)
    return TransactionCoordinator(state, broker.producer_ids.generate_producer_id,
                                  max_timeout_ms=int(broker.config.transaction_max_timeout_ms),
                                  clock=wall_clock_ms, markers=marker_channel(broker),
                                  await_markers=bool(broker.config.transaction_end_await_markers),
                                  end_wait_s=broker.config.request_timeout_ms / 2000)


def marker_channel(broker: TransactionHost) -> MarkerChannel:
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


def verifier(broker: TransactionHost) -> TxnVerifier:
    """The leader side of KIP-890 verification over the broker's coordinator (in
    process), metadata cache (the coordinator's broker) and pool."""
    metadata = broker.metadata
    coordinator = broker.transaction_coordinator
    assert coordinator is not None, "built in Broker.start, after the coordinator"

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
        try:
            return await verify_txn_partitions(conn, transactional_id, producer_id,
                                               producer_epoch, tps)
        except NoCommonVersion as e:       # an older coordinator: no verification there
            raise VerificationUnsupported(str(e)) from e

    return TxnVerifier(broker.broker_id, coordinator_of, coordinator.verify_partitions, send,
                       timeout_s=broker.config.request_timeout_ms / 1000)


__all__ = ["build", "marker_channel", "transaction_state_partitions", "verifier"]
