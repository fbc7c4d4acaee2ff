"""Record validation of heavy produce data off the event loop (issue 17).

The record walk (``protocol.record_validation``, Kafka's LogValidator) inflates a
compressed batch (up to max(16 MiB, 16 x max.message.bytes)) and parses every record:
about 15 ns a record in C (protocol/_record_walk.c, issue 28), 0.7-1 us in the
pure-Python fallback. Done on the event loop, a compression bomb or a batch of 100,000
tiny records stalls every connection of the broker for tens to hundreds of ms (the
fuzzer measured it: tests/fuzz). So ``ReplicaManager.append_records`` sends the
*heavy* data of a produce request to a worker thread before appending:

* heavy: a compressed batch (its inflated size is unknown until inflated), or more
  than ``HEAVY_RECORDS`` records in one uncompressed batch (1,000 with the Python
  walk, 50,000 with the C walk);
* in the thread, ``partition.validate_records`` runs exactly as the append would
  (headers, CRC, max.message.bytes, every record against the topic's rules); zlib and
  cramjam inflate without the GIL, so does the C walk of a batch of more than
  1,000 records (a smaller one keeps it), and the
  Python walk hands the GIL to the event loop every switch interval (5 ms), so the loop
  keeps answering;
* the answers come back per partition: a KafkaError to answer with, or None (valid);
  the partition then appends without walking the records again (``records_checked``;
  it still reads the batch headers, which is cheap).

Recompression (issue 18): a topic whose compression.type is not ``producer`` stores
its batches in that codec (Kafka's LogValidator). Data in another codec is heavy too;
once valid, the worker thread rewrites it (``protocol.recompress``) and the partition
appends the rewritten bytes (``check_and_recompress`` -> ``rewritten``); offsets are
assigned by the log as for the original.

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
from protocol import compression, records, record_validation
from protocol.errors import ErrorCode, KafkaError
from protocol.recompress import needs_recompression, recompress, target_codec

TopicPartition = tuple[str, int]
# Above this many records in one uncompressed batch, the walk goes to a thread. The
# Python walk: 1,000 (~0.7 ms). The C walk (record_validation.NATIVE): 50,000 (~0.75 ms
# at 15 ns a record); below that a hop costs more than it saves -- measured with
# bench/throughput.py, 100 B records in batches of 10,000: the loop waited for the GIL
# the worker took (ThreadPoolExecutor.submit was 17 % of the broker's busy samples).
HEAVY_RECORDS = 50_000 if record_validation.NATIVE else 1000


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
    checked, _rewritten = await check_and_recompress(partitions, entries, clock)
    return checked


async def check_and_recompress(partitions: Mapping[TopicPartition, Partition],
                               entries: Mapping[TopicPartition, Any],
                               clock: Callable[[], int]
                               ) -> tuple[dict[TopicPartition, KafkaError | None],
                                          dict[TopicPartition, bytes]]:
    """``check_heavy``, plus the recompression of valid data whose codec differs from
    its topic's compression.type: -> (checked, tp -> the bytes to append instead)."""
    work: list[tuple[TopicPartition, Any, Any, int | None]] = []
    for tp, data in entries.items():
        p = partitions.get(tp)
        if p is None or not p.is_leader:
            continue
        plog = p.log
        if plog is None:
            continue
        codec = target_codec(plog.config.compression_type)
        if not is_heavy(data) and not needs_recompression(data, codec):
            continue
        work.append((tp, data, plog.config, codec))
    if not work:
        return {}, {}
    now = clock()

    def validate_all() -> tuple[dict[TopicPartition, KafkaError | None],
                                dict[TopicPartition, bytes]]:
        out: dict[TopicPartition, KafkaError | None] = {}
        rewritten: dict[TopicPartition, bytes] = {}
        for tp, data, config, codec in work:
            try:
                validate_records(data, config, tp[0], tp[1], now)
                out[tp] = None
            except KafkaError as e:
                out[tp] = e
                continue
            if needs_recompression(data, codec):
                assert codec is not None
                try:
                    rewritten[tp] = recompress(data, codec, record_validation.max_inflated_bytes(
                        config.max_message_bytes))
                except (compression.CorruptCompressedData,
                        compression.CompressionUnavailable) as e:
                    out[tp] = KafkaError(ErrorCode.CORRUPT_MESSAGE,
                                         f"recompression to {config.compression_type}: {e}")
        return out, rewritten
    return await asyncio.to_thread(validate_all)
