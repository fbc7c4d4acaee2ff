"""Inter-broker request verbs that are not on the data path: ControlledShutdown.

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
from protocol.api_keys import ApiKey
from protocol.spec import api

TP = tuple[str, int]            # (topic, partition)


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


__all__ = ["TP", "controlled_shutdown"]
