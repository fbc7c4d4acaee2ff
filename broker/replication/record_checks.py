"""Record validation of heavy produce data off the event loop (issue 17).

The record walk (``protocol.record_validation``, Kafka's LogValidator) inflates a
compressed batch (up to max(16 MiB, 16 x max.message.bytes)) and parses every record in
Python, about 0.7 us a record. Done on the event loop, a compression bomb or a batch of
100,000 tiny records stalls every connection of the broker for tens to hundreds of ms
(the fuzzer measured it: tests/fuzz). So ``ReplicaManager.append_records`` sends the
*heavy* data of a produce request to a worker thread before appending:

* heavy: a compressed batch (its inflated size is unknown until inflated), or more
  than ``HEAVY_RECORDS`` records in one uncompressed batch;
* in the thread, ``partition.validate_records`` runs exactly as the append would
  (headers, CRC, max.message.bytes, every record against the topic's rules); zlib and
  cramjam inflate without the GIL, and the Python walk hands the GIL to the event loop
  every switch interval (5 ms), so the loop keeps answering;
* the answers come back per partition: a KafkaError to answer with, or None (valid);
  the partition then appends without walking the records again (``records_checked``;
  it still reads the batch headers, which is cheap).

Light data (small uncompressed batches: nearly all traffic of uncompressed producers)
is validated inline, where a thread hop (~50 us) would cost more than its walk. One
hop per produce request, whatever its partition count. The data is the request's
own bytes, never written to while a thread reads them; a partition that stops being
leader meanwhile is refused by the append as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from broker.replication.partition import Partition, validate_records
from protocol import records
from protocol.errors import KafkaError

TopicPartition = tuple[str, int]
HEAVY_RECORDS = 1000      # ~0.7 ms of walk: above it, a thread hop is the cheaper


def is_heavy(data: Any) -> bool:
    """Whether ``data`` holds a compressed batch or an uncompressed batch of more than
    HEAVY_RECORDS records (only complete batch headers are read; damage is left to
    the validation itself)."""
    for _pos, header in records.iter_batches(data):
        if header.compression != 0 or header.records_count > HEAVY_RECORDS:
            return True
    return False


async def check_heavy(partitions: Mapping[TopicPartition, Partition],
                      entries: Mapping[TopicPartition, Any],
                      clock: Callable[[], int]) -> dict[TopicPartition, KafkaError | None]:
    """Validate the heavy entries of partitions we lead, in one worker thread;
    -> tp -> the KafkaError to answer, or None (valid). Entries not returned are
    validated by the append as usual."""
    work: list[tuple[TopicPartition, Any, Any]] = []
    for tp, data in entries.items():
        p = partitions.get(tp)
        if p is None or not p.is_leader or not is_heavy(data):
            continue
        plog = p.log
        if plog is None:
            continue
        work.append((tp, data, plog.config))
    if not work:
        return {}
    now = clock()

    def validate_all() -> dict[TopicPartition, KafkaError | None]:
        out: dict[TopicPartition, KafkaError | None] = {}
        for tp, data, config in work:
            try:
                validate_records(data, config, tp[0], tp[1], now)
                out[tp] = None
            except KafkaError as e:
                out[tp] = e
        return out
    return await asyncio.to_thread(validate_all)
