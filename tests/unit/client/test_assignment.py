"""Replica assignment against Kafka's published expectations (AdminRackAwareTest)."""

from __future__ import annotations

import random

import pytest

from client.assignment import assign_replicas
from client.assignment import rack_alternated
from controller.errors import InvalidPartitions, InvalidReplicationFactor


def test_rack_unaware_matches_kafka() -> None:
    got = assign_replicas([4, 2, 0, 3, 1], 10, 3, start_index=0)
    assert got == {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
                   5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}


def test_rack_alternated_list() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated(racks) == [0, 3, 1, 5, 4, 2]
    del racks[5]
    assert rack_alternated(racks) == [0, 3, 1, 4, 2]


def test_rack_aware_matches_kafka() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    got = assign_replicas(racks, 7, 3, start_index=0, start_partition=0)
    assert got == {0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0],
                   5: [2, 0, 3], 6: [0, 4, 2]}


def test_rack_aware_spreads_every_partition_over_racks() -> None:
    racks = {0: "a", 1: "b", 2: "b", 3: "c", 4: "c", 5: "a"}
    for seed in range(20):
        got = assign_replicas(racks, 12, 3, rng=random.Random(seed))
        for replicas in got.values():
            assert len({racks[b] for b in replicas}) == 3
            assert len(set(replicas)) == 3


def test_random_start_is_balanced_and_distinct() -> None:
    got = assign_replicas([1, 2, 3], 6, 2, rng=random.Random(7))
    leaders = [r[0] for r in got.values()]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3]
    assert all(len(set(r)) == 2 for r in got.values())


def test_start_partition_continues_numbering() -> None:
    got = assign_replicas([0, 1, 2], 2, 1, start_index=0, start_partition=3)
    assert got == {3: [0], 4: [1]}


@pytest.mark.parametrize("parts,rf", [(10, 0), (10, 6)])
def test_bad_replication_factor(parts: int, rf: int) -> None:
    with pytest.raises(InvalidReplicationFactor):
        assign_replicas(list(range(5)), parts, rf)


def test_bad_partition_count_and_mixed_racks() -> None:
    with pytest.raises(InvalidPartitions):
        assign_replicas([0, 1], 0, 1)
    with pytest.raises(InvalidReplicationFactor):
        assign_replicas({0: "a", 1: None}, 1, 1)
