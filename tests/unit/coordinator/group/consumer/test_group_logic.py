"""The pure heartbeat state machine: validation, errors as Kafka answers them,
joins, reconciliation steps, static members, leaving, fencing, metadata and
regex subscriptions."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from coordinator.group.consumer import group_logic as gl
from coordinator.group.consumer import target_assignment
from coordinator.group.consumer.model import ConsumerGroup, GroupState, MemberState
from coordinator.group.consumer.records import CurrentAssignment, GroupEpoch, MemberSubscription, \
    Record, RegexResolution, SubscriptionMetadata, TargetAssignmentEpoch, \
    TargetAssignmentMember
from coordinator.group.consumer.replay import replay
from protocol.errors import ErrorCode
from tests.unit.coordinator.group.consumer.fake_topics import FakeTopics


class Harness:
    def __init__(self, config: gl.GroupConfig | None = None) -> None:
        self.topics = FakeTopics()
        self.config = config or gl.GroupConfig()
        self.groups: dict[str, ConsumerGroup] = {}
        self.now = 0

    @property
    def group(self) -> ConsumerGroup:
        return self.groups["g"]

    def send(self, **kw: object) -> tuple[gl.HeartbeatResult, list[Record]]:
        kw.setdefault("api_version", 1)
        hb = gl.Heartbeat(group_id=kw.pop("group_id", "g"), **kw)  # type: ignore[arg-type]
        res, records = gl.heartbeat(self.groups.get(hb.group_id), hb, self.topics, self.config,
                                    self.now, new_member_id=lambda: "generated-id")
        if res.error:
            assert records == []
        for r in records:
            replay(self.groups, r)
        return res, records

    def join(self, member_id: str, topics: list[str] | None = None, **kw: object
             ) -> gl.HeartbeatResult:
        kw.setdefault("rebalance_timeout_ms", 30000)
        kw.setdefault("owned", {})
        if "subscribed_topic_regex" not in kw:
            kw.setdefault("subscribed_topic_names", topics or ["a"])
        res, _ = self.send(member_id=member_id, member_epoch=0, **kw)
        return res

    def beat(self, member_id: str, epoch: int | None = None, owned: object = "assigned",
             **kw: object) -> tuple[gl.HeartbeatResult, list[Record]]:
        m = self.group.members[member_id]
        if owned == "assigned":
            owned = dict(m.assigned)
        return self.send(member_id=member_id,
                         member_epoch=m.member_epoch if epoch is None else epoch,
                         owned=owned, **kw)

    def settle(self, rounds: int = 10) -> None:
        for _ in range(rounds):
            for mid in sorted(self.group.members):
                m = self.group.members[mid]
                if m.member_epoch >= 0:
                    self.beat(mid)
            if gl.state_of(self.group) == GroupState.STABLE:
                return
        raise AssertionError(gl.state_of(self.group))


@pytest.fixture
def h() -> Harness:
    h = Harness()
    h.topics.create("a", 6)
    h.topics.create("b", 4)
    return h


def pid(h: Harness, name: str) -> uuid.UUID:
    return h.topics.id_of(name)


# -- validation ---------------------------------------------------------------------------

@pytest.mark.parametrize("fields, message", [
    (dict(member_id="", member_epoch=0, api_version=1), "MemberId can't be empty."),
    (dict(member_id="m", member_epoch=3, api_version=0), None),
    (dict(member_id=" ", member_epoch=1), "MemberId can't be empty."),
    (dict(group_id=" "), "GroupId can't be empty."),
    (dict(instance_id=""), "InstanceId can't be empty."),
    (dict(rack_id=" "), "RackId can't be empty."),
    (dict(rebalance_timeout_ms=-1), "RebalanceTimeoutMs must be provided in first request."),
    (dict(owned=None), "TopicPartitions must be empty when (re-)joining."),
    (dict(owned={uuid.uuid4(): frozenset({1})}),
     "TopicPartitions must be empty when (re-)joining."),
    (dict(subscribed_topic_names=[]),
     "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."),
    (dict(member_epoch=-2, instance_id=None), "InstanceId can't be null."),
    (dict(member_epoch=-3), "MemberEpoch is invalid."),
])
def test_invalid_requests(h: Harness, fields: dict[str, object], message: str | None) -> None:
    base: dict[str, object] = dict(member_id="m1", member_epoch=0, rebalance_timeout_ms=1000,
                                   subscribed_topic_names=["a"], owned={}, api_version=1)
    base.update(fields)
    res, records = h.send(**base)
    if message is None:   # v0 non-join: not a validation error (the group is unknown)
        assert res.error == ErrorCode.GROUP_ID_NOT_FOUND
        return
    assert (res.error, res.message) == (ErrorCode.INVALID_REQUEST, message)
    assert records == [] and h.groups == {}


def test_unsupported_assignor(h: Harness) -> None:
    res = h.join("m1", server_assignor="sticky")
    assert res.error == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert res.message == "ServerAssignor sticky is not supported. Supported assignors: " \
                          "uniform, range."


def test_v0_join_gets_a_coordinator_generated_member_id(h: Harness) -> None:
    res = h.join("", api_version=0)
    assert res.error == 0 and res.member_id == "generated-id"
    assert "generated-id" in h.group.members
    assert len(gl.random_member_id()) == 22


def test_heartbeat_for_unknown_group(h: Harness) -> None:
    res, _ = h.send(member_id="m1", member_epoch=3, owned={})
    assert res.error == ErrorCode.GROUP_ID_NOT_FOUND
    res, _ = h.send(member_id="m1", member_epoch=-1)
    assert res.error == ErrorCode.GROUP_ID_NOT_FOUND


def test_config_errors_name_the_key() -> None:
    with pytest.raises(ValueError, match="group.consumer.assignors"):
        gl.GroupConfig(assignors=("sticky",))
    with pytest.raises(ValueError, match="group.consumer.session.timeout.ms=1000"):
        gl.GroupConfig(session_timeout_ms=1000)
    with pytest.raises(ValueError, match="group.consumer.migration.policy"):
        gl.GroupConfig(migration_policy="sideways")
    with pytest.raises(ValueError, match="group.consumer.max.size"):
        gl.GroupConfig(max_size=0)
    with pytest.raises(ValueError, match="group.consumer.heartbeat.interval.ms"):
        gl.GroupConfig(heartbeat_interval_ms=20000)
    with pytest.raises(ValueError, match="group.consumer.min.session.timeout.ms=70000"):
        gl.GroupConfig(min_session_timeout_ms=70000)
    with pytest.raises(ValueError, match="group.consumer.heartbeat.interval.ms=5000: must be "
                                         "below group.consumer.session.timeout.ms=5000"):
        gl.GroupConfig(session_timeout_ms=5000, min_session_timeout_ms=1000)
    assert gl.GroupConfig(assignors=["range"]).assignors == ("range",)


# -- joining and reconciling ---------------------------------------------------------------

def test_first_join_records_and_response(h: Harness) -> None:
    res, records = h.send(member_id="m1", member_epoch=0, rebalance_timeout_ms=5000,
                          subscribed_topic_names=["a", "zzz"], owned={}, client_id="c",
                          client_host="/1.2.3.4")
    assert [type(r) for r in records] == [MemberSubscription, SubscriptionMetadata, GroupEpoch,
                                          TargetAssignmentMember, TargetAssignmentEpoch,
                                          CurrentAssignment]
    assert res == gl.HeartbeatResult(0, None, "m1", 1, 5000,
                                     {pid(h, "a"): frozenset(range(6))})
    g = h.group
    assert (g.group_epoch, g.assignment_epoch) == (1, 1)
    assert list(g.subscription_metadata) == ["a"]     # zzz does not exist
    assert g.members["m1"].client_host == "/1.2.3.4"
    assert gl.state_of(g) == GroupState.STABLE


def test_second_member_revoke_then_release(h: Harness) -> None:
    h.join("m1")
    res2 = h.join("m2")
    a = pid(h, "a")
    assert res2.member_epoch == 2 and res2.assignment == {}
    assert h.group.members["m2"].state == MemberState.UNRELEASED_PARTITIONS
    assert gl.state_of(h.group) == GroupState.RECONCILING
    # m1 still owns everything: told to keep three, revoke three
    res1, _ = h.beat("m1", owned={a: frozenset(range(6))})
    m1 = h.group.members["m1"]
    assert m1.state == MemberState.UNREVOKED_PARTITIONS and res1.member_epoch == 1
    assert res1.assignment == m1.assigned
    revoked = m1.pending_revocation[a]
    assert len(revoked) == 3
    # m2 cannot get them yet
    res2, _ = h.beat("m2", owned={})
    assert res2.assignment is None and h.group.members["m2"].assigned == {}
    # m1 confirms: epoch 2, stable
    res1, _ = h.beat("m1")
    assert res1.member_epoch == 2 and h.group.members["m1"].state == MemberState.STABLE
    res2, _ = h.beat("m2", owned={})
    assert res2.assignment == {a: revoked}
    assert gl.state_of(h.group) == GroupState.STABLE


def test_revocation_of_unreported_partitions_kafka_and_strict() -> None:
    for strict in (False, True):
        h = Harness(gl.GroupConfig(strict_revocation=strict))
        h.topics.create("a", 4)
        h.join("m1")
        a = pid(h, "a")
        h.join("m2")
        # m1 reports owning only partition 0 of its four
        res, _ = h.beat("m1", owned={a: frozenset({0})})
        m1 = h.group.members["m1"]
        if strict:   # told its reduced assignment; the rest waits for a confirmation
            assert m1.state == MemberState.UNREVOKED_PARTITIONS and m1.member_epoch == 1
            assert sum(len(ps) for ps in m1.pending_revocation.values()) == 2
            res, _ = h.beat("m1", owned=dict(m1.assigned))
        m1 = h.group.members["m1"]
        assert m1.state == MemberState.STABLE and m1.member_epoch == 2
        assert len(m1.assigned[a]) == 2


def test_stable_heartbeat_writes_nothing_and_runs_no_assignor(
        h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    h.join("m1")
    h.join("m2")
    h.settle()

    def boom(*a: object, **k: object) -> None:
        raise AssertionError("assignor ran")
    monkeypatch.setattr(gl, "build_target", boom)
    res, records = h.beat("m1")
    assert records == [] and res.error == 0 and res.assignment is None
    assert res.heartbeat_interval_ms == 5000


def test_full_request_and_differing_owned_get_the_assignment(h: Harness) -> None:
    h.join("m1")
    m = h.group.members["m1"]
    res, _ = h.beat("m1", rebalance_timeout_ms=1000, subscribed_topic_names=["a"])
    assert res.assignment == m.assigned
    res, _ = h.beat("m1", owned={})
    assert res.assignment == m.assigned
    res, _ = h.beat("m1", owned=None)
    assert res.assignment is None


def test_epoch_rules(h: Harness) -> None:
    h.join("m1")
    h.join("m2")
    h.settle()
    m1 = h.group.members["m1"]
    a = pid(h, "a")
    res, _ = h.beat("m1", epoch=m1.member_epoch + 1)
    assert res.error == ErrorCode.FENCED_MEMBER_EPOCH
    # previous epoch with a subset of the assignment: accepted (lost response)
    assert m1.previous_member_epoch == 1 and m1.member_epoch == 2
    res, _ = h.beat("m1", epoch=1, owned={a: frozenset(list(m1.assigned[a])[:1])})
    assert res.error == 0 and res.member_epoch == 2
    # previous epoch but owning more: fenced
    res, _ = h.beat("m1", epoch=1, owned={a: frozenset(range(6))})
    assert res.error == ErrorCode.FENCED_MEMBER_EPOCH
    # previous epoch without owned partitions: fenced (not a subset)
    res, _ = h.beat("m1", epoch=1, owned=None)
    assert res.error == ErrorCode.FENCED_MEMBER_EPOCH
    # an epoch older than the previous one: fenced, even owning nothing
    h.topics.grow("a", 8)
    for r in gl.refresh_metadata(h.group, h.topics, 0):
        replay(h.groups, r)
    h.settle()
    m1 = h.group.members["m1"]
    assert m1.member_epoch == 3 and m1.previous_member_epoch == 2
    res, _ = h.beat("m1", epoch=1, owned={})
    assert res.error == ErrorCode.FENCED_MEMBER_EPOCH
    # a negative epoch other than -1/-2 is not a heartbeat at all
    res, _ = h.beat("m1", epoch=-5)
    assert res.error == ErrorCode.INVALID_REQUEST


def test_rejoin_with_epoch_zero_keeps_the_member(h: Harness) -> None:
    h.join("m1")
    res = h.join("m1")
    assert res.error == 0 and res.member_epoch == 1
    assert res.assignment == h.group.members["m1"].assigned


def test_unknown_member(h: Harness) -> None:
    h.join("m1")
    res, _ = h.send(member_id="nope", member_epoch=1, owned={})
    assert (res.error, res.message) == (ErrorCode.UNKNOWN_MEMBER_ID,
                                        "Member nope is not a member of group g.")
    res, _ = h.send(member_id="nope", member_epoch=-1)
    assert res.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_group_max_size() -> None:
    h = Harness(gl.GroupConfig(max_size=2))
    h.topics.create("a", 2)
    h.join("m1")
    h.join("m2")
    res = h.join("m3")
    assert res.error == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert h.join("m2").error == 0       # a member of the group may rejoin


def test_epoch_bumps_on_subscription_assignor_and_rack_not_client_id(h: Harness) -> None:
    h.join("m1")
    epoch = h.group.group_epoch
    _, records = h.beat("m1", client_id="other")
    assert [type(r) for r in records] == [MemberSubscription]
    assert h.group.group_epoch == epoch
    for change in (dict(subscribed_topic_names=["a", "b"]), dict(server_assignor="range"),
                   dict(rack_id="r1")):
        _, records = h.beat("m1", **change)
        assert any(isinstance(r, GroupEpoch) for r in records), change
        assert h.group.group_epoch == epoch + 1
        epoch += 1
    # the same subscription in another order: no bump
    _, records = h.beat("m1", subscribed_topic_names=["b", "a"])
    assert records == []


def test_preferred_assignor_is_the_most_asked(h: Harness) -> None:
    h.join("m1", ["a", "b"], server_assignor="range")
    h.join("m2", ["a", "b"], server_assignor="range")
    h.join("m3", ["a", "b"])
    members = h.group.members.values()
    assert target_assignment.preferred_assignor(members, ("uniform", "range")) == "range"
    # range: co-partitioned targets for the first member by id
    a, b = pid(h, "a"), pid(h, "b")
    t = h.group.target["m1"]
    assert t[a] == frozenset({0, 1}) and t[b] == frozenset({0, 1})


def test_leave_removes_and_bumps_target_follows_next_heartbeat(h: Harness) -> None:
    h.join("m1")
    h.join("m2")
    h.settle()
    res, records = h.send(member_id="m2", member_epoch=-1)
    assert res == gl.HeartbeatResult(0, None, "m2", -1, 0, None)
    assert [type(r) for r in records][:3] == [CurrentAssignment, TargetAssignmentMember,
                                              MemberSubscription]
    assert all(r.tombstone for r in records[:3])
    assert "m2" not in h.group.members and "m2" not in h.group.target
    assert gl.state_of(h.group) == GroupState.ASSIGNING
    res, _ = h.beat("m1")
    assert res.assignment == {pid(h, "a"): frozenset(range(6))}
    assert gl.state_of(h.group) == GroupState.STABLE


def test_fence_member_frees_partitions(h: Harness) -> None:
    h.join("m1")
    h.join("m2")
    h.settle()
    records = gl.fence_member(h.group, "m1", h.topics)
    for r in records:
        replay(h.groups, r)
    assert all(owner == "m2" for owner in h.group.owners.values())
    assert gl.fence_member(h.group, "m1") == []
    h.settle()
    assert len(h.group.owners) == 6


def test_unknown_state_member_is_fenced_unless_it_owns_nothing(h: Harness) -> None:
    h.join("m1")
    replay(h.groups, CurrentAssignment("g", "m1", member_epoch=1, previous_member_epoch=0,
                                       state=MemberState.UNKNOWN, assigned={}))
    res, _ = h.beat("m1", owned={pid(h, "a"): frozenset({0})})
    assert res.error == ErrorCode.FENCED_MEMBER_EPOCH
    res, _ = h.beat("m1", owned={})
    assert res.error == 0 and h.group.members["m1"].state == MemberState.STABLE


# -- static members ------------------------------------------------------------------------

def test_static_member_leave_and_replacement(h: Harness) -> None:
    h.join("s1", instance_id="i1")
    h.join("m2")
    h.settle()
    kept = dict(h.group.members["s1"].assigned)
    target = dict(h.group.target["s1"])
    epoch = h.group.group_epoch
    res, records = h.send(member_id="s1", member_epoch=-2, instance_id="i1")
    assert res.member_epoch == -2 and len(records) == 1
    assert h.group.members["s1"].member_epoch == -2
    assert h.group.group_epoch == epoch                      # no rebalance
    assert all(h.group.owners[(t, p)] == "s1" for t, ps in kept.items() for p in ps)
    assert gl.state_of(h.group) == GroupState.RECONCILING
    # another instance id cannot take the partitions
    res = h.join("s1-new", instance_id="i1")
    assert res.error == 0 and res.assignment == kept and res.member_epoch == epoch
    assert "s1" not in h.group.members
    assert h.group.static_members == {"i1": "s1-new"}
    assert h.group.target["s1-new"] == target
    assert h.group.group_epoch == epoch
    assert all(h.group.owners[(t, p)] == "s1-new" for t, ps in kept.items() for p in ps)


def test_static_unreleased_and_fenced_instance(h: Harness) -> None:
    h.join("s1", instance_id="i1")
    res = h.join("s2", instance_id="i1")
    assert res.error == ErrorCode.UNRELEASED_INSTANCE_ID
    res, _ = h.send(member_id="s2", member_epoch=1, instance_id="i1", owned={})
    assert res.error == ErrorCode.FENCED_INSTANCE_ID
    res, _ = h.send(member_id="s2", member_epoch=-1, instance_id="i1")
    assert res.error == ErrorCode.FENCED_INSTANCE_ID
    res, _ = h.send(member_id="s2", member_epoch=1, instance_id="i9", owned={})
    assert (res.error, res.message) == (ErrorCode.UNKNOWN_MEMBER_ID, "Instance id i9 is unknown.")
    # the same member rejoining after a fence keeps its place
    assert h.join("s1", instance_id="i1").error == 0
    # a static member leaving for good (-1) is removed
    res, _ = h.send(member_id="s1", member_epoch=-1, instance_id="i1")
    assert res.error == 0 and h.group.members == {} and h.group.static_members == {}


def test_static_member_session_expiry_after_temporary_leave(h: Harness) -> None:
    h.join("s1", instance_id="i1")
    h.join("m2")
    h.settle()
    h.send(member_id="s1", member_epoch=-2, instance_id="i1")
    for r in gl.fence_member(h.group, "s1", h.topics):
        replay(h.groups, r)
    h.settle()
    assert set(h.group.owners.values()) == {"m2"} and len(h.group.owners) == 6


# -- metadata and regexes -----------------------------------------------------------------

def test_refresh_metadata_on_growth_and_deletion(h: Harness) -> None:
    h.join("m1", ["a", "b"])
    h.join("m2", ["a", "b"])
    h.settle()
    assert gl.refresh_metadata(h.group, h.topics, 0) == []
    h.topics.grow("a", 10)
    records = gl.refresh_metadata(h.group, h.topics, 0)
    assert [type(r) for r in records] == [SubscriptionMetadata, GroupEpoch]
    for r in records:
        replay(h.groups, r)
    h.settle()
    assert len(h.group.owners) == 14
    h.topics.delete("b")
    for r in gl.refresh_metadata(h.group, h.topics, 0):
        replay(h.groups, r)
    h.settle()
    assert {t for t, _ in h.group.owners} == {pid(h, "a")}


def test_regex_subscription(h: Harness) -> None:
    res = h.join("m1", subscribed_topic_regex="[ab]")
    assert res.error == 0
    assert h.group.resolved_regexes["[ab]"].topics == {"a", "b"}
    assert sum(len(ps) for ps in res.assignment.values()) == 10   # type: ignore[union-attr]
    # a new topic matching: picked up by refresh_metadata
    h.topics.create("c", 2)             # does not match: re-resolved, no rebalance
    records = gl.refresh_metadata(h.group, h.topics, 0)
    assert [type(r) for r in records] == [RegexResolution]
    for r in records:
        replay(h.groups, r)
    assert gl.refresh_metadata(h.group, h.topics, 0) == []
    h.topics.create("ab", 1)             # fullmatch: not matched
    h.topics.delete("b")
    for r in gl.refresh_metadata(h.group, h.topics, 0):
        replay(h.groups, r)
    assert h.group.resolved_regexes["[ab]"].topics == {"a"}
    h.settle()
    assert {t for t, _ in h.group.owners} == {pid(h, "a")}
    # the last user switching to names drops the resolution
    _, records = h.beat("m1", subscribed_topic_names=["a"], subscribed_topic_regex="")
    assert RegexResolution("g", "[ab]", tombstone=True) in records
    assert h.group.resolved_regexes == {}


def test_invalid_regex(h: Harness) -> None:
    res = h.join("m1", subscribed_topic_regex="a(")
    assert res.error == gl.INVALID_REGULAR_EXPRESSION == 128
    assert res.message is not None and res.message.startswith(
        "SubscribedTopicRegex `a(` is not a valid regular expression:")
    assert h.groups == {}


def test_shared_regex_is_resolved_once(h: Harness) -> None:
    h.join("m1", subscribed_topic_regex="a|b")
    _, records = h.send(member_id="m2", member_epoch=0, rebalance_timeout_ms=1,
                        subscribed_topic_regex="a|b", owned={})
    assert not any(isinstance(r, RegexResolution) for r in records)
    _, records = h.send(member_id="m2", member_epoch=-1)
    assert not any(isinstance(r, RegexResolution) for r in records)
    assert "a|b" in h.group.resolved_regexes


# -- deletion ------------------------------------------------------------------------------

def test_delete_group_records(h: Harness) -> None:
    h.join("m1", subscribed_topic_regex="a")
    h.join("s1", instance_id="i1")
    for r in gl.delete_group_records(h.group):
        replay(h.groups, r)
    assert h.groups == {}
    assert gl.state_of(None) == GroupState.DEAD


def test_classic_metadata_is_kept_and_cleared_by_a_consumer_heartbeat(h: Harness) -> None:
    from coordinator.group.consumer.model import ClassicMemberMetadata
    classic = ClassicMemberMetadata(10000, [("range", b"\x00\x01")])
    h.join("m1", classic=classic)
    assert h.group.members["m1"].classic == classic
    _, records = h.beat("m1")
    assert h.group.members["m1"].classic is None
    assert [type(r) for r in records] == [MemberSubscription]


def test_refresh_re_resolves_a_regex_loaded_with_the_same_version_number(h: Harness) -> None:
    """Versions are each coordinator's own counter: after failover a stored
    resolution may carry our current number by chance and still be stale."""
    h.join("m1", subscribed_topic_regex="[abc]")
    stale = h.group.resolved_regexes["[abc]"]
    h.topics.create("c", 3)
    replay(h.groups, RegexResolution("g", "[abc]", dataclasses.replace(
        stale, version=h.topics.version)))
    records = gl.refresh_metadata(h.group, h.topics, 0)
    assert RegexResolution in [type(r) for r in records]
    assert GroupEpoch in [type(r) for r in records]
