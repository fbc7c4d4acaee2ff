"""``BrokerOffsetsLog``: the coordinators' ``OffsetsLog`` seam
(``coordinator/runtime/log_seam.py``) over this broker's replica manager (appends:
acks=-1 waits for the ISR, as Kafka's coordinators write) and the partition's local
log (loads read it from its start to its end, ``LOAD_BUFFER_SIZE`` at a time)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from broker.coordination.host import GroupHost
from coordinator.runtime.log_seam import KeyValue, LogEntry, TxnEnd, TxnRecord, build_batch
from protocol.errors import ErrorCode
from protocol.records import CONTROL_COMMIT, iter_batches, iter_records, marker_type
from protocol.topic_names import GROUP_METADATA_TOPIC

if TYPE_CHECKING:
    from storage.log import PartitionLog

log = logging.getLogger(__name__)

LOAD_BUFFER_SIZE = 5 * 1024 * 1024        # offsets.load.buffer.size


class BrokerOffsetsLog:
    """``OffsetsLog`` over the broker's replica manager and log manager, for
    ``topic`` (__consumer_offsets; the transaction coordinator's __transaction_state)."""

    def __init__(self, broker: GroupHost, topic: str = GROUP_METADATA_TOPIC) -> None:
        self.broker = broker
        self.topic = topic

    async def append(self, partition: int, records: Sequence[KeyValue], *, acks: int,
                     timeout_ms: int, timestamp: int,
                     producer: tuple[int, int] | None = None) -> int:
        tp = (self.topic, partition)
        replicas = self.broker.replicas
        if replicas is None:        # not started: nothing is led, nothing to write to
            return int(ErrorCode.NOT_COORDINATOR)
        results = await replicas.appends.append_records(
            acks, timeout_ms, {tp: bytes(build_batch(records, timestamp, producer))},
            from_coordinator=producer is not None)
        return int(results[tp].error)

    def read_chunks(self, partition: int) -> Iterator[list[LogEntry]] | None:
        logs = self.broker.logs
        plog = logs.get_log(self.topic, partition) if logs is not None else None
        if plog is None:
            return None
        return _chunks(plog, self.topic)

    def leader_epoch(self, partition: int) -> int | None:
        replicas = self.broker.replicas
        p = replicas.partition(self.topic, partition) if replicas is not None else None
        if p is None or not p.is_leader:
            return None
        return int(p.leader_epoch)


def _chunks(plog: PartitionLog, topic: str) -> Iterator[list[LogEntry]]:
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, LOAD_BUFFER_SIZE, None).slice.read()
        chunk: list[LogEntry] = []
        advanced = False
        for pos, header in iter_batches(data):
            advanced = True
            offset = header.base_offset + header.last_offset_delta + 1
            if header.is_control:
                kind = marker_type(data, pos)
                if kind is not None:
                    chunk.append(TxnEnd(header.producer_id, kind == CONTROL_COMMIT))
                continue
            for record in iter_records(data, pos):
                if record.key is None:
                    log.warning("%s: record at offset %d has no key; skipped", topic,
                                record.offset)
                    continue
                value = None if record.value is None else bytes(record.value)
                chunk.append(TxnRecord(header.producer_id, bytes(record.key), value)
                             if header.is_transactional else (bytes(record.key), value))
        if not advanced:
            break
        yield chunk


__all__ = ["BrokerOffsetsLog", "LOAD_BUFFER_SIZE"]
