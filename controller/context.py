"""ControllerContext: the active controller's picture of the cluster.

Only Controller.process (one event at a time) mutates it. Invariants:
  * ``assignments[t][p]`` is the replica list of /brokers/topics/<t>; the first
    replica is the preferred leader.
  * ``states[(t, p)]`` mirrors /brokers/topics/<t>/partitions/<p>/state,
    including its znode version (the next conditional write must match it).
  * ``live`` holds the brokers registered under /brokers/ids, with their
    epochs (czxid of the registration).
  * ``replicas_on_offline_dirs[b]``: the partitions whose replica on live broker
    b is in a failed log dir (b answered LeaderAndIsr with KAFKA_STORAGE_ERROR);
    such a replica is not online: never elected, listed in offline_replicas.
    Dropped when b restarts (controller/log_dir_events.py).
  * ``reassigning[tp]`` = (adding, removing) while a reassignment runs; then
    ``assignments`` holds the full set RS = target + (origin - target), and
    adding = target - origin, removing = origin - target (KIP-455), exactly
    as the topic znode's adding_replicas / removing_replicas say.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from controller.zkdata import BrokerInfo, LeaderIsr

TopicPartition = tuple[str, int]


@dataclass
class ControllerContext:
    epoch: int = 0
    epoch_zk_version: int = -1
    live: dict[int, BrokerInfo] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    states: dict[TopicPartition, LeaderIsr] = field(default_factory=dict)
    topics_to_delete: set[str] = field(default_factory=set)
    # (topic, partition, broker) StopReplica(delete) still unanswered, per topic
    deletion_pending: dict[str, set[tuple[int, int]]] = field(default_factory=dict)
    reassigning: dict[TopicPartition, tuple[list[int], list[int]]] = field(default_factory=dict)
    zk_reassigning: set[TopicPartition] = field(default_factory=set)  # from the znode API
    replicas_on_offline_dirs: dict[int, set[TopicPartition]] = field(default_factory=dict)

    def is_live(self, broker_id: int) -> bool:
        return broker_id in self.live

    def replicas(self, tp: TopicPartition) -> list[int]:
        return self.assignments.get(tp[0], {}).get(tp[1], [])

    def all_partitions(self) -> list[TopicPartition]:
        return [(t, p) for t, parts in sorted(self.assignments.items()) for p in sorted(parts)]

    def partitions_of(self, topics: set[str] | list[str]) -> list[TopicPartition]:
        return [(t, p) for t in sorted(topics) for p in sorted(self.assignments.get(t, {}))]

    def partitions_on(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp in self.all_partitions() if broker_id in self.replicas(tp)]

    def is_replica_online(self, broker_id: int, tp: TopicPartition) -> bool:
        """Kafka's isReplicaOnline: the broker is live and the replica's dir is not offline."""
        return broker_id in self.live and tp not in self.replicas_on_offline_dirs.get(broker_id, ())

    def online_brokers(self, tp: TopicPartition) -> set[int]:
        """Live brokers, less those whose replica of ``tp`` is in an offline log dir."""
        return {b for b in self.live if tp not in self.replicas_on_offline_dirs.get(b, ())}

    def offline_replicas(self, tp: TopicPartition) -> list[int]:
        return [b for b in self.replicas(tp) if not self.is_replica_online(b, tp)]

    def target_replicas(self, tp: TopicPartition) -> list[int]:
        """The replicas a partition will have once its reassignment (if any) is done."""
        removing = self.reassigning.get(tp, ([], []))[1]
        return [r for r in self.replicas(tp) if r not in removing]

    def remove_topic(self, topic: str) -> None:
        for p in self.assignments.pop(topic, {}):
            self.states.pop((topic, p), None)
            self.reassigning.pop((topic, p), None)
            self.zk_reassigning.discard((topic, p))
        self.topic_ids.pop(topic, None)
        self.topics_to_delete.discard(topic)
        self.deletion_pending.pop(topic, None)
