"""The records of ``__transaction_state``: Kafka's key and value formats, exactly.

Key and value each start with an int16 schema version, then the struct of that
version (Kafka's ``transaction-coordinator/.../message/TransactionLog*.json``)::

    key   = int16 0 | TransactionLogKey v0
                        transactionalId: string
    value = int16 0 | TransactionLogValue v0
                        producerId: int64, producerEpoch: int16,
                        transactionTimeoutMs: int32, transactionStatus: int8,
                        transactionPartitions: [topic: string, partitionIds: [int32]]?
                                                (null when the state is Empty),
                        transactionLastUpdateTimestampMs: int64,
                        transactionStartTimestampMs: int64

(strings int16-length prefixed, arrays int32-counted, ``?`` = nullable, count -1.)
Value v1 is the flexible form (compact strings and arrays, tagged fields:
0 PreviousProducerId, 1 NextProducerId, 2 ClientTransactionVersion); Kafka 3.9
writes v0 until transaction.version 1 is enabled, and so do we; both are read.
A null value is a tombstone: the transactional id expired (state Dead). The
topic is compacted, so the newest record per transactional id is its state.
"""

from __future__ import annotations

from collections.abc import Iterable

from coordinator.transaction.txn_state import TopicPartition, TxnMetadata, TxnState
from protocol.codec import decode_prefixed, encode_prefixed
from protocol.primitives import DecodeError
from protocol.internal_topics import TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE
from protocol.schema import Struct

PARTITIONS_SCHEMA = TRANSACTION_LOG_VALUE.structs["PartitionsSchema"]

KEY_VERSION = 0
VALUE_VERSION = 0

def transaction_key(transactional_id: str) -> bytes:
    return encode_prefixed(TRANSACTION_LOG_KEY, KEY_VERSION, transactional_id=transactional_id)


def read_key(data: bytes | memoryview) -> str:
    """The transactional id of a record key (DecodeError on another layout)."""
    _, key = decode_prefixed(TRANSACTION_LOG_KEY, data)
    return str(key.transactional_id)


def _by_topic(partitions: Iterable[TopicPartition]) -> list[Struct]:
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        topics.setdefault(topic, []).append(partition)
    return [PARTITIONS_SCHEMA.new(topic=t, partition_ids=ps) for t, ps in topics.items()]


def transaction_value(meta: TxnMetadata) -> bytes:
    """The value Kafka writes for ``meta`` (v0). An Empty transaction has no
    partitions (written as null); a Dead one is written as a tombstone instead,
    so it has no value (ValueError)."""
    if meta.state is TxnState.DEAD:
        raise ValueError(f"{meta.transactional_id!r} is Dead: write a tombstone, not a value")
    if meta.state is TxnState.EMPTY and meta.partitions:
        raise ValueError(f"{meta.transactional_id!r} is Empty but holds partitions "
                         f"{sorted(meta.partitions)}")
    return encode_prefixed(
        TRANSACTION_LOG_VALUE, VALUE_VERSION, producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch, transaction_timeout_ms=meta.txn_timeout_ms,
        transaction_status=int(meta.state),
        transaction_partitions=None if meta.state is TxnState.EMPTY
        else _by_topic(meta.partitions),
        transaction_last_update_timestamp_ms=meta.txn_last_update_timestamp,
        transaction_start_timestamp_ms=meta.txn_start_timestamp)


def read_value(transactional_id: str, data: bytes | memoryview | None) -> TxnMetadata | None:
    """The state a record value holds (None for a tombstone). DecodeError for an
    unknown version or status byte, as Kafka's readTxnRecordValue throws."""
    if data is None:
        return None
    _, v = decode_prefixed(TRANSACTION_LOG_VALUE, data)
    try:
        state = TxnState(v.transaction_status)
    except ValueError:
        raise DecodeError(f"unknown transaction state byte {v.transaction_status} "
                          f"for {transactional_id!r}") from None
    partitions = frozenset((p.topic, int(i)) for p in v.transaction_partitions or ()
                           for i in p.partition_ids)
    return TxnMetadata(transactional_id, int(v.producer_id), int(v.producer_epoch),
                       int(v.transaction_timeout_ms), state, partitions,
                       txn_start_timestamp=int(v.transaction_start_timestamp_ms),
                       txn_last_update_timestamp=int(v.transaction_last_update_timestamp_ms))


__all__ = ["KEY_VERSION", "TRANSACTION_LOG_KEY", "TRANSACTION_LOG_VALUE", "VALUE_VERSION",
           "read_key", "read_value", "transaction_key", "transaction_value"]
