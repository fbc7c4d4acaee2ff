"""One reconciliation step of a member towards its target assignment (KIP-848).

Kafka's ``CurrentAssignmentBuilder``, as a pure function: given a member's
current assignment, the group's target assignment for it at
``target_epoch``, who owns every partition now (``owner_of``), and the
partitions the member says it owns (``owned``, None = not sent), compute the
member's next state. The caller writes a CurrentAssignment record when the
result differs.

Theory of operation (the invariant: at no moment do two members own a
partition; a partition is *owned* by a member when it is in the member's
``assigned`` or ``pending_revocation``; the coordinator's ``owners`` map says
who):

1. ``keep = assigned ∩ target`` per topic; ``revoke = assigned − keep``;
   ``add = target − keep``, minus the partitions another member still owns
   (``unreleased``; they are withheld).
2. If ``revoke`` is non-empty and the member still reports owning any of it
   (or did not report its owned partitions), the member stays at its epoch in
   UNREVOKED_PARTITIONS with ``assigned = keep`` and
   ``pending_revocation = revoke``; it is told its reduced assignment and
   must give the revoked partitions up before anything else.
3. Otherwise the member moves to the target epoch with ``assigned = keep ∪
   add``: STABLE if nothing was withheld, UNRELEASED_PARTITIONS if some
   partitions are still owned by others (they are added on a later step, once
   their owners have released them — a member in this state is re-run on each
   heartbeat).
4. A member in UNREVOKED_PARTITIONS moves on only once its reported owned
   partitions no longer contain any pending revocation; it then gets epoch + 1
   (Kafka: the epoch it will next be told) and is reconciled as in 1-3.

A revoked partition leaves ``owners`` only when the member's next record
drops it from ``pending_revocation``, i.e. after the member confirmed; a
partition is added only when ``owners`` has nobody else for it. Hence the
invariant.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable

from coordinator.group.consumer.model import Assignment, Member, MemberState

OwnerOf = Callable[[uuid.UUID, int], "str | None"]


def is_reconciled_to(member: Member, target_epoch: int) -> bool:
    """Whether the member is STABLE at ``target_epoch`` (nothing to do)."""
    return member.state == MemberState.STABLE and member.member_epoch == target_epoch


def owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """Whether ``owned`` (as reported; None = not reported, assumed yes) holds
    any of ``partitions``."""
    if owned is None:
        return True
    for topic_id, ps in owned.items():
        pending = partitions.get(topic_id)
        if pending and not pending.isdisjoint(ps):
            return True
    return False


def is_subset(owned: Assignment | None, assigned: Assignment) -> bool:
    """Kafka's isSubset: the reported partitions all belong to ``assigned``;
    an unreported (None) set is not a subset."""
    if owned is None:
        return False
    for topic_id, ps in owned.items():
        if not ps:
            continue
        mine = assigned.get(topic_id)
        if mine is None or not ps <= mine:
            return False
    return True


def next_member_state(member: Member, target_epoch: int, target: Assignment,
                      owner_of: OwnerOf, owned: Assignment | None, *,
                      trust_owned: bool = True) -> Member:
    """The member after one reconciliation step (the same object when nothing
    changes). Never mutates ``member``.

    ``trust_owned`` (Kafka's behaviour): partitions to revoke that the member
    does not report owning are dropped at once, without a revocation round.
    False (``GroupConfig.strict_revocation``): every revocation is a round
    trip — the member is told its reduced assignment and must report, in a
    later heartbeat, that it no longer owns them. This narrows (it cannot
    close: clients report only finished assignments) the window where a
    client still taking a partition from an earlier assignment reports it as
    not owned while the coordinator hands it to another member; it costs at
    most one heartbeat interval when the member really did not own them."""
    state = member.state
    if state == MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _compute_next(member, member.member_epoch, target_epoch, target, owner_of, owned,
                             trust_owned)
    if state == MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member
        return _compute_next(member, member.member_epoch + 1, target_epoch, target, owner_of,
                             owned, trust_owned)
    if state == MemberState.UNRELEASED_PARTITIONS:
        return _compute_next(member, member.member_epoch, target_epoch, target, owner_of, owned,
                             trust_owned)
    # UNKNOWN: only from a newer coordinator's record; Kafka fences unless the
    # member owns nothing, then reconciles from scratch (caller checks owned).
    return _compute_next(member, target_epoch, target_epoch, target, owner_of, owned, True)


def _compute_next(member: Member, member_epoch: int, target_epoch: int, target: Assignment,
                  owner_of: OwnerOf, owned: Assignment | None, trust_owned: bool) -> Member:
    keep_all: Assignment = {}
    revoke_all: Assignment = {}
    add_all: Assignment = {}
    withheld = False
    me = member.member_id
    for topic_id in set(target) | set(member.assigned):
        tgt = target.get(topic_id, frozenset())
        cur = member.assigned.get(topic_id, frozenset())
        keep = cur & tgt
        revoke = cur - keep
        add = set()
        for p in tgt - keep:
            owner = owner_of(topic_id, p)
            if owner is None or owner == me:
                add.add(p)
            else:
                withheld = True
        if keep:
            keep_all[topic_id] = keep
        if revoke:
            revoke_all[topic_id] = frozenset(revoke)
        if add:
            add_all[topic_id] = frozenset(add)

    if revoke_all and (not trust_owned or owns_any(owned, revoke_all)):
        return _with(member, MemberState.UNREVOKED_PARTITIONS, member_epoch, keep_all, revoke_all)
    assigned = dict(keep_all)
    for topic_id, ps in add_all.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | ps
    new_state = MemberState.UNRELEASED_PARTITIONS if withheld else MemberState.STABLE
    return _with(member, new_state, target_epoch, assigned, {})


def _with(member: Member, state: MemberState, epoch: int, assigned: Assignment,
          pending: Assignment) -> Member:
    # Kafka's updateMemberEpoch: the previous epoch becomes the current one,
    # even when the epoch does not change.
    previous = member.member_epoch
    if (member.state == state and member.member_epoch == epoch
            and member.previous_member_epoch == previous and member.assigned == assigned
            and member.pending_revocation == pending):
        return member
    return dataclasses.replace(member, state=state, member_epoch=epoch,
                               previous_member_epoch=previous, assigned=assigned,
                               pending_revocation=pending)
