"""KIP-890 verification on the partition leader: which batches are verified, how the
coordinator's answers become produce errors, and the guard against a marker landing
while the answer is awaited (coordinator/transaction/verification.py, replication/txn_verify.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from coordinator.transaction.verification import TxnVerifier, VerificationUnsupported, produce_error
from client.errors import KafkaConnectionError
from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.unit.broker.replication.fakes import FakeBroker, FakeClock

TP = ("t", 0)
NOW = FakeClock().now_ms


def txn_batch(pid: int, seq: int, epoch: int = 0, transactional: bool = True) -> bytearray:
    return build_batch([(b"k", b"v", NOW)], producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, transactional=transactional)


class FakeVerifier:
    def __init__(self, answer: dict | None = None, during=None) -> None:  # noqa: ANN001
        self.answer = answer or {}
        self.asked: list[tuple] = []
        self.during = during

    async def verify(self, tid: str, pid: int, epoch: int, tps: list) -> dict:
        self.asked.append((tid, pid, epoch, tuple(tps)))
        if self.during is not None:
            await self.during()
        return dict(self.answer)


def produce(b: FakeBroker, data: bytearray, tid: str | None = "tx") -> int:
    return asyncio.run(b.replicas.appends.append_records(-1, 1000, {TP: data},
                                                  transactional_id=tid))[TP].error


def test_only_a_transactions_first_batch_on_a_partition_is_verified(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t")
    v = b.replicas.verifier = FakeVerifier()
    assert produce(b, txn_batch(7, 0)) == ErrorCode.NONE
    assert v.asked == [("tx", 7, 0, (TP,))]
    assert produce(b, txn_batch(7, 1)) == ErrorCode.NONE        # the transaction is open here
    assert produce(b, txn_batch(8, 0, transactional=False), tid=None) == ErrorCode.NONE
    assert len(v.asked) == 1
    asyncio.run(b.replicas.appends.append_markers(1000, 7, 0, True, 0, [TP]))
    assert produce(b, txn_batch(7, 2)) == ErrorCode.NONE        # a new transaction: asked again
    assert len(v.asked) == 2


def test_an_unverified_batch_is_refused_and_nothing_appended(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t")
    b.replicas.verifier = FakeVerifier({TP: ErrorCode.INVALID_TXN_STATE})
    p = b.replicas.partition(*TP)
    assert produce(b, txn_batch(7, 0)) == ErrorCode.INVALID_TXN_STATE
    assert p.log_end_offset == 0 and p.producers.ongoing == {}
    assert p.last_stable_offset == p.high_watermark                # nothing hangs


def test_a_marker_during_the_wait_fails_the_append(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t")
    assert produce(b, txn_batch(7, 0), tid=None) == ErrorCode.NONE   # no verifier yet
    asyncio.run(b.replicas.appends.append_markers(1000, 7, 0, False, 0, [TP]))

    async def abort_meanwhile() -> None:
        await b.replicas.appends.append_markers(1000, 7, 0, False, 0, [TP])

    b.replicas.verifier = FakeVerifier(during=abort_meanwhile)
    p = b.replicas.partition(*TP)
    end = p.log_end_offset
    assert produce(b, txn_batch(7, 1)) == ErrorCode.INVALID_TXN_STATE
    assert p.log_end_offset == end + 1 and p.producers.ongoing == {}   # only the marker


def test_coordinator_answers_become_produce_errors() -> None:
    assert produce_error(ErrorCode.PRODUCER_FENCED) == ErrorCode.INVALID_PRODUCER_EPOCH
    for code in (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                 ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
        assert produce_error(code) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert produce_error(ErrorCode.INVALID_TXN_STATE) == ErrorCode.INVALID_TXN_STATE


def test_the_verifier_asks_the_local_or_the_remote_coordinator() -> None:
    tps = [("t", 0), ("t", 1)]
    local = []

    def local_verify(tid: str, pid: int, epoch: int, asked: list) -> dict:
        local.append(tid)
        return {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.INVALID_TXN_STATE}

    async def send(broker: int, tid: str, pid: int, epoch: int, asked: list) -> tuple:
        if tid == "gone":
            raise KafkaConnectionError("refused")
        if tid == "old":
            raise VerificationUnsupported("no v4")  # what the adapter makes of NoCommonVersion
        if tid == "moving":
            return ErrorCode.NOT_COORDINATOR, {}
        return ErrorCode.NONE, {("t", 0): ErrorCode.PRODUCER_FENCED, ("t", 1): ErrorCode.NONE}

    owners = {"mine": 1, "theirs": 2, "gone": 2, "old": 2, "moving": 2, "nobody": None}
    v = TxnVerifier(1, owners.get, local_verify, send)

    def ask(tid: str) -> dict:
        return asyncio.run(v.verify(tid, 5, 0, tps))

    assert ask("mine") == {("t", 1): ErrorCode.INVALID_TXN_STATE} and local == ["mine"]
    assert ask("theirs") == {("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
    assert ask("gone") == dict.fromkeys(tps, ErrorCode.NOT_ENOUGH_REPLICAS)
    assert ask("old") == {}                                      # verification skipped
    assert ask("moving") == dict.fromkeys(tps, ErrorCode.NOT_ENOUGH_REPLICAS)
    assert ask("nobody") == dict.fromkeys(tps, ErrorCode.NOT_ENOUGH_REPLICAS)
