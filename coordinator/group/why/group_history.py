"""Per consumer group, the last few rebalances and what started each one.

``GroupHistories`` (``GroupCoordinator.why``) holds one ``GroupHistory`` per
group id, written only by the coordinator's membership code paths
(``group_facts``), read by DescribeWhy. In memory only: what happened while
this broker coordinated the group.

Events. Each trigger (a member joined, rejoined with new metadata, left, timed
out, was replaced by a static member, the group was deleted, ...) is one event,
*open* until the rebalance it started or took part in completes: then every open
event gets that rebalance's generation (``completed``). A rebalance that never
completes (the group is deleted or unloaded first) leaves its events at
generation -1 (``failed``). An event that starts no rebalance (a static member
replaced in a Stable group) is closed at once with the current generation.

Bounds: the last ``capacity`` events per group (default 32) and at most
``max_groups`` groups (default 10,000; the group least recently written is
forgotten first, so deleted groups do not pile up).

Consumer groups (KIP-848) have no rebalances: each group epoch bump is one
event, closed at once with the new epoch as its generation
(consumer_group_facts.py). ``GroupHistories.epoch_bumps`` counts them for the
metrics (Kafka's consumer-group-rebalance-count / -rate).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, replace

from protocol.why_model import RebalanceEvent

DEFAULT_CAPACITY = 32
DEFAULT_MAX_GROUPS = 10_000
OPEN = -2          # internal: waiting for its rebalance's generation (shown as -1)


@dataclass(frozen=True, slots=True)
class Trigger:
    """Who started (or took part in) a rebalance, and why."""

    kind: str          # "join", "new-group", "leave", "timeout", "static-replace", ...
    member_id: str
    client_id: str
    host: str
    reason: str


class GroupHistory:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"GroupHistory capacity must be >= 1, not {capacity}")
        self._events: deque[RebalanceEvent] = deque(maxlen=capacity)

    def record(self, trigger: Trigger, now_ms: int, *, generation: int | None = None) -> None:
        """An open event (``generation`` None), or a closed one at ``generation``."""
        self._events.append(RebalanceEvent(
            time_ms=now_ms, generation=OPEN if generation is None else generation,
            kind=trigger.kind, member_id=trigger.member_id, client_id=trigger.client_id,
            host=trigger.host, reason=trigger.reason))

    def completed(self, generation: int) -> None:
        """The rebalance completed at ``generation``: close every open event with it."""
        self._close(generation)

    def failed(self) -> None:
        """The rebalance will not complete: its events keep generation -1."""
        self._close(-1)

    def _close(self, generation: int) -> None:
        if any(e.generation == OPEN for e in self._events):
            self._events = deque((replace(e, generation=generation) if e.generation == OPEN
                                  else e for e in self._events), maxlen=self._events.maxlen)

    def events(self) -> list[RebalanceEvent]:
        """Oldest first; open events show generation -1."""
        return [replace(e, generation=-1) if e.generation == OPEN else e for e in self._events]


class BumpMeter:
    """A count and a rate (Kafka's Meter: per second over the last ``window_ms``)."""

    def __init__(self, window_ms: int = 30_000, max_kept: int = 100_000) -> None:
        self.count = 0
        self.window_ms = window_ms
        self._times: deque[int] = deque(maxlen=max_kept)

    def record(self, now_ms: int) -> None:
        self.count += 1
        self._times.append(now_ms)

    def rate(self, now_ms: int) -> float:
        """Events per second over the last window (events older are dropped here)."""
        while self._times and self._times[0] <= now_ms - self.window_ms:
            self._times.popleft()
        return len(self._times) * 1000.0 / self.window_ms


class GroupHistories:
    def __init__(self, capacity: int = DEFAULT_CAPACITY,
                 max_groups: int = DEFAULT_MAX_GROUPS) -> None:
        self.capacity = capacity
        self.max_groups = max_groups
        self._groups: OrderedDict[str, GroupHistory] = OrderedDict()
        self.epoch_bumps = BumpMeter()     # consumer groups' group epoch bumps (metrics)

    def __len__(self) -> int:
        return len(self._groups)

    def of(self, group_id: str) -> GroupHistory:
        """The group's history for writing (created; marked most recently written)."""
        h = self._groups.get(group_id)
        if h is None:
            h = self._groups[group_id] = GroupHistory(self.capacity)
            while len(self._groups) > self.max_groups:
                self._groups.popitem(last=False)
        else:
            self._groups.move_to_end(group_id)
        return h

    def events(self, group_id: str) -> list[RebalanceEvent]:
        h = self._groups.get(group_id)
        return [] if h is None else h.events()
