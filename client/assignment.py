"""Replica assignment, as Kafka's AdminUtils.assignReplicasToBrokers.

Shared by the controller (CreateTopics / CreatePartitions placed by the broker) and
`pybroker reassign-partitions --generate` (placed by the tool, as Kafka's tool does).

Rack-unaware, brokers sorted by id, n of them: partition i's first replica (the
preferred leader) is broker[(start + i) mod n]; replica j+1 sits at

    (first + 1 + (shift + j) mod (n - 1)) mod n

where ``shift`` starts at a random value (or the fixed start index) and grows by
one every time the partition id wraps around n, so successive rounds spread the
followers differently. Rack-aware, the brokers are first interleaved rack by
rack (racks sorted, brokers sorted within a rack) and a follower is skipped if
its rack (or broker) already holds a replica while another rack (broker) does
not; the shift is multiplied by the number of racks.
"""

from __future__ import annotations

import random
from typing import Mapping



class InvalidReplicationFactor(ValueError):
    """The replication factor is not within 1..number of brokers."""


class InvalidPartitions(ValueError):
    """The partition count is not positive (or does not grow)."""


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def assign_replicas(brokers: Mapping[int, str | None] | list[int], partitions: int,
                    replication_factor: int, *, start_index: int = -1,
                    start_partition: int = -1,
                    rng: random.Random | None = None) -> dict[int, list[int]]:
    """-> {partition id: [broker ids]}. ``brokers``: ids, or id -> rack (None = no rack).

    Rack-aware when every broker has a rack; mixing racked and unracked brokers
    is an error, as in Kafka."""
    racks: dict[int, str | None] = (dict(brokers) if isinstance(brokers, Mapping)
                                    else {b: None for b in brokers})
    if partitions <= 0:
        raise InvalidPartitions("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactor("Replication factor must be larger than 0.")
    if replication_factor > len(racks):
        raise InvalidReplicationFactor(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(racks)}.")
    rng = rng or random.Random()
    n = len(racks)
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    first_id = max(0, start_partition)
    if all(r is None for r in racks.values()):
        return _rack_unaware(sorted(racks), partitions, replication_factor, start, shift, first_id)
    if any(r is None for r in racks.values()):
        raise InvalidReplicationFactor(
            "Not all brokers have rack information for replica rack aware assignment.")
    return _rack_aware({b: str(r) for b, r in racks.items()}, partitions, replication_factor,
                       start, shift, first_id)


def _rack_unaware(brokers: list[int], partitions: int, rf: int, start: int, shift: int,
                  first_id: int) -> dict[int, list[int]]:
    n = len(brokers)
    out: dict[int, list[int]] = {}
    for pid in range(first_id, first_id + partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        out[pid] = [brokers[first]] + [brokers[_replica_index(first, shift, j, n)]
                                       for j in range(rf - 1)]
    return out


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Brokers interleaved by rack: racks sorted, one broker (lowest id first) per
    rack in turn, e.g. {0:a,1:a,2:b,3:c} -> [0, 2, 3, 1]."""
    by_rack: dict[str, list[int]] = {}
    for b, r in sorted(racks.items()):
        by_rack.setdefault(r, []).append(b)
    queues = [by_rack[r] for r in sorted(by_rack)]
    out: list[int] = []
    i = 0
    while len(out) < len(racks):
        q = queues[i % len(queues)]
        if q:
            out.append(q.pop(0))
        i += 1
    return out


def _rack_aware(racks: dict[int, str], partitions: int, rf: int, start: int, shift: int,
                first_id: int) -> dict[int, list[int]]:
    arranged = rack_alternated(racks)
    n, n_racks = len(arranged), len(set(racks.values()))
    out: dict[int, list[int]] = {}
    for pid in range(first_id, first_id + partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        leader = arranged[first]
        replicas, used_racks, used = [leader], {racks[leader]}, {leader}
        k = 0
        for _ in range(rf - 1):
            while True:
                b = arranged[_replica_index(first, shift * n_racks, k, n)]
                k += 1
                if ((racks[b] not in used_racks or len(used_racks) == n_racks)
                        and (b not in used or len(used) == n)):
                    replicas.append(b)
                    used_racks.add(racks[b])
                    used.add(b)
                    break
        out[pid] = replicas
    return out
