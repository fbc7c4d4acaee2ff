"""Fakes for the pure consumer group core: a TopicView and a simulated member."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from coordinator.group.consumer.model import TopicMeta


class FakeTopics:
    """An in-memory TopicView; every change bumps ``version``."""

    def __init__(self) -> None:
        self.version = 0
        self._by_name: dict[str, TopicMeta] = {}

    def create(self, name: str, partitions: int,
               racks: dict[int, frozenset[str]] | None = None) -> TopicMeta:
        meta = TopicMeta(uuid.uuid5(uuid.NAMESPACE_DNS, name), name, partitions, racks or {})
        self._by_name[name] = meta
        self.version += 1
        return meta

    def grow(self, name: str, partitions: int) -> TopicMeta:
        old = self._by_name[name]
        meta = TopicMeta(old.topic_id, name, partitions, old.racks)
        self._by_name[name] = meta
        self.version += 1
        return meta

    def delete(self, name: str) -> None:
        del self._by_name[name]
        self.version += 1

    def by_name(self, name: str) -> TopicMeta | None:
        return self._by_name.get(name)

    def names(self) -> Iterable[str]:
        return list(self._by_name)

    def id_of(self, name: str) -> uuid.UUID:
        return self._by_name[name].topic_id
