"""A Metadata response as plain dataclasses, and the Metadata request for a topic list.

``ClusterMetadata`` holds brokers (``BrokerInfo``), topics (``TopicInfo``) and their
partitions (``PartitionInfo``: leader, epoch, replicas, ISR), plus the controller id
and cluster id, and answers ``leader(topic, partition)``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from protocol.api_keys import ApiKey
from protocol.schema import Struct
from protocol.spec import api


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error: int = 0


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    error: int
    is_internal: bool
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)


@dataclass
class ClusterMetadata:
    brokers: dict[int, BrokerInfo]
    topics: dict[str, TopicInfo]
    controller_id: int = -1
    cluster_id: str | None = None

    @classmethod
    def from_response(cls, resp: Struct) -> ClusterMetadata:
        brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack)
                   for b in resp.brokers}
        topics: dict[str, TopicInfo] = {}
        for t in resp.topics:
            parts = {p.partition_index: PartitionInfo(
                p.partition_index, p.leader_id, p.leader_epoch, tuple(p.replica_nodes),
                tuple(p.isr_nodes), tuple(p.offline_replicas), p.error_code)
                for p in t.partitions}
            topics[t.name or ""] = TopicInfo(t.name or "", t.topic_id, t.error_code,
                                             t.is_internal, parts)
        return cls(brokers, topics, resp.controller_id, resp.cluster_id)

    def leader(self, topic: str, partition: int) -> BrokerInfo | None:
        t = self.topics.get(topic)
        p = t.partitions.get(partition) if t else None
        if p is None or p.leader < 0:
            return None
        return self.brokers.get(p.leader)

    def topic_names(self) -> dict[uuid.UUID, str]:
        return {t.topic_id: name for name, t in self.topics.items()}


def metadata_request(version: int, topics: list[str] | None,
                     allow_auto_create: bool = False) -> Struct:
    spec = api(ApiKey.METADATA).request
    if topics is None:
        wanted: list[Struct] | None = None if version >= 1 else []
    else:
        wanted = [spec.structs["MetadataRequestTopic"].new(name=t) for t in topics]
    return spec.new(topics=wanted, allow_auto_topic_creation=allow_auto_create)


