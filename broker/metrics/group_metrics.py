"""The group coordinator's families for both kinds of group: classic groups
(JoinGroup/SyncGroup, coordinator/group/classic/) and KIP-848 consumer groups
(coordinator/group/consumer/), and where each kind's committed offsets are, for the
lag families (kafka_families.group_families) and the remote high watermarks
(remote_offsets.py).

Names. Kafka 4.0's GroupCoordinatorMetrics are Kafka metrics (not Yammer) under
``kafka.server:type=group-coordinator-metrics``; the JMX exporter's default
naming (domain, the ``type`` value, the attribute; other tags become labels;
``-`` becomes ``_``) gives:

    kafka_server_group_coordinator_metrics_group_count{protocol="classic"|"consumer"}
    kafka_server_group_coordinator_metrics_consumer_group_count{state="Empty"|
        "Assigning"|"Reconciling"|"Stable"|"Dead"}      (every state, zeros included)
    kafka_server_group_coordinator_metrics_consumer_group_rebalance_count
        group epoch bumps since the broker started (Kafka records one per bump)
    kafka_server_group_coordinator_metrics_consumer_group_rebalance_rate
        bumps per second over the last 30 s (Kafka's Meter)

and the classic groups' Yammer gauges (``kafka.coordinator.group:type=
GroupMetadataManager,name=NumGroups...``, the JMX exporter's gauge rule):

    kafka_coordinator_group_groupmetadatamanager_numgroups (+ ...numgroupsstable,
        numgroupspreparingrebalance, numgroupscompletingrebalance, numgroupsempty,
        numgroupsdead), ..._numoffsets (committed offsets of both kinds)

Which groups are which: the coordinator's one group map has a view per kind
(``group_coordinator.groups``: classic, ``group_coordinator.consumer.groups``:
consumer; an id is in one of them), and the committed offsets of both kinds are
keyed by group id in ``group_coordinator.committed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from coordinator.group.consumer.group_logic import state_of
from broker.metrics.registry import GAUGE, MetricFamily

if TYPE_CHECKING:
    from broker.metrics.host import MetricsHost
    from coordinator.group.classic import GroupCoordinator, OffsetAndMetadata
    from coordinator.group.classic.group_metadata import GroupMetadata
    from coordinator.group.consumer.model import ConsumerGroup

_GCM = "kafka_server_group_coordinator_metrics_"
_GMM = "kafka_coordinator_group_groupmetadatamanager_"
CONSUMER_STATES = ("Empty", "Assigning", "Reconciling", "Stable", "Dead")
CLASSIC_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")


def consumer_groups_of(gc: GroupCoordinator) -> Mapping[str, ConsumerGroup]:
    """The KIP-848 consumer groups this coordinator holds."""
    return gc.consumer.groups


def classic_groups_of(gc: GroupCoordinator) -> dict[str, GroupMetadata]:
    """The classic groups this coordinator holds (a snapshot)."""
    return dict(gc.groups.items())


def committed_offsets_of(gc: GroupCoordinator
                         ) -> list[tuple[str, Mapping[tuple[str, int], OffsetAndMetadata]]]:
    """[(group id, {(topic, partition): committed offset})] for every group of either
    kind with offsets here, sorted by id."""
    return sorted((gid, state.committed) for gid, state in gc.committed.items()
                  if state.committed)


def member_counts_of(gc: GroupCoordinator) -> list[tuple[str, int]]:
    """[(group id, members)] of both kinds, sorted by id."""
    counts = {gid: len(g.members) for gid, g in classic_groups_of(gc).items()}
    counts.update({gid: len(g.members) for gid, g in list(consumer_groups_of(gc).items())})
    return sorted(counts.items())


def group_coordinator_families(broker: MetricsHost, now_ms: int) -> list[MetricFamily]:
    """GroupCoordinatorMetrics (both protocols) and the classic NumGroups* gauges."""
    count = MetricFamily(_GCM + "group_count", GAUGE,
                         "Groups coordinated here, per rebalance protocol (group-count)")
    by_state = MetricFamily(_GCM + "consumer_group_count", GAUGE,
                            "Consumer groups (KIP-848) coordinated here, per state "
                            "(consumer-group-count)")
    bumps = MetricFamily(_GCM + "consumer_group_rebalance_count", GAUGE,
                         "Consumer group epoch bumps since start "
                         "(consumer-group-rebalance-count)")
    rate = MetricFamily(_GCM + "consumer_group_rebalance_rate", GAUGE,
                        "Consumer group epoch bumps per second over the last 30 s "
                        "(consumer-group-rebalance-rate)")
    classic_fams = {s: MetricFamily(_GMM + "numgroups" + s.lower(), GAUGE,
                                    f"Classic groups in state {s} (NumGroups{s})")
                    for s in CLASSIC_STATES}
    total = MetricFamily(_GMM + "numgroups", GAUGE, "Classic groups (NumGroups)")
    num_offsets = MetricFamily(_GMM + "numoffsets", GAUGE,
                               "Committed offsets held here, both kinds of group (NumOffsets)")
    families = [count, by_state, bumps, rate, total, *classic_fams.values(), num_offsets]
    gc = broker.group_coordinator
    if gc is None:
        return families
    classic = classic_groups_of(gc)
    consumer = consumer_groups_of(gc)
    count.add(len(classic), (("protocol", "classic"),))
    count.add(len(consumer), (("protocol", "consumer"),))
    states = dict.fromkeys(CONSUMER_STATES, 0)
    for cg in list(consumer.values()):
        s = state_of(cg).value
        states[s] = states.get(s, 0) + 1
    for s, n in states.items():
        by_state.add(n, (("state", s),))
    meter = gc.why.epoch_bumps
    bumps.add(meter.count)
    rate.add(round(meter.rate(now_ms), 6))
    total.add(len(classic))
    classic_states = dict.fromkeys(CLASSIC_STATES, 0)
    for g in classic.values():
        state = g.state.value
        classic_states[state] = classic_states.get(state, 0) + 1
    for s, fam in classic_fams.items():
        fam.add(classic_states.get(s, 0))
    num_offsets.add(sum(len(o) for _, o in committed_offsets_of(gc)))
    return families


__all__ = ["CLASSIC_STATES", "CONSUMER_STATES", "classic_groups_of", "committed_offsets_of",
           "consumer_groups_of", "group_coordinator_families", "member_counts_of"]
