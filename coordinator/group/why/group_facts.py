"""The hooks the group coordinator calls where a rebalance starts or a member goes,
and the ``GroupWhy`` view DescribeWhy answers with.

Each hook writes ``coordinator.why`` (a ``GroupHistories``); the coordinator
calls it at the one place each trigger happens (group_coordinator.py), before
the state change so the member's details are still there:

    member_joined        a new member (JoinGroup without a member id) -> "join",
                         or "new-group" for the first member of a new group
    member_rejoined      a known member's JoinGroup that starts a rebalance ->
                         "metadata-change" (new subscription/protocols) or "rejoin"
                         (e.g. the leader asking for a new assignment)
    static_replaced      KIP-345 group.instance.id back with a new member id ->
                         "static-replace" (closed at once when no rebalance follows)
    member_left          LeaveGroup -> "leave", with the KIP-800 Reason if sent
    member_timed_out     session expiry -> "timeout"
    rejoin_timed_out     not rejoined before the rebalance timeout -> "rejoin-timeout"
    sync_timed_out       no SyncGroup before the rebalance timeout -> "sync-timeout"
    generation_started   a rebalance completed: open events get its generation
    group_deleted        DeleteGroups -> "deleted"; open events get -1

JoinGroup and LeaveGroup reasons (KIP-800, JoinGroup v8+ / LeaveGroup v5+) are
quoted in the reason text when the client sent them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from coordinator.group.why import reasons
from coordinator.group.why.consumer_group_facts import consumer_group_why
from coordinator.group.why.group_history import GroupHistories, Trigger
from protocol.why_model import GroupWhy

if TYPE_CHECKING:
    from coordinator.group.classic.coordinator_types import JoinRequest
    from coordinator.group.classic.group_metadata import GroupMetadata, MemberMetadata
    from coordinator.group.classic.port import ClassicGroups
    from coordinator.runtime.runtime import CoordinatorRuntime


class HistoryHost(Protocol):
    """What the hooks use of the coordinator: its histories and its clock."""

    why: GroupHistories
    runtime: CoordinatorRuntime


def _trigger(kind: str, member: MemberMetadata, reason: str) -> Trigger:
    return Trigger(kind, member.member_id, member.client_id, member.client_host, reason)


def member_joined(coordinator: HistoryHost, group: GroupMetadata, member_id: str, req: JoinRequest) -> None:
    first = not group.members and group.generation_id == 0
    coordinator.why.of(group.group_id).record(Trigger(
        "new-group" if first else "join", member_id, req.client_id, req.client_host,
        reasons.join_reason(req.reason, first=first)), coordinator.runtime.clock())


def member_rejoined(coordinator: HistoryHost, group: GroupMetadata, member: MemberMetadata, req: JoinRequest,
                    starts_rebalance: bool) -> None:
    if not starts_rebalance:
        return
    changed = not member.matches(req.protocols)
    coordinator.why.of(group.group_id).record(_trigger(
        "metadata-change" if changed else "rejoin", member,
        reasons.rejoin_reason(req.reason, metadata_changed=changed,
                              leader=group.is_leader(member.member_id))), coordinator.runtime.clock())


def static_replaced(coordinator: HistoryHost, group: GroupMetadata, instance_id: str, old_member_id: str,
                    member: MemberMetadata, starts_rebalance: bool) -> None:
    coordinator.why.of(group.group_id).record(
        _trigger("static-replace", member,
                 reasons.static_replace_reason(instance_id, old_member_id)),
        coordinator.runtime.clock(), generation=None if starts_rebalance else group.generation_id)


def member_left(coordinator: HistoryHost, group: GroupMetadata, member: MemberMetadata, client_reason: str | None) -> None:
    coordinator.why.of(group.group_id).record(
        _trigger("leave", member, reasons.leave_reason(client_reason)), coordinator.runtime.clock())


def member_timed_out(coordinator: HistoryHost, group: GroupMetadata, member: MemberMetadata) -> None:
    coordinator.why.of(group.group_id).record(
        _trigger("timeout", member, reasons.timeout_reason(member.session_timeout_ms)),
        coordinator.runtime.clock())


def rejoin_timed_out(coordinator: HistoryHost, group: GroupMetadata, member: MemberMetadata) -> None:
    coordinator.why.of(group.group_id).record(
        _trigger("rejoin-timeout", member,
                 reasons.rejoin_timeout_reason(member.rebalance_timeout_ms)),
        coordinator.runtime.clock())


def sync_timed_out(coordinator: HistoryHost, group: GroupMetadata, member: MemberMetadata) -> None:
    coordinator.why.of(group.group_id).record(
        _trigger("sync-timeout", member,
                 reasons.sync_timeout_reason(member.rebalance_timeout_ms)),
        coordinator.runtime.clock())


def generation_started(coordinator: HistoryHost, group: GroupMetadata) -> None:
    coordinator.why.of(group.group_id).completed(group.generation_id)


def group_deleted(coordinator: HistoryHost, group: GroupMetadata) -> None:
    history = coordinator.why.of(group.group_id)
    history.failed()
    history.record(Trigger("deleted", "", "", "", "deleted by DeleteGroups"),
                   coordinator.runtime.clock(), generation=group.generation_id)


def group_why(coordinator: ClassicGroups, group_id: str) -> GroupWhy:
    """The group as the coordinator sees it now; an unknown (or deleted) group is
    "Dead" at generation -1, with whatever history is left. A consumer group
    (KIP-848) answers its state, its group epoch as the generation and its epoch
    bumps (consumer_group_facts)."""
    consumer = consumer_group_why(coordinator.consumer.groups, coordinator.why, group_id)
    if consumer is not None:
        return consumer
    group = coordinator.groups.get(group_id)
    if group is None:
        state, generation = "Dead", -1
    else:
        state, generation = group.state.value, group.generation_id
    return GroupWhy(group_id=group_id, state=state, generation=generation,
                    rebalances=coordinator.why.events(group_id))
