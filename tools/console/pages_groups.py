"""The consumer groups list (``/groups``) and a group's page (``/group?id=G``).

The group page: state, protocol, coordinator; members (member id, instance id,
client id, host, assigned partitions); per partition the committed offset,
the log end (HW) and the lag (HW - committed), lagging rows highlighted; and
**why it last rebalanced**: the coordinator's rebalance events (GroupWhy),
the latest one spelled out ("member X (client c, host h) timed out: <reason>")
and all of them in a table, newest first.
"""

from __future__ import annotations

from client.why_model import GroupWhy
from tools.console.html import Markup, ago, definition_list, esc, link, ms_time, page, table, url
from tools.console.model import GroupSummary, GroupView

KIND_TEXT = {"join": "joined", "leave": "left", "timeout": "timed out",
             "static-replace": "replaced a static member", "metadata-change":
             "changed its subscription", "new-group": "created the group", "deleted": "deleted"}


def render_groups(groups: list[GroupSummary], *, refresh_s: int = 0) -> str:
    rows = [[link(url("/group", id=g.group_id), g.group_id), g.state or "-"] for g in groups]
    body = table(["Group", "State"], rows, table_id="groups", empty="no consumer groups")
    return page("Consumer groups", body, refresh_s=refresh_s)


def _assignment(tps: tuple[tuple[str, int], ...]) -> str:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return "; ".join(f"{t}: {', '.join(str(p) for p in sorted(ps))}"
                     for t, ps in sorted(by_topic.items())) or "-"


def rebalance_why(why: GroupWhy, now_ms: int) -> Markup:
    """The "why it last rebalanced" paragraph and table (id="rebalance-why")."""
    if not why.rebalances:
        head = '<p class="ok">No rebalance recorded since this coordinator took the group.</p>'
    else:
        last = why.rebalances[-1]
        who = last.member_id or "a member"
        detail = ", ".join(x for x in (f"client {last.client_id}" if last.client_id else "",
                                       f"host {last.host}" if last.host else "") if x)
        verb = KIND_TEXT.get(last.kind, last.kind)
        gen = (f"generation {last.generation}" if last.generation >= 0
               else "a rebalance that did not complete")
        head = (f'<p class="why"><strong>Last rebalance</strong> at {esc(ms_time(last.time_ms))} '
                f'({esc(ago(last.time_ms, now_ms))}), to {esc(gen)}: member {esc(who)}'
                f'{" (" + esc(detail) + ")" if detail else ""} {esc(verb)}'
                f'{": " + esc(last.reason) if last.reason else ""}.</p>')
    events = list(reversed(why.rebalances))
    rows = [[ms_time(e.time_ms), e.generation, e.kind, e.member_id or "-", e.client_id or "-",
             e.host or "-", e.reason or "-"] for e in events]
    return Markup(f'<div id="rebalance-why">{head}' + table(
        ["Time", "Generation", "Event", "Member", "Client id", "Host", "Reason"], rows,
        table_id="rebalances", empty="no rebalance events") + "</div>")


def render_group(v: GroupView, *, refresh_s: int = 0) -> str:
    node, host, port = v.coordinator
    info = definition_list({"Group": v.group_id, "State": v.state or "-",
                            "Protocol type": v.protocol_type or "-",
                            "Assignor": v.protocol or "-",
                            "Coordinator": f"broker {node} ({host}:{port})",
                            "Members": len(v.members),
                            "Total lag": sum(o.lag or 0 for o in v.offsets)})
    members = table(["Member id", "Instance id", "Client id", "Host", "Assignment"],
                    [[m.member_id, m.instance_id or "-", m.client_id, m.host,
                      _assignment(m.assignment)] for m in v.members],
                    table_id="members", empty="no members")
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
        why = rebalance_why(v.why.value, v.now_ms)
    body = Markup(info + Markup("<h2>Why it last rebalanced</h2>") + why
                  + Markup("<h2>Members</h2>") + members
                  + Markup("<h2>Offsets and lag</h2>") + offsets)
    return page(f"Group {v.group_id}", body, refresh_s=refresh_s)


__all__ = ["rebalance_why", "render_group", "render_groups"]
