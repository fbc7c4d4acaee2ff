"""coordinator.group.consumer.topic_view.MetadataTopics over a fake metadata cache: the
snapshot is re-read only when stale and read, and its version follows changes."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from coordinator.group.consumer.topic_view import MetadataTopics


@dataclass
class Part:
    partition: int
    replicas: list[int]


@dataclass
class Broker:
    id: int
    rack: str | None


@dataclass
class FakeCache:
    parts: dict[str, list[Part]] = field(default_factory=dict)
    ids: dict[str, uuid.UUID] = field(default_factory=dict)
    racks: dict[int, str] = field(default_factory=dict)
    walks: int = 0

    def brokers(self) -> list[Broker]:
        return [Broker(b, r) for b, r in self.racks.items()]

    def topics(self) -> list[str]:
        self.walks += 1
        return list(self.parts)

    def topic_id(self, name: str) -> uuid.UUID | None:
        return self.ids.get(name)

    def partitions(self, name: str) -> list[Part]:
        return self.parts[name]


def test_stale_view_is_read_once_on_use_and_versions_follow_changes() -> None:
    cache = FakeCache({"t": [Part(0, [1, 2]), Part(1, [2])]}, {"t": uuid.UUID(int=7)},
                      {1: "a", 2: "b"})
    view = MetadataTopics(cache)
    assert cache.walks == 0                          # nothing read before it is used
    meta = view.by_name("t")
    assert meta is not None and meta.partitions == 2
    assert meta.racks == {0: frozenset({"a", "b"}), 1: frozenset({"b"})}
    v = view.version
    view.mark_stale()
    view.mark_stale()
    assert cache.walks == 1                          # marking is free
    assert view.version == v and cache.walks == 2    # unchanged cache: same version
    cache.parts["t"].append(Part(2, [1]))
    cache.racks.pop(1)                               # broker 1 down: its rack is kept
    view.mark_stale()
    assert view.by_name("t").partitions == 3 and view.version == v + 1
    assert view.by_name("t").racks[2] == frozenset({"a"})
    cache.ids["u"] = uuid.UUID(int=0)                # no topic id: invisible
    cache.parts["u"] = [Part(0, [2])]
    assert view.refresh() is False and list(view.names()) == ["t"]
