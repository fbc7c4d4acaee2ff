"""The topics as consumer groups see them (group_logic.TopicView), over the broker's
MetadataCache.

``by_name(name)`` is a model.TopicMeta: topic id, partition count and, per
partition, the racks of its replicas (the live brokers' ``broker.rack``; rack-aware
assignors use them). Topics without a topic id (a controller that sends
UpdateMetadata older than v7) are invisible: the consumer protocol speaks topic ids.

``version`` is bumped whenever what the assignors see changes: a topic created or
deleted, partitions added, a topic id changed, a replica's rack changed (the
rack of a broker once seen is kept while it is down: a crash moves no partition).
``refresh()`` recomputes the snapshot from the cache and says whether it changed.
After every UpdateMetadata the coordinator marks the view stale (``mark_stale``)
and, when it serves consumer groups, refreshes it at once and re-evaluates every
group (group_logic.refresh_metadata); a broker without consumer groups does not
walk its cache per UpdateMetadata: the next read (a first heartbeat) refreshes.
Reads between refreshes are served from the snapshot, so a heartbeat never pays
for walking the whole cache.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from coordinator.group.consumer.model import TopicMeta


class LiveTopicView(Protocol):
    """A TopicView (target_assignment.TopicView) that follows the broker's metadata:
    what the consumer-group coordinator holds (``StaticTopics`` or ``MetadataTopics``)."""

    @property
    def version(self) -> int: ...

    def by_name(self, name: str) -> TopicMeta | None: ...

    def names(self) -> Iterable[str]: ...

    def mark_stale(self) -> None: ...

    def refresh(self) -> bool: ...


class StaticTopics:
    """A fixed TopicView (unit tests, and the coordinator before the broker wires it)."""

    def __init__(self, topics: Iterable[TopicMeta] = ()) -> None:
        self._topics = {t.name: t for t in topics}
        self.version = 0

    def by_name(self, name: str) -> TopicMeta | None:
        return self._topics.get(name)

    def names(self) -> Iterable[str]:
        return list(self._topics)

    def set(self, topics: Iterable[TopicMeta]) -> None:
        new = {t.name: t for t in topics}
        if new != self._topics:
            self._topics = new
            self.version += 1

    def mark_stale(self) -> None:
        """Nothing to re-read: ``set`` changes it."""

    def refresh(self) -> bool:
        return False


class MetadataTopics:
    """A TopicView over a broker's MetadataCache (``broker.metadata``)."""

    def __init__(self, metadata: Any) -> None:
        self.metadata = metadata
        self._version = 0
        self._topics: dict[str, TopicMeta] = {}
        # broker id -> rack of every broker seen: a dead broker's replicas keep their
        # rack (Kafka's image keeps fenced brokers), so a crash is no rebalance
        self._racks: dict[int, str] = {}
        self._stale = True

    @property
    def version(self) -> int:
        self._fresh()
        return self._version

    def by_name(self, name: str) -> TopicMeta | None:
        self._fresh()
        return self._topics.get(name)

    def names(self) -> Iterable[str]:
        self._fresh()
        return list(self._topics)

    def mark_stale(self) -> None:
        """The cache changed: the next read (or ``refresh``) re-reads it."""
        self._stale = True

    def _fresh(self) -> None:
        if self._stale:
            self.refresh()

    def refresh(self) -> bool:
        """Re-read the cache; True (and ``version`` + 1) when anything changed."""
        self._stale = False
        snapshot = self._snapshot()
        if snapshot == self._topics:
            return False
        self._topics = snapshot
        self._version += 1
        return True

    def _snapshot(self) -> dict[str, TopicMeta]:
        cache = self.metadata
        self._racks.update({b.id: b.rack for b in cache.brokers() if b.rack})
        racks_of = self._racks
        out: dict[str, TopicMeta] = {}
        for name in cache.topics():
            topic_id = cache.topic_id(name)
            if topic_id is None or topic_id.int == 0:
                continue
            parts = cache.partitions(name)
            if not parts:
                continue
            racks: dict[int, frozenset[str]] = {}
            for p in parts:
                replica_racks = frozenset(racks_of[r] for r in p.replicas if r in racks_of)
                if replica_racks:
                    racks[p.partition] = replica_racks
            # a partition count, as Kafka's TopicMetadata: partitions 0..n-1
            out[name] = TopicMeta(topic_id, name, max(p.partition for p in parts) + 1, racks)
        return out
