"""Writing one producer's transaction markers on the partitions this broker leads:
what WriteTxnMarkers does for a remote coordinator (``broker/handlers/write_txn_markers.py``)
and what this broker's own coordinator does in process for the partitions it leads
(``marker_channel`` in this package), with no request to itself."""

from __future__ import annotations

from broker.coordination.host import GroupHost
from protocol.errors import ErrorCode
from protocol.topic_names import GROUP_METADATA_TOPIC


async def write_markers(broker: GroupHost, producer_id: int, producer_epoch: int, commit: bool,
                        coordinator_epoch: int, tps: list[tuple[str, int]]
                        ) -> dict[tuple[str, int], int]:
    """One producer's markers on the partitions this broker leads (the wait for the
    HW included), then its transactional offset commits ended: -> error per
    partition. Also called in process by this broker's own transaction coordinator
    for the partitions it leads (no request to itself)."""
    replicas = broker.replicas
    assert replicas is not None, "markers arrive once the broker has started"
    errors = await replicas.appends.append_markers(
        int(broker.config.request_timeout_ms), producer_id, producer_epoch, commit,
        coordinator_epoch, tps)
    offsets = [p for (topic, p) in tps
               if topic == GROUP_METADATA_TOPIC and errors[(topic, p)] == ErrorCode.NONE]
    groups = broker.group_coordinator
    if offsets and groups is not None:
        groups.txn.complete(producer_id, offsets, commit)
    return errors


__all__ = ["write_markers"]
