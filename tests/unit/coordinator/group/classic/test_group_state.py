"""The group state table: every legal transition allowed, every other refused."""

from __future__ import annotations

import itertools

import pytest

from coordinator.group.classic.group_state import VALID_PREVIOUS, GroupState, IllegalStateTransition, \
    can_rebalance, check_transition, is_legal, matches_filter

E, PR, CR, S, D = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                   GroupState.COMPLETING_REBALANCE, GroupState.STABLE, GroupState.DEAD)

# Kafka's GroupState.validPreviousStates, written out as (from, to) pairs
LEGAL = {(S, PR), (CR, PR), (E, PR), (PR, CR), (CR, S), (PR, E),
         (S, D), (PR, D), (CR, D), (E, D), (D, D)}


@pytest.mark.parametrize("current,target", list(itertools.product(GroupState, GroupState)))
def test_transition_table(current: GroupState, target: GroupState) -> None:
    assert is_legal(current, target) == ((current, target) in LEGAL)
    if (current, target) in LEGAL:
        check_transition("g", current, target)
    else:
        with pytest.raises(IllegalStateTransition):
            check_transition("g", current, target)


def test_every_state_has_a_row() -> None:
    assert set(VALID_PREVIOUS) == set(GroupState)


def test_rebalance_allowed_from_stable_completing_and_empty_only() -> None:
    assert {s for s in GroupState if can_rebalance(s)} == {S, CR, E}


def test_state_names_and_filter() -> None:
    assert [str(s) for s in GroupState] == ["Empty", "PreparingRebalance",
                                            "CompletingRebalance", "Stable", "Dead"]
    assert matches_filter(S, {"stable"}) and matches_filter(S, set())
    assert not matches_filter(E, {"Stable", "dead"})
