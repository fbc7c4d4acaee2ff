"""KIP-890 part 1 on the partition leader: before the first transactional batch of a
producer's transaction is appended to a partition, the leader asks the transaction
coordinator whether the partition really is in that producer's ongoing transaction
(AddPartitionsToTxn v4+ with VerifyOnly; ``transaction.partition.verification.enable``,
default true as in Kafka 3.9). Without it a late or zombie write (a batch retried after
its transaction was aborted, a fenced producer) opens a transaction no coordinator
knows, and the partition's last stable offset hangs there for ever.

``TxnVerifier.verify`` answers the produce errors of the partitions that failed:

    coordinator answer                         produce error (Kafka 3.9's mapping)
    partition not in an ongoing transaction    INVALID_TXN_STATE
    PRODUCER_FENCED                            INVALID_PRODUCER_EPOCH (what producers expect)
    CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR NOT_ENOUGH_REPLICAS (the producer retries)
    no answer (connection lost, timeout)       NOT_ENOUGH_REPLICAS (Kafka: NETWORK_EXCEPTION
                                               from the AddPartitionsToTxnManager, mapped so)
    coordinator without AddPartitionsToTxn v4  verified (verification skipped, as Kafka)

The coordinator is the leader of the id's ``__transaction_state`` partition; when that
is this broker, the coordinator is asked in-process. Simplified against Kafka: one
request per produce request and coordinator (Kafka batches the transactions of many
produce requests per coordinator), and the "verification guard" is the count of
markers the producer has seen on the partition: if a marker lands while the answer is
awaited, the append fails with INVALID_TXN_STATE (the transaction it was verified for
has ended). ``broker.replication.replica_manager`` calls it through its ``verifier``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

TP = tuple[str, int]
Send = Callable[[int, str, int, int, list[TP]], Awaitable[tuple[int, dict[TP, int]]]]
LocalVerify = Callable[[str, int, int, list[TP]], dict[TP, int]]

RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset({
    ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})


class VerificationUnsupported(Exception):
    """``Send`` raises it when the coordinator's broker has no AddPartitionsToTxn v4
    (an older broker): the partition counts as verified, as Kafka skips the check."""


def produce_error(code: int) -> int:
    """A coordinator's verification answer as the produce error (module table)."""
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code in RETRY_AS_NOT_ENOUGH_REPLICAS:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        return ErrorCode.INVALID_TXN_STATE
    return code


class TxnVerifier:
    """Asks the coordinator of a transactional id; see the module docstring."""

    def __init__(self, broker_id: int, coordinator_of: Callable[[str], int | None],
                 local_verify: LocalVerify, send: Send, *, timeout_s: float = 30.0) -> None:
        self.broker_id = broker_id
        self.coordinator_of = coordinator_of     # transactional id -> broker id (or None)
        self.local_verify = local_verify
        self.send = send
        self.timeout_s = timeout_s

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: list[TP]) -> dict[TP, int]:
        """-> the produce error of each partition that failed verification."""
        coordinator = self.coordinator_of(transactional_id)
        if coordinator is None:
            return dict.fromkeys(partitions, ErrorCode.NOT_ENOUGH_REPLICAS)
        top: int
        if coordinator == self.broker_id:
            top, answers = ErrorCode.NONE, self.local_verify(
                transactional_id, producer_id, producer_epoch, partitions)
        else:
            try:
                top, answers = await asyncio.wait_for(self.send(
                    coordinator, transactional_id, producer_id, producer_epoch, partitions),
                    self.timeout_s)
            except VerificationUnsupported:
                return {}
            except (ConnectionError, OSError, asyncio.TimeoutError) as e:
                log.info("verification of %r with broker %d failed: %s", transactional_id,
                         coordinator, e)
                # not NETWORK_EXCEPTION itself: librdkafka takes that produce error as
                # permanent (the transaction becomes abortable, its queue purged)
                return dict.fromkeys(partitions, ErrorCode.NOT_ENOUGH_REPLICAS)
        if top != ErrorCode.NONE:
            return dict.fromkeys(partitions, produce_error(top))
        return {tp: produce_error(answers.get(tp, ErrorCode.INVALID_TXN_STATE))
                for tp in partitions
                if answers.get(tp, ErrorCode.INVALID_TXN_STATE) != ErrorCode.NONE}


__all__ = ["TxnVerifier", "VerificationUnsupported", "produce_error"]
