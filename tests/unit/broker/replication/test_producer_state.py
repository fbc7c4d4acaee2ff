"""Idempotent producer state: Kafka 3.9's duplicate / sequence / epoch rules."""

from __future__ import annotations

import pytest

from broker.replication.producer_state import ProducerStateManager, last_sequence
from protocol.errors import ErrorCode, KafkaError
from protocol.records import CONTROL_ABORT, CONTROL_COMMIT, build_batch, \
    build_control_batch, read_header


def header(pid: int = 7, epoch: int = 0, seq: int = 0, count: int = 1, base_offset: int = 0,
           transactional: bool = False):
    batch = build_batch([(None, b"v", 1000 + i) for i in range(count)], producer_id=pid,
                        producer_epoch=epoch, base_sequence=seq, base_offset=base_offset,
                        transactional=transactional)
    return read_header(batch)


def marker(pid: int = 7, epoch: int = 0, commit: bool = True):
    return read_header(build_control_batch(commit=commit, producer_id=pid, producer_epoch=epoch,
                                           coordinator_epoch=0, timestamp=2000))


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
    assert psm.rebuild((h, None) for h in hs) == 4
    assert sorted(psm.producers) == [1, 2]
    dup = psm.check_client_batch(header(pid=1, seq=1))
    assert dup is not None and dup.first_offset == 2
    assert psm.remove_expired(now_ms=1000 + 10, expiration_ms=5) == 2
    assert len(psm) == 0


# -- transactions ---------------------------------------------------------------------

def test_open_transactions_hold_the_last_stable_offset_until_the_marker_is_replicated() -> None:
    psm = ProducerStateManager()
    appended(psm, header(pid=1, transactional=True, count=2), 10)
    appended(psm, header(pid=2, transactional=True), 12)
    appended(psm, header(pid=1, seq=2, transactional=True), 13)   # same txn: first stays 10
    assert psm.ongoing == {1: 10, 2: 12}
    assert psm.first_unstable_offset(high_watermark=14) == 10
    done = psm.update(marker(pid=1, commit=True), 14, 2000, CONTROL_COMMIT)
    assert done is not None and (done.first_offset, done.last_offset, done.aborted) == (10, 14, False)
    # the commit marker is not below the HW yet: producer 1's txn still holds the LSO
    assert psm.first_unstable_offset(high_watermark=14) == 10
    assert psm.first_unstable_offset(high_watermark=15) == 12
    done = psm.update(marker(pid=2, commit=False), 15, 2000, CONTROL_ABORT)
    assert done is not None and done.aborted
    assert psm.first_unstable_offset(high_watermark=16) is None


def test_aborted_entry_lso_is_the_earliest_other_open_transaction() -> None:
    psm = ProducerStateManager()
    appended(psm, header(pid=1, transactional=True), 5)
    appended(psm, header(pid=2, transactional=True), 6)
    done = psm.update(marker(pid=2, commit=False), 7, 2000, CONTROL_ABORT)
    assert done is not None and psm.last_stable_offset_after(done) == 5
    done = psm.update(marker(pid=1, commit=False), 8, 2000, CONTROL_ABORT)
    assert done is not None and psm.last_stable_offset_after(done) == 9


def test_a_marker_without_an_open_transaction_ends_nothing() -> None:
    psm = ProducerStateManager()
    assert psm.update(marker(pid=3, epoch=1), 0, 2000, CONTROL_ABORT) is None
    assert psm.entry(3) is not None and psm.entry(3).epoch == 1
    assert psm.first_unstable_offset(high_watermark=0) is None


def test_non_transactional_write_inside_a_transaction_is_invalid_txn_state() -> None:
    psm = ProducerStateManager()
    appended(psm, header(pid=1, transactional=True), 0)
    with pytest.raises(KafkaError) as e:
        psm.check_client_batch(header(pid=1, seq=1))
    assert e.value.code == ErrorCode.INVALID_TXN_STATE


def test_marker_from_an_older_epoch_is_refused() -> None:
    psm = ProducerStateManager()
    appended(psm, header(pid=1, epoch=4, transactional=True), 0)
    with pytest.raises(KafkaError) as e:
        psm.check_marker(1, 3)
    assert e.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    psm.check_marker(1, 4)
    psm.check_marker(99, 0)     # unknown producer: allowed


def test_marker_from_an_older_coordinator_epoch_is_fenced() -> None:
    """Kafka's appendEndTxnMarker: after a marker from coordinator epoch 5, one from
    epoch 4 (a zombie coordinator) is TRANSACTION_COORDINATOR_FENCED."""
    psm = ProducerStateManager()
    appended(psm, header(pid=1, epoch=4, transactional=True), 0)
    psm.check_marker(1, 4, coordinator_epoch=5)
    psm.update(marker(pid=1, commit=True)._replace(base_offset=1, producer_epoch=4), 1, 0,
               CONTROL_COMMIT, 5)
    with pytest.raises(KafkaError) as e:
        psm.check_marker(1, 4, coordinator_epoch=4)
    assert e.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    psm.check_marker(1, 4, coordinator_epoch=5)
    psm.check_marker(1, 4, coordinator_epoch=6)


def test_rebuild_restores_open_and_ended_transactions() -> None:
    psm = ProducerStateManager()
    log = [(header(pid=1, transactional=True, base_offset=0), None),
           (header(pid=2, transactional=True, base_offset=1), None),
           (marker(pid=1, commit=False)._replace(base_offset=2), (CONTROL_ABORT, 7))]
    assert psm.rebuild(log) == 3
    assert psm.producers[1].coordinator_epoch == 7     # kept for fencing (and snapshots)
    assert psm.ongoing == {2: 1}
    assert [(t.producer_id, t.aborted) for t in psm.unreplicated] == [(1, True)]
    assert psm.first_unstable_offset(high_watermark=3) == 1


def test_producers_with_open_transactions_do_not_expire() -> None:
    psm = ProducerStateManager()
    appended(psm, header(pid=1, transactional=True), 0)
    appended(psm, header(pid=2), 1)
    assert psm.remove_expired(now_ms=10_000, expiration_ms=5) == 1
    assert sorted(psm.producers) == [1]
