"""The ``range`` server-side assignor (Kafka's server-side RangeAssignor, our
own code).

Per topic, the subscribers are put in a fixed order — static members first,
by instance id, then dynamic members by member id (a restarted static member
gets its ranges back: that is the assignor's stickiness, as in Kafka) — and
the topic's partitions are cut into contiguous ranges: each subscriber gets
``partitions // subscribers``, the first ``partitions % subscribers`` one
more. Since the order is the same for every topic, topics with the same
partition count and subscribers are co-partitioned: a member gets the same
partition numbers of each (what joins across topics need).

Rack-awareness (as KIP-881's client-side range): when members and partitions
carry racks, each member first takes, in partition order and up to its
quota, the partitions with a replica in its rack; the quotas left are then
filled with the remaining partitions in order. When every partition has a
replica in every member's rack this gives exactly the plain ranges, so
co-partitioning holds wherever racks allow it.
"""

from __future__ import annotations

import uuid

from coordinator.group.consumer.assignors.spec import GroupSpec, partition_racks, to_assignment, \
    uses_racks
from coordinator.group.consumer.model import Assignment


class RangeAssignor:
    name = "range"

    def assign(self, spec: GroupSpec) -> dict[str, Assignment]:
        if not spec.members:
            return {}
        order = sorted(spec.members, key=lambda m: _order_key(spec, m))
        racks = uses_racks(spec)
        result: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in order}
        for topic_id in sorted(spec.topics, key=lambda t: (spec.topics[t].name, str(t))):
            subs = [m for m in order if topic_id in spec.members[m].topics]
            if not subs:
                continue
            n = spec.topics[topic_id].partitions
            base, extra = divmod(n, len(subs))
            quotas = [base + (1 if i < extra else 0) for i in range(len(subs))]
            if racks:
                parts = _rack_aware_ranges(spec, topic_id, n, subs, quotas)
            else:
                parts = []
                start = 0
                for q in quotas:
                    parts.append(set(range(start, start + q)))
                    start += q
            for mid, ps in zip(subs, parts):
                if ps:
                    result[mid][topic_id] = ps
        return {mid: to_assignment(p) for mid, p in result.items()}


def _order_key(spec: GroupSpec, member_id: str) -> tuple[int, str]:
    instance = spec.members[member_id].instance_id
    return (0, instance) if instance is not None else (1, member_id)


def _rack_aware_ranges(spec: GroupSpec, topic_id: uuid.UUID, n: int, subs: list[str],
                       quotas: list[int]) -> list[set[int]]:
    topic = spec.topics[topic_id]
    taken = [False] * n
    parts: list[set[int]] = [set() for _ in subs]
    for i, mid in enumerate(subs):
        rack = spec.members[mid].rack
        if rack is None:
            continue
        for p in range(n):
            if len(parts[i]) >= quotas[i]:
                break
            if not taken[p] and rack in partition_racks(topic, p):
                taken[p] = True
                parts[i].add(p)
    p = 0
    for i in range(len(subs)):
        while len(parts[i]) < quotas[i]:
            while taken[p]:
                p += 1
            taken[p] = True
            parts[i].add(p)
    return parts
