"""The ``uniform`` server-side assignor: balanced and sticky (Kafka's
UniformAssignor, our own algorithm).

Balance: every member gets as many partitions as any other member that could
take them, give or take one. Stickiness: a member keeps the partitions its
current target gives it as long as that fits the balance, so a rebalance
moves as few partitions as it can (each move costs a revoke and a hand-over).

Homogeneous groups (all members subscribe to the same topics), with P
partitions and N members:

1. quotas: every member gets P // N; the P % N extra partitions go to the
   members that already hold more than that (most first, then by member id),
   then to the rest in member id order;
2. retain: each member keeps its current partitions up to its quota (those
   in its own rack first when it must drop some);
3. fill: the partitions nobody kept go, in topic-name/partition order, to
   members below quota: first to a member in a rack holding a replica of the
   partition, else round-robin to any member below quota.

Heterogeneous groups (members subscribe to different topics):

1. retain: each member keeps its current partitions of topics it still
   subscribes to;
2. fill: free partitions, topics with fewest subscribers first, go to the
   least-loaded subscriber (rack match breaks ties);
3. balance: while some subscriber of a topic holds at least two partitions
   more than another subscriber of that topic, one partition of that topic
   moves from the former to the latter.

Every step walks members and partitions in sorted order: deterministic.
"""

from __future__ import annotations

import heapq
import uuid
from collections import deque
from collections.abc import Iterable

from coordinator.group.consumer.assignors.spec import GroupSpec, partition_racks, uses_racks
from coordinator.group.consumer.model import Assignment, TopicMeta


class UniformAssignor:
    name = "uniform"

    def assign(self, spec: GroupSpec) -> dict[str, Assignment]:
        if not spec.members:
            return {}
        if spec.homogeneous:
            return _assign_homogeneous(spec)
        return _assign_heterogeneous(spec)


class _Layout:
    """The subscribed partitions numbered 0..total-1 in topic-name order (ints
    are much cheaper to hash than (UUID, int) pairs)."""

    def __init__(self, spec: GroupSpec) -> None:
        self.topics: list[TopicMeta] = sorted(spec.topics.values(),
                                              key=lambda t: (t.name, str(t.topic_id)))
        self.index = {t.topic_id: i for i, t in enumerate(self.topics)}
        self.base: list[int] = []
        self.topic_of: list[int] = []
        total = 0
        for i, t in enumerate(self.topics):
            self.base.append(total)
            self.topic_of.extend([i] * t.partitions)
            total += t.partitions
        self.total = total
        self.use_racks = uses_racks(spec)
        self._racks: dict[int, frozenset[str]] = {}

    def keys_of(self, topic_ids: Iterable[uuid.UUID]) -> list[int]:
        out: list[int] = []
        for tid in topic_ids:
            i = self.index.get(tid)
            if i is not None:
                out.extend(range(self.base[i], self.base[i] + self.topics[i].partitions))
        out.sort()
        return out

    def racks(self, key: int) -> frozenset[str]:
        hit = self._racks.get(key)
        if hit is None:
            i = self.topic_of[key]
            hit = self._racks[key] = partition_racks(self.topics[i], key - self.base[i])
        return hit

    def rack_match(self, rack: str | None, key: int) -> bool:
        return rack is not None and rack in self.racks(key)

    def to_assignment(self, keys: Iterable[int]) -> Assignment:
        by_topic: dict[int, list[int]] = {}
        for k in keys:
            i = self.topic_of[k]
            by_topic.setdefault(i, []).append(k - self.base[i])
        return {self.topics[i].topic_id: frozenset(ps) for i, ps in by_topic.items()}


def _current_keys(spec: GroupSpec, layout: _Layout, member_ids: list[str]) -> dict[str, list[int]]:
    """Each member's current partitions still valid for it (topic exists, is
    subscribed, partition in range), each partition given to one member only
    (the first in member order) should inputs ever overlap."""
    taken: set[int] = set()
    out: dict[str, list[int]] = {}
    for mid in member_ids:
        m = spec.members[mid]
        kept: list[int] = []
        for topic_id, ps in m.current.items():
            i = layout.index.get(topic_id)
            if i is None or topic_id not in m.topics:
                continue
            n = layout.topics[i].partitions
            base = layout.base[i]
            for p in ps:
                if p < n and base + p not in taken:
                    taken.add(base + p)
                    kept.append(base + p)
        kept.sort()
        out[mid] = kept
    return out


def _assign_homogeneous(spec: GroupSpec) -> dict[str, Assignment]:
    member_ids = sorted(spec.members)
    layout = _Layout(spec)
    all_keys = layout.keys_of(spec.members[member_ids[0]].topics)
    base, extra = divmod(len(all_keys), len(member_ids))
    current = _current_keys(spec, layout, member_ids)

    # 1. quotas
    quota = {mid: base for mid in member_ids}
    for mid in sorted(member_ids, key=lambda m: (-len(current[m]), m))[:extra]:
        quota[mid] += 1

    # 2. retain
    result: dict[str, list[int]] = {}
    assigned: set[int] = set()
    deficit: dict[str, int] = {}
    for mid in member_ids:
        cur = current[mid]
        if len(cur) > quota[mid] and layout.use_racks:
            rack = spec.members[mid].rack
            cur = sorted(cur, key=lambda k: not layout.rack_match(rack, k))  # stable
        kept = cur[:quota[mid]]
        result[mid] = list(kept)
        assigned.update(kept)
        deficit[mid] = quota[mid] - len(kept)

    free = [k for k in all_keys if k not in assigned]
    # 3a. rack pass
    if layout.use_racks and free:
        by_rack: dict[str, deque[str]] = {}
        for mid in member_ids:
            rack = spec.members[mid].rack
            if rack is not None and deficit[mid] > 0:
                by_rack.setdefault(rack, deque()).append(mid)
        rest: list[int] = []
        for k in free:
            placed = False
            for rack in sorted(layout.racks(k)):
                q = by_rack.get(rack)
                while q and deficit[q[0]] == 0:
                    q.popleft()
                if q:
                    mid = q.popleft()
                    result[mid].append(k)
                    deficit[mid] -= 1
                    if deficit[mid] > 0:
                        q.append(mid)
                    placed = True
                    break
            if not placed:
                rest.append(k)
        free = rest
    # 3b. round-robin over members below quota
    ring = deque(mid for mid in member_ids if deficit[mid] > 0)
    for k in free:
        while deficit[ring[0]] == 0:
            ring.popleft()
        mid = ring.popleft()
        result[mid].append(k)
        deficit[mid] -= 1
        if deficit[mid] > 0:
            ring.append(mid)
    return {mid: layout.to_assignment(keys) for mid, keys in result.items()}


def _assign_heterogeneous(spec: GroupSpec) -> dict[str, Assignment]:
    member_ids = sorted(spec.members)
    layout = _Layout(spec)
    subscribers: dict[int, list[str]] = {}
    for mid in member_ids:
        for tid in spec.members[mid].topics:
            i = layout.index.get(tid)
            if i is not None:
                subscribers.setdefault(i, []).append(mid)
    current = _current_keys(spec, layout, member_ids)
    racks = layout.use_racks

    # 1. retain
    result: dict[str, set[int]] = {mid: set(current[mid]) for mid in member_ids}
    load = {mid: len(current[mid]) for mid in member_ids}
    assigned: set[int] = set()
    for mid in member_ids:
        assigned.update(current[mid])

    # 2. fill, most constrained topics first
    order = sorted(subscribers, key=lambda i: (len(subscribers[i]), i))
    for i in order:
        subs = subscribers[i]
        heap = [(load[m], m) for m in subs]
        heapq.heapify(heap)
        first = layout.base[i]
        for k in range(first, first + layout.topics[i].partitions):
            if k in assigned:
                continue
            if racks:
                low = min(load[m] for m in subs)
                ties = [m for m in subs if load[m] == low]
                matched = [m for m in ties if layout.rack_match(spec.members[m].rack, k)]
                mid = (matched or ties)[0]
            else:
                while True:
                    count, mid = heapq.heappop(heap)
                    if count == load[mid]:
                        break
                    heapq.heappush(heap, (load[mid], mid))
            result[mid].add(k)
            assigned.add(k)
            load[mid] += 1
            if not racks:
                heapq.heappush(heap, (load[mid], mid))

    # 3. balance
    _balance(spec, layout, order, subscribers, result, load)
    return {mid: layout.to_assignment(keys) for mid, keys in result.items()}


def _balance(spec: GroupSpec, layout: _Layout, order: list[int],
             subscribers: dict[int, list[str]], result: dict[str, set[int]],
             load: dict[str, int]) -> None:
    """Move partitions from the most to the least loaded subscriber of a topic
    while they differ by two or more. Each move lowers the sum of squared
    loads, so this ends."""
    held: dict[int, dict[str, set[int]]] = {i: {m: set() for m in subscribers[i]}
                                            for i in order}
    for mid, keys in result.items():
        for k in keys:
            i = layout.topic_of[k]
            if mid in held[i]:
                held[i][mid].add(k)
    moved = True
    while moved:
        moved = False
        for i in order:
            subs = subscribers[i]
            if len(subs) < 2:
                continue
            while True:
                holders = [m for m in subs if held[i][m]]
                if not holders:
                    break
                giver = max(holders, key=lambda m: (load[m], m))
                taker = min(subs, key=lambda m: (load[m], m))
                if load[giver] - load[taker] < 2:
                    break
                k = max(held[i][giver])
                if layout.use_racks:
                    taker_rack = spec.members[taker].rack
                    giver_rack = spec.members[giver].rack
                    for c in sorted(held[i][giver], reverse=True):
                        if layout.rack_match(taker_rack, c) and \
                                not layout.rack_match(giver_rack, c):
                            k = c
                            break
                held[i][giver].discard(k)
                held[i][taker].add(k)
                result[giver].discard(k)
                result[taker].add(k)
                load[giver] -= 1
                load[taker] += 1
                moved = True
