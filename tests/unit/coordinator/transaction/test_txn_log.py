"""coordinator.transaction: the __transaction_state record layouts byte for byte (as Kafka
writes v0 and a flexible v1 reader must see them), and the state machine's table."""

from __future__ import annotations

import struct

import pytest

from coordinator.transaction.txn_log import (read_key, read_value, transaction_key,
                                        transaction_value)
from coordinator.transaction.txn_state import VALID_PREVIOUS, IllegalTransition, TxnMetadata, TxnState
from protocol.primitives import DecodeError


def s16(text: str) -> bytes:
    """int16-length string."""
    return struct.pack(">h", len(text)) + text.encode()


def test_key_is_version_zero_then_the_transactional_id() -> None:
    assert transaction_key("tx-1") == b"\x00\x00" + s16("tx-1")
    assert read_key(b"\x00\x00" + s16("tx-1")) == "tx-1"
    with pytest.raises(DecodeError):
        read_key(b"\x00\x01" + s16("tx-1"))


def test_ongoing_value_v0_layout_and_round_trip() -> None:
    meta = TxnMetadata("tx", producer_id=4001, producer_epoch=3, txn_timeout_ms=60000,
                       state=TxnState.ONGOING,
                       partitions=frozenset({("b", 1), ("a", 2), ("a", 0)}),
                       txn_start_timestamp=1_700_000_000_000,
                       txn_last_update_timestamp=1_700_000_000_500)
    expected = (struct.pack(">hqhib", 0, 4001, 3, 60000, 1)
                + struct.pack(">i", 2)                                  # two topics
                + s16("a") + struct.pack(">iii", 2, 0, 2)
                + s16("b") + struct.pack(">ii", 1, 1)
                + struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000))
    assert transaction_value(meta) == expected
    assert read_value("tx", expected) == meta


def test_empty_value_has_null_partitions_and_dead_is_a_tombstone() -> None:
    empty = TxnMetadata("tx", 9, 0, 1000, txn_last_update_timestamp=5)
    data = transaction_value(empty)
    assert data[2 + 8 + 2 + 4 + 1:][:4] == struct.pack(">i", -1)       # null array
    assert read_value("tx", data) == empty
    assert read_value("tx", None) is None
    with pytest.raises(ValueError, match="tombstone"):
        transaction_value(TxnMetadata("tx", 9, 0, 1000, state=TxnState.DEAD))
    with pytest.raises(ValueError, match="Empty but holds"):
        transaction_value(TxnMetadata("tx", 9, 0, 1000, partitions=frozenset({("a", 0)})))


def test_flexible_v1_value_with_tagged_fields_is_read() -> None:
    def uvarint(n: int) -> bytes:
        out = b""
        while n >= 0x80:
            out += bytes([n & 0x7F | 0x80])
            n >>= 7
        return out + bytes([n])

    def compact(text: str) -> bytes:
        return uvarint(len(text) + 1) + text.encode()

    tags = (uvarint(2)                                                   # two tagged fields
            + uvarint(0) + uvarint(8) + struct.pack(">q", 77)           # PreviousProducerId
            + uvarint(2) + uvarint(2) + struct.pack(">h", 2))           # ClientTransactionVersion
    data = (struct.pack(">hqhib", 1, 5000, 7, 30000, 2)                 # PrepareCommit
            + uvarint(2) + compact("t") + uvarint(2) + struct.pack(">i", 3) + uvarint(0)
            + struct.pack(">qq", 20, 10) + tags)
    meta = read_value("x", data)
    assert meta == TxnMetadata("x", 5000, 7, 30000, TxnState.PREPARE_COMMIT,
                               frozenset({("t", 3)}), txn_start_timestamp=10,
                               txn_last_update_timestamp=20)


def test_unknown_status_byte_or_version_is_a_decode_error() -> None:
    good = transaction_value(TxnMetadata("tx", 1, 0, 1000))
    bad_status = good[:16] + b"\x09" + good[17:]
    with pytest.raises(DecodeError, match="state byte 9"):
        read_value("tx", bad_status)
    with pytest.raises(DecodeError, match="unknown version"):
        read_value("tx", b"\x00\x05" + good[2:])


def test_state_table_names_and_transitions() -> None:
    assert [s.display_name for s in TxnState] == [
        "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
        "CompleteAbort", "Dead", "PrepareEpochFence"]
    assert TxnState.from_name("PrepareEpochFence") is TxnState.PREPARE_EPOCH_FENCE
    # a commit's whole life, then the next transaction
    m = TxnMetadata("tx", 1, 0, 1000)
    for to in (TxnState.ONGOING, TxnState.ONGOING, TxnState.PREPARE_COMMIT,
               TxnState.COMPLETE_COMMIT, TxnState.ONGOING, TxnState.PREPARE_ABORT,
               TxnState.COMPLETE_ABORT, TxnState.EMPTY, TxnState.DEAD):
        m = m.transition(to, now_ms=len(to.display_name))
        assert m.state is to
    # what may not happen: commit without a transaction, abort of a completed commit,
    # leaving Dead
    for start, to in ((TxnState.EMPTY, TxnState.PREPARE_COMMIT),
                      (TxnState.COMPLETE_COMMIT, TxnState.PREPARE_ABORT),
                      (TxnState.PREPARE_COMMIT, TxnState.COMPLETE_ABORT),
                      (TxnState.DEAD, TxnState.ONGOING)):
        with pytest.raises(IllegalTransition):
            TxnMetadata("tx", 1, 0, 1000, state=start).transition(to, 0)
    assert VALID_PREVIOUS[TxnState.PREPARE_ABORT] == {TxnState.ONGOING,
                                                      TxnState.PREPARE_EPOCH_FENCE}


def test_timeout_counts_only_for_an_ongoing_transaction() -> None:
    m = TxnMetadata("tx", 1, 0, 1000, state=TxnState.ONGOING, txn_start_timestamp=100)
    assert not m.has_timed_out(1100) and m.has_timed_out(1101)
    assert not TxnMetadata("tx", 1, 0, 1000, state=TxnState.PREPARE_COMMIT,
                           txn_start_timestamp=100).has_timed_out(10_000)
