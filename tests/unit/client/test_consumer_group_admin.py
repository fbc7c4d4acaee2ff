"""GroupAdmin's view of both kinds of group against an in-test broker (FakeKafka):
ConsumerGroupDescribe for a KIP-848 group, the fall back to DescribeGroups for a
classic one (GROUP_ID_NOT_FOUND) or a broker without API 69, the coordinator retry,
and ListGroups v5's type filter and GroupType (and the filters a v4 broker leaves
to the client). The broker side is tested in tests/integration/groups/."""

from __future__ import annotations

import struct
import uuid
from typing import Any

from client.consumer_group_admin import CLASSIC, CONSUMER, classic_description
from client.group_admin import GroupAdmin
from client.groups import DescribedGroup, GroupMember
from client.connection import our_versions
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api
from tests.unit.client.test_client import FakeKafka, run

TOPIC_ID = uuid.uuid4()


def assignment_bytes(parts: dict[str, list[int]]) -> bytes:
    out = struct.pack(">hi", 0, len(parts))
    for topic, ps in parts.items():
        out += struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">i", len(ps))
        out += b"".join(struct.pack(">i", p) for p in ps)
    return out + struct.pack(">i", -1)


def coordinator_answer(fake: FakeKafka, req: Struct, version: int) -> Struct:
    spec = api(ApiKey.FIND_COORDINATOR).response
    c = spec.structs["Coordinator"].new(key=req.key if version < 4 else req.coordinator_keys[0],
                                        node_id=fake.node_id, host="127.0.0.1", port=fake.port,
                                        error_code=0, error_message=None)
    return spec.new(error_code=0, node_id=fake.node_id, host="127.0.0.1", port=fake.port,
                    error_message=None, coordinators=[c])


def consumer_group(group_id: str, error: int = 0) -> Struct:
    s = api(ApiKey.CONSUMER_GROUP_DESCRIBE).response.structs

    def assignment(parts: list[int]) -> Struct:
        return s["Assignment"].new(topic_partitions=[s["TopicPartitions"].new(
            topic_id=TOPIC_ID, topic_name="orders", partitions=parts)] if parts else [])
    members = [s["Member"].new(member_id="m-1", instance_id=None, rack_id="r1", member_epoch=7,
                               client_id="rdkafka", client_host="/127.0.0.1",
                               subscribed_topic_names=["orders"], subscribed_topic_regex=None,
                               assignment=assignment([2, 0]), target_assignment=assignment([0]),
                               member_type=1)]
    return s["DescribedGroup"].new(
        error_code=error, error_message=None, group_id=group_id,
        group_state="Reconciling" if not error else "", group_epoch=8 if not error else 0,
        assignment_epoch=8 if not error else 0, assignor_name="uniform" if not error else "",
        members=members if not error else [], authorized_operations=-2147483648)


def classic_group(group_id: str) -> Struct:
    spec = api(ApiKey.DESCRIBE_GROUPS).response
    m = spec.structs["DescribedGroupMember"].new(
        member_id="c-1", group_instance_id="inst", client_id="java", client_host="/10.0.0.1",
        member_metadata=b"", member_assignment=assignment_bytes({"orders": [1, 0]}))
    return spec.structs["DescribedGroup"].new(
        error_code=0, group_id=group_id, group_state="Stable", protocol_type="consumer",
        protocol_data="range", members=[m], authorized_operations=-2147483648)


class Answers:
    """A coordinator for FakeKafka: FindCoordinator to itself, ConsumerGroupDescribe for
    the groups in ``consumer`` (GROUP_ID_NOT_FOUND otherwise), DescribeGroups for the
    rest, ListGroups from ``listed``; ``loading`` answers that many COORDINATOR_LOAD_
    IN_PROGRESS first. Keeps the requests it saw, by api key."""

    def __init__(self, fake: FakeKafka, consumer: set[str], loading: int = 0,
                 listed: list[tuple[str, str, str, str]] | None = None) -> None:
        self.fake, self.consumer, self.loading = fake, consumer, loading
        self.listed = listed or []
        self.seen: dict[int, list[tuple[int, Struct]]] = {}
        fake.hook = self

    def __call__(self, header: RequestHeader, req: Struct) -> Struct | None:
        key, version = header.api_key, header.api_version
        self.seen.setdefault(key, []).append((version, req))
        if key == ApiKey.FIND_COORDINATOR:
            return coordinator_answer(self.fake, req, version)
        if key == ApiKey.CONSUMER_GROUP_DESCRIBE:
            spec = api(key).response
            if self.loading:
                self.loading -= 1
                return spec.new(throttle_time_ms=0, groups=[consumer_group(
                    req.group_ids[0], ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)])
            return spec.new(throttle_time_ms=0, groups=[
                consumer_group(g) if g in self.consumer
                else consumer_group(g, ErrorCode.GROUP_ID_NOT_FOUND) for g in req.group_ids])
        if key == ApiKey.DESCRIBE_GROUPS:
            return api(key).response.new(throttle_time_ms=0,
                                         groups=[classic_group(g) for g in req.groups])
        if key == ApiKey.LIST_GROUPS:
            spec = api(key).response
            return spec.new(throttle_time_ms=0, error_code=0, groups=[
                spec.structs["ListedGroup"].new(group_id=g, protocol_type=pt, group_state=st,
                                                group_type=gt)
                for g, pt, st, gt in self.listed
                if (not req.types_filter or version < 5 or gt in req.types_filter)
                and (not req.states_filter or version < 4 or st in req.states_filter)])
        return None


def with_admin(fn: Any, **fake_kwargs: Any) -> Any:
    async def body(fake: FakeKafka) -> Any:
        ga = GroupAdmin(fake.address, 5000)
        try:
            return await fn(fake, ga)
        finally:
            await ga.close()
    return run(body, **fake_kwargs)


def test_consumer_group_is_described_with_epochs_and_both_assignments() -> None:
    async def body(fake: FakeKafka, ga: GroupAdmin) -> None:
        answers = Answers(fake, {"new"}, loading=1)
        d, coordinator = await ga.describe_group("new")
        assert coordinator == (fake.node_id, "127.0.0.1", fake.port)
        assert (d.group_type, d.state, d.assignor, d.group_epoch, d.assignment_epoch) == (
            CONSUMER, "Reconciling", "uniform", 8, 8)
        [m] = d.members
        assert m.assignment == (("orders", 0), ("orders", 2))       # sorted
        assert m.target_assignment == (("orders", 0),)
        assert (m.member_epoch, m.upgraded, m.rack_id) == (7, True, "r1")
        assert len(answers.seen[ApiKey.CONSUMER_GROUP_DESCRIBE]) == 2   # loading, retried
        assert ApiKey.DESCRIBE_GROUPS not in answers.seen
    with_admin(body)


def test_classic_group_falls_back_to_describe_groups() -> None:
    async def body(fake: FakeKafka, ga: GroupAdmin) -> None:
        answers = Answers(fake, set())
        d, _ = await ga.describe_group("old")
        assert (d.group_type, d.state, d.assignor, d.group_epoch) == (CLASSIC, "Stable",
                                                                      "range", None)
        [m] = d.members
        assert (m.member_id, m.instance_id, m.host) == ("c-1", "inst", "/10.0.0.1")
        assert m.assignment == (("orders", 0), ("orders", 1))
        assert m.target_assignment is None and m.member_epoch is None and m.upgraded is None
        assert [r.group_ids for _, r in answers.seen[ApiKey.CONSUMER_GROUP_DESCRIBE]] == [
            ["old"]]
        assert [r.groups for _, r in answers.seen[ApiKey.DESCRIBE_GROUPS]] == [["old"]]
    with_admin(body)


def test_a_broker_without_consumer_group_describe_gets_describe_groups_only() -> None:
    versions = dict(our_versions())
    del versions[ApiKey.CONSUMER_GROUP_DESCRIBE]

    async def body(fake: FakeKafka, ga: GroupAdmin) -> None:
        answers = Answers(fake, {"new"})
        d, _ = await ga.describe_group("new")
        assert d.group_type == CLASSIC
        assert ApiKey.CONSUMER_GROUP_DESCRIBE not in answers.seen
    with_admin(body, versions=versions)


LISTED = [("a", "consumer", "Stable", "classic"), ("b", "consumer", "Reconciling", "consumer"),
          ("c", "connect", "Stable", "classic"), ("d", "", "Empty", "classic")]


def test_list_groups_sends_the_type_filter_and_reports_types() -> None:
    async def body(fake: FakeKafka, ga: GroupAdmin) -> None:
        answers = Answers(fake, set(), listed=LISTED)
        every = await ga.list_group_listings(set())
        assert [(g.group_id, g.type_name, g.state) for g in every] == [
            ("a", "Classic", "Stable"), ("b", "Consumer", "Reconciling"), ("d", "Classic",
                                                                           "Empty")]
        only = await ga.list_group_listings({"Reconciling"}, {"consumer"})
        assert [g.group_id for g in only] == ["b"]
        version, req = answers.seen[ApiKey.LIST_GROUPS][-1]
        assert version == 5 and req.types_filter == ["consumer"] \
            and req.states_filter == ["Reconciling"]
        assert await ga.list_groups(set()) == [("a", "Stable"), ("b", "Reconciling"),
                                               ("d", "Empty")]
    with_admin(body)


def test_a_v4_broker_is_filtered_by_type_here() -> None:
    versions = dict(our_versions())
    versions[ApiKey.LIST_GROUPS] = (0, 4)

    async def body(fake: FakeKafka, ga: GroupAdmin) -> None:
        Answers(fake, set(), listed=LISTED)
        assert [g.group_id for g in await ga.list_group_listings(set(), {"classic"})] == [
            "a", "b", "d"]                   # below v5 every group is classic
        assert await ga.list_group_listings(set(), {"consumer"}) == []
    with_admin(body, versions=versions)


def test_a_garbled_classic_assignment_is_empty_not_an_error() -> None:
    g = DescribedGroup(0, "g", "Stable", "consumer", "range",
                       (GroupMember("m", None, "c", "/h", b"", b"\x00\x00\x00\x00\x00\x09"),))
    assert classic_description(g).members[0].assignment == ()
