"""The read side of Fetch: what one fetch reads from the partitions, now.

Holds the per-partition request and result of a fetch (``FetchPartitionRequest``,
``FetchPartitionResult``), the zero-copy records wrapper (``SliceRecords``) and
the reads themselves: ``read_all`` over a request's partitions,
``read_partition`` for one and ``probe_partition``, what a parked fetch has now.
Nothing here waits, parks or changes a partition; ``ReplicaManager.fetch`` owns the
follower bookkeeping, the fetch-session skip and the DelayedFetch that calls these
reads again.

Invariants of a read:
* only the leader answers, and only at the caller's leader epoch (if given);
* a follower whose last fetched epoch diverges from ours gets the diverging
  epoch and no records (KIP-320 / KIP-595 style, Fetch v12+);
* records stop below ``Partition.fetch_upper_bound`` (HW / LSO for consumers,
  the LEO for followers);
* ``read_all`` spends one ``max_bytes`` budget over the partitions in request
  order, and unless ``hard_max_bytes_limit`` (Fetch v0-2) the first non-empty
  partition returns at least one whole batch even above the limits;
* a follower fetch of a partition that the leader's replication quota holds back
  (``throttle``, see replication/throttle.py) is answered without records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from broker.replication.partition import READ_COMMITTED, Partition
from protocol.errors import ErrorCode
from storage.log import OffsetOutOfRangeError
from storage.segment import FileSlice
from storage.txn_index import AbortedTxn

TopicPartition = tuple[str, int]
# a partition -> whether its records are withheld from this fetch now (the leader's
# replication quota, replication/throttle.leader_throttle); None: never
Throttle = Callable[[Partition], bool] | None


class SliceRecords:
    """A fetch's records as a storage FileSlice, for the response codec and the
    connection: ``wire_size`` bytes, read out by ``tobytes()`` only when sent."""

    __slots__ = ("slice",)

    def __init__(self, file_slice: FileSlice) -> None:
        self.slice = file_slice

    @property
    def wire_size(self) -> int:
        return self.slice.size

    def tobytes(self) -> bytes:
        return self.slice.read()

    def file_region(self) -> tuple[int, int, int]:
        """(fd, position, size) for sendfile (broker/network/frame_stream.py); the
        fd stays open while this object holds the slice."""
        return self.slice.fd, self.slice.position, self.slice.size

    def __bytes__(self) -> bytes:
        return self.slice.read()

    def __len__(self) -> int:
        return self.slice.size


# Built per request and never changed afterwards; not frozen=True, whose __init__
# sets each field through object.__setattr__ (5x the cost: 2 µs for 8 fields here).
@dataclass(slots=True)
class FetchPartitionRequest:
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1


# (not frozen: as above)
@dataclass(slots=True)
class FetchPartitionResult:
    error: int = ErrorCode.NONE
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: Any = b""                        # bytes or SliceRecords
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset) for a follower to truncate to
    aborted: tuple[AbortedTxn, ...] = ()      # read_committed: aborted transactions in the data
    # the partition's change_seq when this read found the fetcher caught up with
    # nothing to send (-1 otherwise): what a fetch session remembers, see
    # ReplicaManager.fetch
    caught_up_seq: int = -1

    @property
    def size(self) -> int:
        return len(self.records) if self.records is not None else 0


def read_all(partitions: Mapping[TopicPartition, Partition], replica_id: int, max_bytes: int,
             isolation: int, entries: dict[TopicPartition, FetchPartitionRequest],
             hard_max_bytes_limit: bool, skip: set[TopicPartition],
             throttle: Throttle = None) -> dict[TopicPartition, FetchPartitionResult]:
    """Read ``entries`` in request order within one ``max_bytes`` budget; the
    partitions in ``skip`` are left out of the result unread, those ``throttle``
    holds back are answered without records."""
    remaining = max_bytes
    min_one = not hard_max_bytes_limit
    out: dict[TopicPartition, FetchPartitionResult] = {}
    for tp, req in entries.items():
        if tp in skip:
            continue   # nothing new since the session last looked (see ReplicaManager.fetch)
        r = read_partition(partitions.get(tp), req, replica_id, isolation,
                           max(0, min(req.max_bytes, remaining)), min_one, throttle)
        if r.size:
            min_one = False
            remaining = max(0, remaining - r.size)
        out[tp] = r
    return out


def read_partition(p: Partition | None, req: FetchPartitionRequest, replica_id: int,
                   isolation: int, limit: int, min_one: bool,
                   throttle: Throttle = None) -> FetchPartitionResult:
    """One partition's answer: an error, the diverging epoch, caught up (no
    records, with the partition's ``change_seq``), no records (held back by
    ``throttle``), or up to ``limit`` bytes."""
    if p is None:
        return FetchPartitionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if not p.is_leader:
        return FetchPartitionResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    error = p.check_leader_epoch(req.current_leader_epoch)
    if error:
        return FetchPartitionResult(error)
    hw, lso, start = p.high_watermark, p.last_stable_offset, p.log_start_offset
    # a follower checking for divergence (KIP-595 style, v12+)
    diverging = p.diverging_epoch(req.last_fetched_epoch, req.fetch_offset)
    if diverging is not None:
        return FetchPartitionResult(ErrorCode.NONE, hw, lso, start, b"", diverging)
    upper = p.fetch_upper_bound(replica_id, isolation)
    if start <= req.fetch_offset == (p.log_end_offset if upper is None else upper):
        # caught up: nothing to read (the common case of a replica fetch over many
        # partitions, most of them idle)
        return FetchPartitionResult(ErrorCode.NONE, hw, lso, start, b"",
                                    caught_up_seq=p.change_seq)
    if throttle is not None and throttle(p):
        if not start <= req.fetch_offset <= p.log_end_offset:
            return FetchPartitionResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, lso, start)
        return FetchPartitionResult(ErrorCode.NONE, hw, lso, start, b"")
    try:
        rr = p.read(req.fetch_offset, limit, upper=upper, min_one_batch=min_one)
    except OffsetOutOfRangeError:
        return FetchPartitionResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, lso, start)
    records = SliceRecords(rr.slice) if rr.slice.size else b""
    aborted: tuple[AbortedTxn, ...] = ()
    if rr.slice.size and replica_id < 0 and isolation == READ_COMMITTED and upper is not None:
        aborted = tuple(p.aborted_txns(req.fetch_offset, rr, upper))
    return FetchPartitionResult(ErrorCode.NONE, hw, lso, start, records, aborted=aborted)


def probe_partition(p: Partition | None, req: FetchPartitionRequest, replica_id: int,
                    isolation: int, min_bytes: int, throttle: Throttle = None) -> tuple[int, bool]:
    """(bytes available to a parked fetch now, whether it must be answered now):
    DelayedFetch's probe, run on every change of a partition it waits on.

    With ``min_bytes`` <= 1 (every follower, and consumers at the default
    fetch.min.bytes) a position inside [log start, read bound) is enough to know:
    below the bound there is at least one batch, counted as 1 byte without reading
    the log (the read that answers comes once, when the fetch completes). Any
    other case is measured by reading the partition, as the answer would."""
    if (min_bytes <= 1 and p is not None and p.is_leader
            and not p.check_leader_epoch(req.current_leader_epoch)
            and (throttle is None or not throttle(p))):
        upper = p.fetch_upper_bound(replica_id, isolation)
        end = p.log_end_offset if upper is None else upper
        if (p.log_start_offset <= req.fetch_offset < end
                and p.diverging_epoch(req.last_fetched_epoch, req.fetch_offset) is None):
            return 1, False
    r = read_partition(p, req, replica_id, isolation, req.max_bytes, True, throttle)
    return r.size, bool(r.error or r.diverging_epoch)


def valid_follower_position(p: Partition, req: FetchPartitionRequest) -> bool:
    """Whether a follower's fetch offset may count as its LEO: we lead at its
    epoch, the offset is within our log, and its log does not diverge from
    ours (a diverging follower's offset would let the HW pass records that
    differ on its disk)."""
    return (p.is_leader and not p.check_leader_epoch(req.current_leader_epoch)
            and p.log_start_offset <= req.fetch_offset <= p.log_end_offset
            and p.diverging_epoch(req.last_fetched_epoch, req.fetch_offset) is None)
