"""The seam between a coordinator and the log of the partitions it owns
(__consumer_offsets for groups, __transaction_state for transactions); the broker's
side is ``broker.coordination.offsets_log.BrokerOffsetsLog``, a fake in tests.

``OffsetsLog``: ``append`` writes one batch of records to a partition through the
replica manager (so acks=-1 waits for the ISR, as Kafka's coordinators write);
``read_chunks`` walks a partition's local log from its start to its end in pieces,
as ``LogEntry`` values: plain (key, value) records, and around transactions
``TxnRecord`` (a record of a transactional batch) and ``TxnEnd`` (its producer's
COMMIT / ABORT marker); ``leader_epoch`` says whether we lead the partition now.
``build_batch`` is the batch an append writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple, Protocol

from protocol.records import BatchBuilder

KeyValue = tuple[bytes, bytes | None]


class TxnRecord(NamedTuple):
    """A record of a transactional batch (written by TxnOffsetCommit)."""

    producer_id: int
    key: bytes
    value: bytes | None


class TxnEnd(NamedTuple):
    """A producer's COMMIT / ABORT marker."""

    producer_id: int
    commit: bool


# what read_chunks yields: plain records, and around transactions these two
LogEntry = KeyValue | TxnRecord | TxnEnd


class OffsetsLog(Protocol):
    async def append(self, partition: int, records: Sequence[KeyValue], *, acks: int,
                     timeout_ms: int, timestamp: int,
                     producer: tuple[int, int] | None = None) -> int:
        """Append one batch (transactional, of ``producer`` = (id, epoch), when given);
        -> the partition's error code (0 = written as asked)."""
        ...

    def read_chunks(self, partition: int) -> Iterator[list[LogEntry]] | None:
        """The partition's records in log order, a chunk at a time; None without a log."""
        ...

    def leader_epoch(self, partition: int) -> int | None:
        """Our leader epoch for the partition when we lead it, else None."""
        ...


def build_batch(records: Sequence[KeyValue], timestamp: int,
                producer: tuple[int, int] | None = None) -> bytearray:
    """One uncompressed magic-2 batch: no producer id, or a transactional batch of
    ``producer`` (id, epoch) with base sequence 0 (as Kafka's coordinator writes it;
    coordinator appends skip sequence checks)."""
    if producer is None:
        builder = BatchBuilder()
    else:
        builder = BatchBuilder(producer_id=producer[0], producer_epoch=producer[1],
                               base_sequence=0, transactional=True)
    for key, value in records:
        builder.append(key, value, timestamp)
    return builder.build()
