"""ListOffsets lookups in one leader partition's log: the offset for a timestamp
(and the special timestamps), and ListOffsets v0's list of segment offsets.

``ReplicaManager.fetch_offset_for_timestamp`` / ``legacy_offsets_before`` find
the partition (we must lead it, at the caller's leader epoch) and call these;
nothing here changes the partition.

Special timestamps (Kafka ``ListOffsetsRequest``):

    -1  LATEST                the fetchable end: LEO (a replica), HW or LSO
    -2  EARLIEST              the log start offset
    -3  MAX_TIMESTAMP         the record with the largest timestamp
    -4  EARLIEST_LOCAL        the local log start (no tiered storage: -2)
    -5  LATEST_TIERED         the last tiered offset (no tiered storage: none)

Invariant: no offset answered to a consumer is above its fetchable bound (HW,
or LSO for read_committed), and a timestamp search only finds records below
it, so a consumer never lists an offset past what it could fetch.
"""

from __future__ import annotations

from collections.abc import Callable

from broker.replication.partition import READ_COMMITTED, Partition
from protocol.errors import ErrorCode, KafkaError

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5


def offset_for_timestamp(p: Partition, timestamp: int, isolation: int | None
                         ) -> tuple[int, int, int]:
    """(offset, timestamp, leader epoch) for ListOffsets; isolation None = a replica (LEO).

    -1 latest (HW / LSO / LEO), -2 and -4 earliest, -3 the max timestamp,
    -5 (no tiered storage) -1, else the first record at or after the
    timestamp below the fetchable bound, or (-1, -1, -1) when none.
    OFFSET_NOT_AVAILABLE (KafkaError) while a new leader's HW has not reached
    the start of its epoch.
    """
    plog = p.local_log()
    if isolation is not None and p.leader_epoch_start_offset > p.high_watermark:
        raise KafkaError(ErrorCode.OFFSET_NOT_AVAILABLE,
                         "the new leader's high watermark has not caught up")
    bound = (plog.log_end_offset if isolation is None
             else p.last_stable_offset if isolation == READ_COMMITTED else p.high_watermark)
    cache = plog.leader_epoch_cache
    if timestamp == LATEST_TIMESTAMP:
        return bound, -1, p.leader_epoch
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        start = plog.log_start_offset
        return start, -1, cache.epoch_for_offset(start)
    if timestamp == MAX_TIMESTAMP:
        ts, offset = plog.max_timestamp_and_offset()
        if offset < 0:
            return -1, -1, -1
        return offset, ts, cache.epoch_for_offset(offset)
    if timestamp == LATEST_TIERED_TIMESTAMP or timestamp < 0:
        return -1, -1, -1
    found = plog.offset_for_timestamp(timestamp)
    if found is None or found[0] >= bound:
        return -1, -1, -1
    return found[0], found[1], cache.epoch_for_offset(found[0])


def legacy_offsets_before(p: Partition, timestamp: int, max_num: int, from_consumer: bool,
                          clock: Callable[[], int]) -> list[int]:
    """ListOffsets v0: segment base offsets (newest first) plus the end (Kafka
    ``legacyFetchOffsetsBefore``; a segment's max timestamp stands in for its
    mtime, ``clock()`` for the end's). At most ``max_num`` offsets, none above
    the end (HW for a consumer, LEO for a replica)."""
    plog = p.local_log()
    end = p.high_watermark if from_consumer else plog.log_end_offset
    points = [(s.base_offset, s.max_timestamp) for s in plog.segments
              if s.base_offset >= plog.log_start_offset or s is plog.segments[0]]
    points[0] = (plog.log_start_offset, points[0][1])
    if plog.active_segment.size > 0 or len(points) == 1:
        points.append((end, clock()))
    if timestamp == LATEST_TIMESTAMP:
        candidates = points
    elif timestamp == EARLIEST_TIMESTAMP:
        candidates = points[:1]
    else:
        candidates = [pt for pt in points if pt[1] <= timestamp]
    offsets = sorted({min(o, end) for o, _ in candidates}, reverse=True)
    return offsets[:max(max_num, 0)]
