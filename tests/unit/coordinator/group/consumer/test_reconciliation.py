"""One reconciliation step (CurrentAssignmentBuilder): revoke first, withhold
partitions others still own, epochs as Kafka moves them."""

from __future__ import annotations

import uuid

from coordinator.group.consumer.model import Member, MemberState
from coordinator.group.consumer.reconciliation import is_reconciled_to, is_subset, \
    next_member_state, owns_any

T = uuid.UUID(int=1)
U = uuid.UUID(int=2)


def fs(*ps: int) -> frozenset[int]:
    return frozenset(ps)


def nobody(t: uuid.UUID, p: int) -> str | None:
    return None


def test_stable_at_target_is_unchanged() -> None:
    m = Member("m", member_epoch=3, assigned={T: fs(0)})
    assert next_member_state(m, 3, {T: fs(1)}, nobody, None) is m
    assert is_reconciled_to(m, 3) and not is_reconciled_to(m, 4)


def test_only_additions_move_to_target_epoch() -> None:
    m = Member("m", member_epoch=3, previous_member_epoch=2, assigned={T: fs(0)})
    n = next_member_state(m, 5, {T: fs(0, 1), U: fs(2)}, nobody, {T: fs(0)})
    assert (n.member_epoch, n.previous_member_epoch, n.state) == (5, 3, MemberState.STABLE)
    assert n.assigned == {T: fs(0, 1), U: fs(2)} and n.pending_revocation == {}
    assert m.member_epoch == 3   # not mutated


def test_revocation_first_keeps_epoch() -> None:
    m = Member("m", member_epoch=3, assigned={T: fs(0, 1, 2)})
    n = next_member_state(m, 4, {T: fs(0), U: fs(5)}, nobody, {T: fs(0, 1, 2)})
    assert n.state == MemberState.UNREVOKED_PARTITIONS and n.member_epoch == 3
    assert n.assigned == {T: fs(0)} and n.pending_revocation == {T: fs(1, 2)}
    # still owning one of them: no progress
    assert next_member_state(n, 4, {T: fs(0), U: fs(5)}, nobody, {T: fs(0, 2)}) is n
    # owned partitions not reported: assumed still owned
    assert next_member_state(n, 4, {T: fs(0), U: fs(5)}, nobody, None) is n
    # revoked: next epoch, new partitions added
    d = next_member_state(n, 4, {T: fs(0), U: fs(5)}, nobody, {T: fs(0)})
    assert (d.member_epoch, d.state) == (4, MemberState.STABLE)
    assert d.assigned == {T: fs(0), U: fs(5)} and d.pending_revocation == {}


def test_revocation_skipped_when_member_does_not_own_them() -> None:
    m = Member("m", member_epoch=3, assigned={T: fs(0, 1)})
    n = next_member_state(m, 4, {T: fs(0)}, nobody, {T: fs(0)})
    assert (n.member_epoch, n.state, n.assigned) == (4, MemberState.STABLE, {T: fs(0)})


def test_partitions_owned_by_others_are_withheld() -> None:
    def owner(t: uuid.UUID, p: int) -> str | None:
        return "other" if (t, p) == (T, 1) else None
    m = Member("m", member_epoch=3, assigned={T: fs(0)})
    n = next_member_state(m, 4, {T: fs(0, 1, 2)}, owner, {T: fs(0)})
    assert (n.member_epoch, n.state) == (4, MemberState.UNRELEASED_PARTITIONS)
    assert n.assigned == {T: fs(0, 2)}
    # released later
    d = next_member_state(n, 4, {T: fs(0, 1, 2)}, nobody, {T: fs(0, 2)})
    assert (d.member_epoch, d.state, d.assigned) == (4, MemberState.STABLE, {T: fs(0, 1, 2)})
    # a partition the member itself holds is never withheld from it
    me = next_member_state(m, 4, {T: fs(0, 1)}, lambda t, p: "m", {T: fs(0)})
    assert me.state == MemberState.STABLE and me.assigned == {T: fs(0, 1)}


def test_only_unreleased_moves_to_target_epoch_and_waits() -> None:
    m = Member("m", member_epoch=3, assigned={})
    n = next_member_state(m, 4, {T: fs(1)}, lambda t, p: "other", {})
    assert (n.member_epoch, n.state, n.assigned) == (4, MemberState.UNRELEASED_PARTITIONS, {})


def test_unknown_state_reconciles_from_scratch() -> None:
    m = Member("m", member_epoch=3, state=MemberState.UNKNOWN, assigned={T: fs(0)})
    n = next_member_state(m, 7, {T: fs(0, 1)}, nobody, {})
    assert (n.member_epoch, n.state, n.assigned) == (7, MemberState.STABLE, {T: fs(0, 1)})


def test_helpers() -> None:
    assert owns_any(None, {T: fs(1)})
    assert not owns_any({T: fs(0)}, {T: fs(1)})
    assert owns_any({T: fs(0, 1)}, {T: fs(1)})
    assert is_subset({}, {}) and is_subset({T: fs(0)}, {T: fs(0, 1)})
    assert not is_subset(None, {T: fs(0)})
    assert not is_subset({U: fs(0)}, {T: fs(0)})
    assert is_subset({U: frozenset()}, {T: fs(0)})
