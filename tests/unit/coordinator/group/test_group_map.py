"""coordinator.group.group_map: one map of both kinds of group, a view per kind, and
no id held by two groups."""

from __future__ import annotations

import pytest

from coordinator.group.classic.group_metadata import GroupMetadata
from coordinator.group.classic.group_state import GroupState
from coordinator.group.consumer.model import ConsumerGroup
from coordinator.group.group_map import GroupKindConflict, GroupMap


def classic(gid: str) -> GroupMetadata:
    return GroupMetadata(gid, GroupState.EMPTY, 0)


def test_each_view_sees_its_kind_only() -> None:
    groups = GroupMap()
    groups.classic["a"] = classic("a")
    groups.consumer["b"] = ConsumerGroup("b")
    assert list(groups.classic) == ["a"] and list(groups.consumer) == ["b"]
    assert len(groups.classic) == 1 and len(groups.consumer) == 1 and len(groups) == 2
    assert "b" not in groups.classic and "b" in groups.consumer and "b" in groups
    assert groups.classic.get("b") is None and groups.consumer.get("a") is None
    with pytest.raises(KeyError):
        groups.classic["b"]
    with pytest.raises(KeyError):
        del groups.consumer["a"]               # not a consumer group: left alone
    assert "a" in groups.classic
    assert groups.classic.pop("b", None) is None and "b" in groups.consumer


def test_an_id_names_one_group() -> None:
    groups = GroupMap()
    groups.consumer["g"] = ConsumerGroup("g")
    with pytest.raises(GroupKindConflict, match="g is a ConsumerGroup"):
        groups.classic["g"] = classic("g")
    del groups.consumer["g"]
    groups.classic["g"] = classic("g")         # once the other kind is gone
    with pytest.raises(GroupKindConflict):
        groups.consumer["g"] = ConsumerGroup("g")
    replacement = classic("g")
    groups.classic["g"] = replacement          # the same kind replaces
    assert groups.get("g") is replacement


def test_iteration_is_a_snapshot() -> None:
    groups = GroupMap()
    for gid in "abc":
        groups.classic[gid] = classic(gid)
    for gid in groups.classic:
        del groups.classic[gid]
    assert len(groups) == 0

