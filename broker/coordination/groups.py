"""The group coordinator over this broker: ``build`` (the Broker calls it in
``start``) and ``coordinator_of`` (what the group handlers call)."""

from __future__ import annotations

from broker.coordination.group_settings import group_config_from, protocol_enabled
from broker.coordination.host import GroupHost
from broker.coordination.offsets_log import BrokerOffsetsLog
from broker.metadata_cache import partition_count_or
from coordinator.group.classic import OFFSETS_TOPIC, CoordinatorConfig, GroupCoordinator
from coordinator.group.consumer.topic_view import MetadataTopics


def offsets_topic_partitions(broker: GroupHost) -> int:
    """The partition count of __consumer_offsets once it exists, else the config's."""
    return partition_count_or(broker.metadata, OFFSETS_TOPIC,
                              broker.config.offsets_topic_num_partitions)


def build(broker: GroupHost) -> GroupCoordinator:
    """The coordinator over the broker's replica manager, logs and metadata cache;
    KIP-848 consumer groups with the broker's group.consumer.* settings."""
    coordinator = GroupCoordinator(broker.broker_id, CoordinatorConfig.from_broker(broker.config),
                                   BrokerOffsetsLog(broker),
                                   num_partitions=lambda: offsets_topic_partitions(broker))
    coordinator.consumer.configure(group_config_from(broker.config),
                                   MetadataTopics(broker.metadata),
                                   enabled=protocol_enabled(broker.config))
    return coordinator


def coordinator_of(broker: GroupHost) -> GroupCoordinator:
    """The broker's group coordinator (built and started on first use when the
    Broker has not built it yet: handler tests over a bare broker)."""
    coordinator = broker.group_coordinator
    if coordinator is None:
        coordinator = build(broker)
        broker.group_coordinator = coordinator
        coordinator.start()
    return coordinator


__all__ = ["build", "coordinator_of", "offsets_topic_partitions"]
