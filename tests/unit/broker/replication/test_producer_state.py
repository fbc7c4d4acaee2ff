"""Idempotent producer state: Kafka 3.9's duplicate / sequence / epoch rules."""

from __future__ import annotations

import pytest

from broker.replication.producer_state import ProducerStateManager, last_sequence
from protocol.errors import ErrorCode, KafkaError
from protocol.records import build_batch, read_header


def header(pid: int = 7, epoch: int = 0, seq: int = 0, count: int = 1, base_offset: int = 0):
    batch = build_batch([(None, b"v", 1000 + i) for i in range(count)], producer_id=pid,
                        producer_epoch=epoch, base_sequence=seq, base_offset=base_offset)
    return read_header(batch)


def appended(psm: ProducerStateManager, h, offset: int) -> None:
    assert psm.check_client_batch(h) is None
    psm.update(h, offset, h.max_timestamp)


def test_unknown_producer_accepts_any_sequence() -> None:
    psm = ProducerStateManager()
    assert psm.check_client_batch(header(seq=42)) is None


def test_duplicate_of_any_of_last_five_returns_original_offsets() -> None:
    psm = ProducerStateManager()
    for i in range(6):
        appended(psm, header(seq=i * 2, count=2), offset=100 + i * 2)
    # batch 0 (seq 0-1) fell out of the five; batches 1..5 are remembered
    dup = psm.check_client_batch(header(seq=4, count=2))
    assert dup is not None and (dup.first_offset, dup.last_offset) == (104, 105)
    with pytest.raises(KafkaError) as e:
        psm.check_client_batch(header(seq=0, count=2))
    assert e.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_gap_is_out_of_order() -> None:
    psm = ProducerStateManager()
    appended(psm, header(seq=0, count=3), 0)
    with pytest.raises(KafkaError) as e:
        psm.check_client_batch(header(seq=4))
    assert e.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert psm.check_client_batch(header(seq=3)) is None


def test_older_epoch_is_invalid_producer_epoch_and_new_epoch_must_start_at_zero() -> None:
    psm = ProducerStateManager()
    appended(psm, header(epoch=3, seq=0), 0)
    with pytest.raises(KafkaError) as e:
        psm.check_client_batch(header(epoch=2, seq=1))
    assert e.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(KafkaError) as e:
        psm.check_client_batch(header(epoch=4, seq=5))
    assert e.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert psm.check_client_batch(header(epoch=4, seq=0)) is None


def test_sequence_wraps_at_int32_max() -> None:
    psm = ProducerStateManager()
    h = header(seq=0x7FFFFFFF)
    assert last_sequence(h) == 0x7FFFFFFF
    appended(psm, h, 0)
    assert psm.check_client_batch(header(seq=0)) is None
    assert last_sequence(header(seq=0x7FFFFFFE, count=3)) == 0


def test_rebuild_from_headers_and_expiry() -> None:
    psm = ProducerStateManager()
    hs = [header(pid=1, seq=0, base_offset=0), header(pid=2, seq=0, base_offset=1),
          header(pid=1, seq=1, base_offset=2), header(pid=-1, base_offset=3)]
    assert psm.rebuild(hs) == 4
    assert sorted(psm.producers) == [1, 2]
    dup = psm.check_client_batch(header(pid=1, seq=1))
    assert dup is not None and dup.first_offset == 2
    assert psm.remove_expired(now_ms=1000 + 10, expiration_ms=5) == 2
    assert len(psm) == 0
