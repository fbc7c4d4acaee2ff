"""Inter-broker request verbs that are not on the data path: ControlledShutdown,
WriteTxnMarkers and the brokers' AddPartitionsToTxn (v4+ VerifyOnly, KIP-890).

A broker that stops asks the active controller to move its leaderships away
first (Kafka ``KafkaServer.controlledShutdown``). The verb, like those in
``verbs.py``, takes an open ``KafkaConnection`` (the caller finds the
controller), sends at the highest version both sides speak, and returns the
error code rather than raising it; transport failures raise
``client.errors.KafkaConnectionError`` as the connection does.

Version notes: BrokerEpoch is sent from v2 (ignored below); every version
answers the partitions whose leadership could not be moved yet
(RemainingPartitions), which the caller waits out by asking again.
"""

from __future__ import annotations

from client.connection import KafkaConnection
from client.verbs import _version, partitions_by_topic
from protocol.api_keys import ApiKey
from protocol.spec import api

TP = tuple[str, int]            # (topic, partition)
BROKER_FORM_MIN = 4             # AddPartitionsToTxn's batched, VerifyOnly form (KIP-890)


async def controlled_shutdown(conn: KafkaConnection, broker_id: int, broker_epoch: int
                              ) -> tuple[int, list[TP]]:
    """Ask the controller on ``conn`` to move ``broker_id``'s leaderships away.

    -> (error code, the partitions still led by the broker). Done when the
    error is NONE and no partition remains; otherwise the caller retries."""
    spec = api(ApiKey.CONTROLLED_SHUTDOWN).request
    resp = await conn.request(ApiKey.CONTROLLED_SHUTDOWN,
                              spec.new(broker_id=broker_id, broker_epoch=broker_epoch))
    assert resp is not None
    remaining = resp.remaining_partitions or []
    return resp.error_code, [(p.topic_name, p.partition_index) for p in remaining]


async def write_txn_markers(conn: KafkaConnection,
                            markers: list[tuple[int, int, bool, int, list[TP]]]
                            ) -> dict[int, dict[TP, int]]:
    """Ask the partition leader on ``conn`` to write transaction markers.

    ``markers``: (producer id, producer epoch, commit?, coordinator epoch,
    partitions). -> error code per partition, by producer id."""
    spec = api(ApiKey.WRITE_TXN_MARKERS).request
    entry, topic = spec.structs["WritableTxnMarker"], spec.structs["WritableTxnMarkerTopic"]
    body = spec.new(markers=[
        entry.new(producer_id=pid, producer_epoch=epoch, transaction_result=commit,
                  coordinator_epoch=coordinator_epoch,
                  topics=[topic.new(name=name, partition_indexes=indexes)
                          for name, indexes in partitions_by_topic(tps).items()])
        for pid, epoch, commit, coordinator_epoch, tps in markers])
    resp = await conn.request(ApiKey.WRITE_TXN_MARKERS, body)
    assert resp is not None
    return {m.producer_id: {(t.name, p.partition_index): p.error_code
                            for t in m.topics for p in t.partitions}
            for m in resp.markers}


async def verify_txn_partitions(conn: KafkaConnection, transactional_id: str, producer_id: int,
                                producer_epoch: int, partitions: list[TP]
                                ) -> tuple[int, dict[TP, int]]:
    """Ask the transaction coordinator on ``conn`` whether ``partitions`` are in the
    producer's ongoing transaction (AddPartitionsToTxn v4+, VerifyOnly: nothing is
    added). -> (top-level error, error per partition). NoCommonVersion when the
    coordinator has no v4 (the caller then skips verification, as Kafka does)."""
    version = _version(conn, ApiKey.ADD_PARTITIONS_TO_TXN, BROKER_FORM_MIN)
    spec = api(ApiKey.ADD_PARTITIONS_TO_TXN).request
    txn, topic = spec.structs["AddPartitionsToTxnTransaction"], spec.structs["AddPartitionsToTxnTopic"]
    body = spec.new(transactions=[txn.new(
        transactional_id=transactional_id, producer_id=producer_id,
        producer_epoch=producer_epoch, verify_only=True,
        topics=[topic.new(name=name, partitions=indexes)
                for name, indexes in partitions_by_topic(partitions).items()])])
    resp = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, body, version)
    assert resp is not None
    return int(resp.error_code), {
        (t.name, r.partition_index): int(r.partition_error_code)
        for result in resp.results_by_transaction if result.transactional_id == transactional_id
        for t in result.topic_results for r in t.results_by_partition}


__all__ = ["TP", "controlled_shutdown", "verify_txn_partitions", "write_txn_markers"]
