"""The facts about a leader partition's ISR and high watermark, and the hooks the
replication code calls to record them (the logic lives here; ``partition_isr`` and
``Partition.make_leader`` call one function each at the points where the ISR is
proposed or changes).

Hooks (each writes ``p.why``, the partition's ``IsrHistory``):

* ``shrink_proposed(p, lagging, max_lag_ms)``: ``maybe_shrink_isr`` is about to
  propose an ISR without ``lagging``. Per replica: lag_ms = now - its last
  caught-up time, lag_messages = our LEO - its LEO (-1 if it never fetched), and
  the reason text (``reasons.shrink_reason``).
* ``expand_proposed(p, replica)``: ``maybe_expand_isr`` proposes ``replica``.
* ``isr_committed(p, before)``: the controller's AlterPartition answer made
  ``p.isr`` the ISR (after ``before``).
* ``leader_and_isr(p, new_isr, leader_epoch)``: a LeaderAndIsr keeps us leader
  with another ISR (the controller removed a dead / shut-down broker itself, or a
  reassignment added one); called *before* the new state is applied, while the
  leader's view of each follower is still the old leadership's.

Views (read by DescribeWhy):

* ``hw_held_by(p)``: the maximal-ISR replicas whose LEO is at (or below, if they
  have not fetched yet) the high watermark, when the HW is below our LEO: the
  replicas the HW waits for (HW = min LEO over the ISR). Empty when HW == LEO.
* ``replica_progress(p)`` / ``partition_why(p)``: the leader's view of each
  assigned replica, and the whole ``PartitionWhy``.

The partition is what ``LeaderPartitionView`` names (a Protocol that
broker/replication/partition.py's Partition satisfies), so this module does not import
the replication package (which imports it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from broker.why import reasons
from broker.why.isr_history import IsrHistory, ProposalNote
from protocol.why_model import EXPAND, SHRINK, PartitionWhy, ReplicaProgress

NEVER = 0   # FollowerState's "not yet" for last_caught_up_ms / last_fetch_ms


class FollowerView(Protocol):
    """What the leader knows of a follower (partition_isr.FollowerState)."""

    @property
    def log_end_offset(self) -> int: ...     # -1: not fetched since we became leader

    @property
    def last_caught_up_ms(self) -> int: ...

    @property
    def last_fetch_ms(self) -> int: ...


class LeaderPartitionView(Protocol):
    """What the hooks and views read of a leader partition."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def local_broker_id(self) -> int: ...

    @property
    def clock(self) -> Callable[[], int]: ...

    @property
    def leader_epoch(self) -> int: ...

    @property
    def isr(self) -> frozenset[int]: ...

    @property
    def maximal_isr(self) -> frozenset[int]: ...

    @property
    def replicas(self) -> tuple[int, ...]: ...

    @property
    def followers(self) -> Mapping[int, FollowerView]: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def why(self) -> IsrHistory: ...


def _since(now: int, then: int) -> int:
    return now - then if then > NEVER else -1


def _lag_messages(p: LeaderPartitionView, follower_leo: int) -> int:
    return p.log_end_offset - follower_leo if follower_leo >= 0 else -1


def shrink_proposed(p: LeaderPartitionView, lagging: Iterable[int], max_lag_ms: int) -> None:
    now = p.clock()
    for replica in lagging:
        state = p.followers.get(replica)
        if state is None:
            continue
        lag_ms = now - state.last_caught_up_ms
        lag_messages = _lag_messages(p, state.log_end_offset)
        p.why.propose(SHRINK, replica, ProposalNote(
            reasons.shrink_reason(lag_ms=lag_ms, max_lag_ms=max_lag_ms,
                                  since_fetch_ms=_since(now, state.last_fetch_ms),
                                  lag_messages=lag_messages),
            lag_ms, lag_messages))


def expand_proposed(p: LeaderPartitionView, replica: int) -> None:
    state = p.followers.get(replica)
    leo = state.log_end_offset if state is not None else -1
    p.why.propose(EXPAND, replica, ProposalNote(
        reasons.expand_reason(replica_leo=leo, high_watermark=p.high_watermark), 0,
        _lag_messages(p, leo)))


def isr_committed(p: LeaderPartitionView, before: Iterable[int]) -> None:
    fallback = {(kind, r): ProposalNote(reasons.committed_without_proposal(kind), 0, -1)
                for kind in (SHRINK, EXPAND) for r in p.replicas}
    p.why.commit(before, p.isr, p.clock(), fallback)


def leader_and_isr(p: LeaderPartitionView, new_isr: Iterable[int], leader_epoch: int) -> None:
    new = frozenset(new_isr)
    if new == p.isr:
        return
    now = p.clock()
    fallback: dict[tuple[str, int], ProposalNote] = {}
    for r in p.isr - new:
        state = p.followers.get(r)
        since_fetch = _since(now, state.last_fetch_ms) if state is not None else -1
        lag_ms = _since(now, state.last_caught_up_ms) if state is not None else -1
        lag_messages = _lag_messages(p, state.log_end_offset) if state is not None else -1
        fallback[(SHRINK, r)] = ProposalNote(
            reasons.controller_shrink_reason(leader_epoch=leader_epoch,
                                             since_fetch_ms=since_fetch),
            max(lag_ms, 0), lag_messages)
    for r in new - p.isr:
        fallback[(EXPAND, r)] = ProposalNote(
            reasons.controller_expand_reason(leader_epoch=leader_epoch), 0, -1)
    p.why.commit(p.isr, new, now, fallback)
    p.why.forget_notes()


# ---- views ------------------------------------------------------------------------------

def hw_held_by(p: LeaderPartitionView) -> list[int]:
    hw, leo = p.high_watermark, p.log_end_offset
    if hw >= leo:
        return []
    held = []
    for r in sorted(p.maximal_isr):
        if r == p.local_broker_id:
            continue
        state = p.followers.get(r)
        if state is None or state.log_end_offset <= hw:
            held.append(r)
    return held


def replica_progress(p: LeaderPartitionView) -> list[ReplicaProgress]:
    out = []
    now = p.clock()
    for r in p.replicas:
        if r == p.local_broker_id:
            out.append(ReplicaProgress(r, p.log_end_offset, now, -1, r in p.isr))
            continue
        state = p.followers.get(r)
        if state is None:
            out.append(ReplicaProgress(r, -1, -1, -1, r in p.isr))
        else:
            out.append(ReplicaProgress(
                r, state.log_end_offset,
                state.last_caught_up_ms if state.last_caught_up_ms > NEVER else -1,
                state.last_fetch_ms if state.last_fetch_ms > NEVER else -1, r in p.isr))
    return out


def partition_why(p: LeaderPartitionView) -> PartitionWhy:
    return PartitionWhy(
        topic=p.topic, partition=p.partition, leader=p.local_broker_id,
        leader_epoch=p.leader_epoch, isr=sorted(p.isr), high_watermark=p.high_watermark,
        log_end_offset=p.log_end_offset, hw_held_by=hw_held_by(p),
        replicas=replica_progress(p), isr_changes=p.why.changes())
