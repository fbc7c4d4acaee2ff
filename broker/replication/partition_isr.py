"""ISR maintenance of a leader partition: the lag clocks, the ISR changes it
proposes and the controller's answers to them (Kafka ``Partition``'s
``maybeExpandIsr`` / ``maybeShrinkIsr`` / ``handleAlterPartitionError``).

Holds what the leader knows of each follower (``FollowerState``: its LEO and
when it last caught up), the AlterPartition in flight (``PendingIsrChange``)
and the steps over a ``Partition``'s state, each a function of the partition as
``IsrPartition`` names it (a Protocol, so this module does not import partition.py):

* ``start_follower_clocks`` / ``refresh_caught_up_follower``: the lag clocks
  (``Partition.update_follower_fetch_state`` keeps the rest of a fetch's
  bookkeeping, with the HW step it ends with).
* ``maybe_expand_isr`` / ``maybe_shrink_isr`` (and ``out_of_sync_replicas``,
  the shrink's input): propose through ``Partition.isr_sink``; True if submitted.
* ``on_alter_partition_answer``: apply the controller's answer, fenced by
  epochs; True if the HW moved.

Invariants: at most one ISR change in flight per partition
(``Partition.pending_isr``); the ISR changes only from the controller's word
(an answer here or a LeaderAndIsr), never from a proposal alone; while a change
is pending the HW is computed over its ``maximal`` ISR. ``Partition`` keeps
methods of the same names that call these (its callers and tests use them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from broker.why import isr_facts
from broker.why.isr_facts import LeaderPartitionView
from protocol.errors import ErrorCode

# the partition's logger: these lines are about the partition, as before the split
log = logging.getLogger("broker.replication.partition")


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower (from its Fetch requests)."""

    broker_id: int
    log_end_offset: int = -1         # -1: not fetched since this broker became leader
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_leo: int = -1  # the leader's LEO when this follower last fetched


@dataclass(frozen=True, slots=True)
class PendingIsrChange:
    """An AlterPartition in flight: ``proposed`` asked for, ``committed`` still in force.

    ``maximal`` (committed | proposed) is what the HW is computed over until
    the controller answers: an addition counts at once (the follower is
    already caught up to the HW), a removal only once committed.
    """

    proposed: frozenset[int]
    committed: frozenset[int]
    leader_epoch: int
    partition_epoch: int
    sent_ms: int = field(default=0, compare=False)

    @property
    def maximal(self) -> frozenset[int]:
        return self.committed | self.proposed

    @property
    def is_shrink(self) -> bool:
        return not self.proposed >= self.committed


# The ReplicaManager's seam to the AlterPartitionManager: submit this change of the
# partition's ISR (the sink is bound to its partition).
IsrSink = Callable[[PendingIsrChange], None]


class IsrPartition(LeaderPartitionView, Protocol):
    """What the ISR steps read and write of a leader Partition (partition.py, which
    imports this module): its ISR, the change in flight, the followers' state."""

    isr: frozenset[int]
    pending_isr: PendingIsrChange | None
    partition_epoch: int
    leader_epoch_start_offset: int
    isr_sink: IsrSink | None

    @property
    def followers(self) -> dict[int, FollowerState]: ...

    @property
    def is_leader(self) -> bool: ...

    def maybe_increment_high_watermark(self) -> bool: ...

# AlterPartition errors after which the leader goes back to its committed ISR
# and may propose again (Kafka: the request was surely not applied).
REVERT_ERRORS = frozenset({ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.INELIGIBLE_REPLICA})
# Errors that say our view is stale: keep the change pending (no new proposal,
# HW over the maximal ISR) until a LeaderAndIsr brings the newer state.
FENCED_ERRORS = frozenset({ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION,
                           ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID,
                           ErrorCode.NEW_LEADER_ELECTED})


def start_follower_clocks(p: IsrPartition) -> None:
    """ISR followers count as caught up from now on: called once the whole
    LeaderAndIsr that made us leader has been applied. Applying one for
    10,000 new partitions takes half a minute here, nobody can fetch from us
    meanwhile, and clocks started at ``make_leader`` had run out by the end:
    every new leader shrank its ISR to itself at once."""
    now = p.clock()
    for r, s in p.followers.items():
        if r in p.isr and s.last_caught_up_ms < now:
            s.last_caught_up_ms = now


def refresh_caught_up_follower(p: IsrPartition, replica_id: int, now: int) -> bool:
    """A follower fetched again at the offset of its last fetch, which was our
    LEO, nothing having changed here since (the caller checked ``change_seq``;
    the LEO cannot have moved without a change): if it is an ISR member, note
    it caught up at ``now`` and return True — the whole of
    ``update_follower_fetch_state`` would do no more. False: take that path.
    Runs for every idle partition of every replica fetch, so it is kept to a
    lookup and two stores."""
    state = p.followers.get(replica_id)
    if state is None or p.pending_isr is not None or replica_id not in p.isr:
        return False
    if now > state.last_caught_up_ms:
        state.last_caught_up_ms = now
    state.last_fetch_ms = now
    return True


def maybe_expand_isr(p: IsrPartition, replica_id: int) -> bool:
    """Propose ``replica_id`` for the ISR once its LEO reached our HW and the
    start of our leader epoch; True if an AlterPartition was submitted.

    One ISR change in flight at a time; nothing without an ``isr_sink``.
    """
    state = p.followers.get(replica_id)
    if (state is None or not p.is_leader or p.isr_sink is None
            or p.pending_isr is not None or replica_id in p.isr
            or replica_id not in p.replicas):
        return False
    if (state.log_end_offset < p.high_watermark
            or state.log_end_offset < p.leader_epoch_start_offset):
        return False
    log.info("%s-%d: expanding ISR %s with %d (its LEO %d, HW %d)", p.topic, p.partition,
             sorted(p.isr), replica_id, state.log_end_offset, p.high_watermark)
    isr_facts.expand_proposed(p, replica_id)   # broker/why: the reason, kept for DescribeWhy
    _propose(p, p.isr | {replica_id})
    return True


def out_of_sync_replicas(p: IsrPartition, max_lag_ms: int) -> set[int]:
    """ISR followers that have not caught up within ``max_lag_ms`` (the shrink input)."""
    now = p.clock()
    return {r for r, s in p.followers.items()
            if r in p.isr and now - s.last_caught_up_ms > max_lag_ms}


def maybe_shrink_isr(p: IsrPartition, max_lag_ms: int) -> bool:
    """Propose an ISR without the followers that have not caught up to our
    LEO within ``max_lag_ms`` (replica.lag.time.max.ms); True if submitted.

    The HW keeps counting them until the controller commits the shrink.
    The leader itself always stays; one ISR change in flight at a time.
    """
    if not p.is_leader or p.isr_sink is None or p.pending_isr is not None:
        return False
    lagging = out_of_sync_replicas(p, max_lag_ms)
    lagging.discard(p.local_broker_id)
    if not lagging:
        return False
    log.info("%s-%d: shrinking ISR %s by %s (no catch-up within %d ms; LEO %d, HW %d)",
             p.topic, p.partition, sorted(p.isr), sorted(lagging), max_lag_ms,
             p.log_end_offset, p.high_watermark)
    isr_facts.shrink_proposed(p, lagging, max_lag_ms)   # broker/why: reasons and lags
    _propose(p, p.isr - lagging)
    return True


def _propose(p: IsrPartition, new_isr: frozenset[int]) -> None:
    assert p.isr_sink is not None
    change = PendingIsrChange(frozenset(new_isr), p.isr, p.leader_epoch,
                              p.partition_epoch, p.clock())
    p.pending_isr = change
    p.isr_sink(change)


def on_alter_partition_answer(p: IsrPartition, change: PendingIsrChange, error: int,
                              leader_epoch: int = -1,
                              isr: tuple[int, ...] = (), partition_epoch: int = -1) -> bool:
    """Apply the controller's answer to ``change``; True if the HW moved.

    Fencing: an answer to a change that is no longer pending (a
    LeaderAndIsr replaced it, or the leader epoch moved on), or that is
    older than our partition epoch, changes nothing. REVERT_ERRORS go back
    to the committed ISR; FENCED_ERRORS leave the change pending until a
    LeaderAndIsr arrives (the controller knows a newer state than ours).
    """
    if p.pending_isr is not change or not p.is_leader:
        return False
    if error:
        if error in REVERT_ERRORS:
            log.info("%s-%d: AlterPartition %s not applied (%s); back to ISR %s", p.topic,
                     p.partition, sorted(change.proposed), ErrorCode.from_code(error).name,
                     sorted(p.isr))
            p.pending_isr = None
        else:
            log.warning("%s-%d: AlterPartition %s rejected: %s; awaiting LeaderAndIsr",
                        p.topic, p.partition, sorted(change.proposed),
                        ErrorCode.from_code(error).name)
        return False
    if leader_epoch != p.leader_epoch or partition_epoch < p.partition_epoch:
        log.info("%s-%d: ignoring AlterPartition answer (epoch %d/%d, ours %d/%d)", p.topic,
                 p.partition, leader_epoch, partition_epoch, p.leader_epoch,
                 p.partition_epoch)
        return False
    p.pending_isr = None
    before, p.isr = p.isr, frozenset(isr)
    isr_facts.isr_committed(p, before)   # broker/why: the change, with its reasons
    p.partition_epoch = partition_epoch
    log.info("%s-%d: ISR is now %s (partition epoch %d)", p.topic, p.partition,
             sorted(p.isr), partition_epoch)
    return p.maybe_increment_high_watermark()
