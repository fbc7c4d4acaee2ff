"""What PartitionLog (storage/log.py) answers and raises: the result of an append
and of a read, and the log's own errors (each mapped to a Kafka error code by the
broker). Re-exported by storage.log, where callers import them from."""

from __future__ import annotations

from dataclasses import dataclass

from storage.segment import FileSlice


class OffsetOutOfRangeError(Exception):
    """Fetch offset outside [log_start_offset, log_end_offset]: OFFSET_OUT_OF_RANGE (1)."""


class RecordBatchTooLargeError(Exception):
    """An append larger than a segment: RECORD_LIST_TOO_LARGE (18)."""


class UnexpectedAppendOffsetError(Exception):
    """A follower append whose offsets go backwards."""


# Built per request and never changed afterwards; not frozen=True, whose __init__
# sets each field through object.__setattr__ (5x the cost: 2 µs for 8 fields here).
@dataclass(slots=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int            # -1 when no batch has a timestamp
    offset_of_max_timestamp: int
    log_append_time: int          # -1 unless the log stamps LogAppendTime
    num_batches: int
    num_records: int
    size: int
    log_start_offset: int


# (not frozen: as above)
@dataclass(slots=True)
class ReadResult:
    """What ``read`` found: ``slice`` may be empty and may end in a partial batch."""

    slice: FileSlice
    fetch_offset: int
    segment_base_offset: int
    position: int


__all__ = ["AppendInfo", "OffsetOutOfRangeError", "ReadResult", "RecordBatchTooLargeError",
           "UnexpectedAppendOffsetError"]
