"""The group coordinator's families for both kinds of group (classic and KIP-848
consumer groups): group-count by protocol, consumer-group-count by state (the
states group_logic computes), the epoch-bump count and rate, the classic
NumGroups* gauges, and lag / members for a consumer group's committed offsets,
over a real ReplicaManager (tests' FakeBroker) with the coordinators' state
made by hand."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from coordinator.group.consumer.model import ConsumerGroup, Member, MemberState
from coordinator.group.consumer.records import GroupEpoch, MemberSubscription
from coordinator.group.classic.group_metadata import GroupMetadata, MemberMetadata
from coordinator.group.classic.group_state import GroupState as ClassicState
from coordinator.group.classic.offsets_topic import OffsetAndMetadata
from coordinator.group.committed_offsets import CommittedOffsets
from coordinator.group.group_map import GroupMap
from broker.metrics import group_metrics as gm
from broker.metrics import kafka_families as kf
from broker.metrics.exposition import render
from broker.metrics.registry import MetricFamily
from coordinator.group.why.consumer_group_facts import epoch_bumped
from coordinator.group.why.group_history import GroupHistories
from protocol.records import build_batch
from tests.unit.broker.replication.fakes import FakeBroker
from tests.unit.broker.test_data_handlers import produce

GCM = "kafka_server_group_coordinator_metrics_"
GMM = "kafka_coordinator_group_groupmetadatamanager_"


def samples(fams: list[MetricFamily]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(f.name + s.suffix, s.labels): s.value for f in fams for s in f.samples}


def consumer_group(gid: str, members: int, *, epoch: int = 2, assignment_epoch: int = 2,
                   reconciling: bool = False) -> ConsumerGroup:
    g = ConsumerGroup(gid, group_epoch=epoch, assignment_epoch=assignment_epoch)
    for i in range(members):
        g.members[f"m{i}"] = Member(f"m{i}", member_epoch=assignment_epoch,
                                    state=MemberState.UNREVOKED_PARTITIONS if reconciling
                                    else MemberState.STABLE)
    return g


def classic_group(gid: str, state: ClassicState, members: int) -> GroupMetadata:
    g = GroupMetadata(gid, state, 0)
    for i in range(members):
        g.add(MemberMetadata(f"c{i}", None, "client", "/127.0.0.1", 1000, 1000, "consumer",
                             [("range", b"")]))
    return g


def commit(committed: CommittedOffsets, gid: str, offsets: dict[tuple[str, int], int]) -> None:
    committed.of(gid).committed.update(
        {tp: OffsetAndMetadata(o) for tp, o in offsets.items()})


def coordinator(consumer_offsets: dict[str, dict[tuple[str, int], int]]) -> SimpleNamespace:
    consumer = {"cg-stable": consumer_group("cg-stable", 2),
                "cg-assigning": consumer_group("cg-assigning", 1, epoch=3),
                "cg-reconciling": consumer_group("cg-reconciling", 3, reconciling=True),
                "cg-empty": consumer_group("cg-empty", 0)}
    groups = GroupMap()
    for gid, group in consumer.items():
        groups.consumer[gid] = group
    groups.classic["old"] = classic_group("old", ClassicState.STABLE, 2)
    groups.classic["old-empty"] = classic_group("old-empty", ClassicState.EMPTY, 0)
    # committed offsets are keyed by group id, whatever the group's kind
    committed = CommittedOffsets()
    commit(committed, "old", {("t", 0): 1})
    commit(committed, "cg-stable", {("t", 1): 4})
    for gid, offsets in consumer_offsets.items():
        commit(committed, gid, offsets)
    return SimpleNamespace(groups=groups.classic, why=GroupHistories(), committed=committed,
                           consumer=SimpleNamespace(groups=groups.consumer))


def test_counts_by_protocol_and_state_and_bumps() -> None:
    gc = coordinator({})
    for i, member in enumerate(("a", "b", "c")):
        before = consumer_group("cg-stable", 0, epoch=i)
        epoch_bumped(gc.why, before, [MemberSubscription("cg-stable", member),
                                      GroupEpoch("cg-stable", i + 1)], 1000 * i)
    s = samples(gm.group_coordinator_families(SimpleNamespace(group_coordinator=gc), 2500))
    assert s[(GCM + "group_count", (("protocol", "classic"),))] == 2
    assert s[(GCM + "group_count", (("protocol", "consumer"),))] == 4
    states = {dict(labels)["state"]: v for (name, labels), v in s.items()
              if name == GCM + "consumer_group_count"}
    assert states == {"Empty": 1, "Assigning": 1, "Reconciling": 1, "Stable": 1, "Dead": 0}
    assert s[(GCM + "consumer_group_rebalance_count", ())] == 3
    assert s[(GCM + "consumer_group_rebalance_rate", ())] == 0.1        # 3 in 30 s
    assert s[(GMM + "numgroups", ())] == 2
    assert s[(GMM + "numgroupsstable", ())] == 1 and s[(GMM + "numgroupsempty", ())] == 1
    assert s[(GMM + "numgroupspreparingrebalance", ())] == 0
    assert s[(GMM + "numoffsets", ())] == 2
    text = render(gm.group_coordinator_families(SimpleNamespace(group_coordinator=gc), 2500))
    assert f'{GCM}group_count{{protocol="consumer"}} 4\n' in text


def test_no_consumer_group_and_no_coordinator() -> None:
    gc = SimpleNamespace(groups={"old": classic_group("old", ClassicState.STABLE, 1)},
                         why=GroupHistories(), consumer=SimpleNamespace(groups={}),
                         committed=CommittedOffsets())
    s = samples(gm.group_coordinator_families(SimpleNamespace(group_coordinator=gc), 0))
    assert s[(GCM + "group_count", (("protocol", "consumer"),))] == 0
    assert s[(GCM + "group_count", (("protocol", "classic"),))] == 1
    none = samples(gm.group_coordinator_families(SimpleNamespace(group_coordinator=None), 0))
    assert (GCM + "group_count", (("protocol", "classic"),)) not in none


def test_lag_and_members_cover_consumer_groups(tmp_path: Any) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t", 2)
    for p in (0, 1):
        produce(b, 9, build_batch([(None, b"x", 1)] * 10), acks=1, partition=p)
    b.group_coordinator = coordinator(                     # type: ignore[attr-defined]
        {"cg-reconciling": {("t", 0): 7, ("elsewhere", 0): 5}})
    s = samples(kf.group_families(b, lambda tp: 50 if tp == ("elsewhere", 0) else None))
    lag = "kafka_consumergroup_lag"
    assert s[(lag, (("consumergroup", "cg-reconciling"), ("topic", "t"), ("partition", "0")))] \
        == 3
    assert s[(lag, (("consumergroup", "cg-reconciling"), ("topic", "elsewhere"),
                    ("partition", "0")))] == 45
    assert s[(lag, (("consumergroup", "cg-stable"), ("topic", "t"), ("partition", "1")))] == 6
    assert s[(lag, (("consumergroup", "old"), ("topic", "t"), ("partition", "0")))] == 9
    members = {dict(labels)["consumergroup"]: v for (name, labels), v in s.items()
               if name == "kafka_consumergroup_members"}
    assert members == {"cg-stable": 2, "cg-assigning": 1, "cg-reconciling": 3, "cg-empty": 0,
                       "old": 2, "old-empty": 0}
    # every id with committed offsets, either kind; none for a group without any
    assert [gid for gid, _ in gm.committed_offsets_of(b.group_coordinator)] == [
        "cg-reconciling", "cg-stable", "old"]

