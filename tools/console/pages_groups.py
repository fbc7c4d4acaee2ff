"""The consumer groups list (``/groups``) and a group's page (``/group?id=G``).

Both kinds of group: classic ones (JoinGroup/SyncGroup) and KIP-848 consumer
groups (the broker assigns; ConsumerGroupDescribe). The list shows each group's
type.

The group page: state, type, assignor, coordinator; for a consumer group also
its group epoch and target assignment epoch; members (member id, instance id,
client id, host, assigned partitions; for a consumer group each member's epoch,
current vs target assignment and what its reconciliation still waits for:
partitions to revoke, partitions to receive, or a newer epoch); per partition
the committed offset, the log end (HW) and the lag (HW - committed), lagging
rows highlighted; and **why it last rebalanced**: the coordinator's rebalance
events (GroupWhy; for a consumer group its group epoch bumps and what caused
each), the latest one spelled out ("member X (client c, host h) timed out:
<reason>") and all of them in a table, newest first.
"""

from __future__ import annotations

from protocol.why_model import GroupWhy
from tools.console.html import Markup, ago, definition_list, esc, link, ms_time, page, table, url
from tools.console.model import GroupSummary, GroupView, MemberRow

KIND_TEXT = {"join": "joined", "leave": "left", "timeout": "timed out",
             "static-replace": "replaced a static member", "metadata-change":
             "changed its subscription", "new-group": "created the group", "deleted": "deleted",
             # consumer groups (KIP-848): what bumped the group epoch
             "member-joined": "joined", "member-left": "left", "member-fenced": "was fenced",
             "subscription-changed": "changed its subscription",
             "metadata-changed": "saw the subscribed topics change"}


def render_groups(groups: list[GroupSummary], *, refresh_s: int = 0) -> str:
    rows = [[link(url("/group", id=g.group_id), g.group_id), g.group_type or "-",
             g.state or "-"] for g in groups]
    body = table(["Group", "Type", "State"], rows, table_id="groups",
                 empty="no consumer groups")
    return page("Consumer groups", body, refresh_s=refresh_s)


def _assignment(tps: tuple[tuple[str, int], ...] | None) -> str:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps or ():
        by_topic.setdefault(t, []).append(p)
    return "; ".join(f"{t}: {', '.join(str(p) for p in sorted(ps))}"
                     for t, ps in sorted(by_topic.items())) or "-"


def reconciliation(m: MemberRow, assignment_epoch: int | None) -> str:
    """A consumer group member's progress towards its target (KIP-848): "stable", or
    what it still waits for: partitions to revoke (it owns them, its target does
    not), partitions to receive (others must release them first), a newer epoch."""
    current, target = set(m.assignment), set(m.target_assignment or ())
    waits = []
    if current - target:
        waits.append("revoking " + _assignment(tuple(sorted(current - target))))
    if target - current:
        waits.append("awaiting " + _assignment(tuple(sorted(target - current))))
    if not waits and assignment_epoch is not None and m.member_epoch is not None \
            and m.member_epoch < assignment_epoch:
        waits.append(f"epoch {m.member_epoch} < {assignment_epoch}")
    return "; ".join(waits) or "stable"


def _members(v: GroupView) -> Markup:
    if v.group_type != "consumer":
        return table(["Member id", "Instance id", "Client id", "Host", "Assignment"],
                     [[m.member_id, m.instance_id or "-", m.client_id, m.host,
                       _assignment(m.assignment)] for m in v.members],
                     table_id="members", empty="no members")
    mixed = any(m.upgraded is False for m in v.members)
    headers = ["Member id", "Instance id", "Client id", "Host", "Member epoch",
               "Reconciliation", "Current assignment", "Target assignment"]
    rows = []
    for m in v.members:
        row: list[object] = [m.member_id, m.instance_id or "-", m.client_id, m.host,
                             m.member_epoch if m.member_epoch is not None else "-",
                             reconciliation(m, v.assignment_epoch), _assignment(m.assignment),
                             _assignment(m.target_assignment)]
        if mixed:
            row.append("classic" if m.upgraded is False else "consumer")
        rows.append(row)
    return table(headers + (["Protocol"] if mixed else []), rows, table_id="members",
                 row_classes=["" if r[5] == "stable" else "lagging" for r in rows],
                 empty="no members")


def rebalance_why(why: GroupWhy, now_ms: int, *, consumer_group: bool = False) -> Markup:
    """The "why it last rebalanced" paragraph and table (id="rebalance-why"); for a
    consumer group (KIP-848) the events are its group epoch bumps."""
    word = "group epoch" if consumer_group else "generation"
    if not why.rebalances:
        head = ('<p class="ok">No group epoch bump recorded since this coordinator took the '
                'group.</p>' if consumer_group else
                '<p class="ok">No rebalance recorded since this coordinator took the group.</p>')
    else:
        last = why.rebalances[-1]
        who = last.member_id or "a member"
        detail = ", ".join(x for x in (f"client {last.client_id}" if last.client_id else "",
                                       f"host {last.host}" if last.host else "") if x)
        verb = KIND_TEXT.get(last.kind, last.kind)
        gen = (f"{word} {last.generation}" if last.generation >= 0
               else "a rebalance that did not complete")
        subject = (f'member {esc(who)}{" (" + esc(detail) + ")" if detail else ""}'
                   if last.member_id or not consumer_group else "the group")
        title = "Last group epoch bump" if consumer_group else "Last rebalance"
        head = (f'<p class="why"><strong>{title}</strong> at {esc(ms_time(last.time_ms))} '
                f'({esc(ago(last.time_ms, now_ms))}), to {esc(gen)}: {subject} {esc(verb)}'
                f'{": " + esc(last.reason) if last.reason else ""}.</p>')
    events = list(reversed(why.rebalances))
    rows = [[ms_time(e.time_ms), e.generation, e.kind, e.member_id or "-", e.client_id or "-",
             e.host or "-", e.reason or "-"] for e in events]
    return Markup(f'<div id="rebalance-why">{head}' + table(
        ["Time", word.capitalize(), "Event", "Member", "Client id", "Host", "Reason"], rows,
        table_id="rebalances", empty="no rebalance events") + "</div>")


def render_group(v: GroupView, *, refresh_s: int = 0) -> str:
    node, host, port = v.coordinator
    consumer = v.group_type == "consumer"
    facts: dict[str, object] = {
        "Group": v.group_id, "Type": "consumer (KIP-848)" if consumer else "classic",
        "State": v.state or "-", "Protocol type": v.protocol_type or "-",
        "Assignor": v.protocol or "-"}
    if consumer:
        facts["Group epoch"] = v.group_epoch if v.group_epoch is not None else "-"
        facts["Assignment epoch"] = (v.assignment_epoch if v.assignment_epoch is not None
                                     else "-")
    facts.update({"Coordinator": f"broker {node} ({host}:{port})", "Members": len(v.members),
                  "Total lag": sum(o.lag or 0 for o in v.offsets)})
    info = definition_list(facts)
    members = _members(v)
    offsets = table(["Topic", "Partition", "Committed offset", "Log end (HW)", "Lag", "Owner"],
                    [[link(url("/topic", name=o.topic), o.topic), o.partition,
                      o.committed if o.committed >= 0 else "-",
                      o.log_end if o.log_end >= 0 else "?",
                      o.lag if o.lag is not None else "-", o.owner] for o in v.offsets],
                    row_classes=["lagging" if (o.lag or 0) > 0 else "" for o in v.offsets],
                    table_id="offsets", empty="no committed offsets")
    if v.why.value is None:
        why = Markup(f'<p class="error" id="why-unavailable">why unavailable: '
                     f'{esc(v.why.unavailable)}</p>')
    else:
        why = rebalance_why(v.why.value, v.now_ms, consumer_group=consumer)
    heading = "Why its group epoch last moved" if consumer else "Why it last rebalanced"
    body = Markup(info + Markup(f"<h2>{heading}</h2>") + why
                  + Markup("<h2>Members</h2>") + members
                  + Markup("<h2>Offsets and lag</h2>") + offsets)
    return page(f"Group {v.group_id}", body, refresh_s=refresh_s)


__all__ = ["reconciliation", "rebalance_why", "render_group", "render_groups"]
