"""A partition's page (``/partition?topic=T&p=N``): its state, and **why**.

Why the ISR is what it is (from the leader's ``PartitionWhy``):
* for each assigned replica outside the ISR, the leader's latest SHRINK of it:
  "Broker 3 left the ISR at <time> (<ago>): <reason>", with how far behind it
  was (ms since last caught up, messages) and the ISR after; when the leader
  has no such record (the replica left before this leader was elected) that is
  said instead, with what the leader knows now (its LEO, last fetch);
* the ISR changes this leader made, oldest first (a table).

Why the HW is where it is: the HW is the smallest LEO in the ISR. When it
equals the leader's LEO nothing holds it back; otherwise each replica in
``hw_held_by`` is named with its LEO against the leader's and how many
messages that is. A replica table gives every replica's LEO, lag, last
caught-up and last fetch times.

Without the why facts the page says "why unavailable: <reason>" and still
shows what Metadata and ListOffsets tell.
"""

from __future__ import annotations

from protocol.why_model import SHRINK, IsrChange, PartitionWhy
from tools.console.html import (Markup, ago, definition_list, esc, ids, link, ms_time, page,
                                size, table, url)
from tools.console.model import PartitionView
from tools.console.pages_topics import offset, replica_leos


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _latest_shrink(why: PartitionWhy, replica: int) -> IsrChange | None:
    found = None
    for change in why.isr_changes:          # oldest first: the last match is the latest
        if change.replica == replica and change.kind == SHRINK:
            found = change
    return found


def isr_why(why: PartitionWhy, now_ms: int) -> Markup:
    """The "why the ISR is what it is" paragraphs (id="isr-why")."""
    assigned = [r.broker_id for r in why.replicas] or list(why.isr)
    out_of_isr = [b for b in assigned if b not in why.isr]
    parts: list[str] = []
    if not out_of_isr:
        parts.append(f'<p class="ok">Every assigned replica ({esc(ids(assigned))}) is in '
                     'the ISR.</p>')
    progress = {r.broker_id: r for r in why.replicas}
    for b in out_of_isr:
        shrink = _latest_shrink(why, b)
        if shrink is None:
            rp = progress.get(b)
            known = (f" The leader last saw it fetch {esc(ago(rp.last_fetch_ms, now_ms))}, at "
                     f"offset {esc(offset(rp.log_end_offset))} (leader LEO "
                     f"{esc(offset(why.log_end_offset))})." if rp is not None else "")
            parts.append(f'<p class="why">Broker {esc(b)} is not in the ISR; it left before '
                         f'broker {esc(why.leader)} became leader (no record of why).{known}</p>')
            continue
        behind = [f"{shrink.lag_ms:,} ms since it was last caught up"] if shrink.lag_ms >= 0 else []
        if shrink.lag_messages >= 0:
            behind.append(f"{_plural(shrink.lag_messages, 'message')} behind the leader")
        parts.append(
            f'<p class="why"><strong>Broker {esc(b)} left the ISR</strong> at '
            f'{esc(ms_time(shrink.time_ms))} ({esc(ago(shrink.time_ms, now_ms))}): '
            f'{esc(shrink.reason)}. When it left: '
            f'{esc(", ".join(behind) or "lag unknown")}; the ISR became '
            f'{esc(ids(shrink.isr_after))}.</p>')
    return Markup('<div id="isr-why">' + "".join(parts) + "</div>")


def hw_why(why: PartitionWhy) -> Markup:
    """The "why the HW is where it is" paragraphs (id="hw-why")."""
    hw, leo = why.high_watermark, why.log_end_offset
    if hw >= leo or not why.hw_held_by:
        text = (f'<p class="ok">The high watermark ({esc(offset(hw))}) is at the leader\'s log '
                f'end offset ({esc(offset(leo))}): every ISR replica has every message.</p>')
        if hw < leo:
            text = (f'<p class="why">The high watermark ({esc(offset(hw))}) is below the leader\'s '
                    f'LEO ({esc(offset(leo))}); the leader names no replica holding it back '
                    f'(it advances on the next follower fetch).</p>')
        return Markup(f'<div id="hw-why">{text}</div>')
    progress = {r.broker_id: r for r in why.replicas}
    parts = [f'<p class="why">The high watermark is {esc(offset(hw))}, below the leader\'s LEO '
             f'{esc(offset(leo))}: it is the smallest LEO in the ISR '
             f'({esc(ids(why.isr))}).</p><ul>']
    for b in why.hw_held_by:
        rp = progress.get(b)
        their = rp.log_end_offset if rp is not None else hw
        parts.append(f"<li><strong>Broker {esc(b)} holds it back</strong>: its LEO "
                     f"{esc(offset(their))} vs the leader's {esc(offset(leo))} "
                     f"({esc(_plural(max(0, leo - their), 'message'))} behind).</li>")
    parts.append("</ul>")
    return Markup('<div id="hw-why">' + "".join(parts) + "</div>")


def replica_table(why: PartitionWhy, now_ms: int) -> Markup:
    rows, classes = [], []
    for r in why.replicas:
        lag = why.log_end_offset - r.log_end_offset if r.log_end_offset >= 0 else -1
        role = "leader" if r.broker_id == why.leader else "follower"
        rows.append([r.broker_id, role, "yes" if r.in_isr else "no", offset(r.log_end_offset),
                     offset(lag),
                     f"{ms_time(r.last_caught_up_ms)} ({ago(r.last_caught_up_ms, now_ms)})",
                     f"{ms_time(r.last_fetch_ms)} ({ago(r.last_fetch_ms, now_ms)})"
                     if r.last_fetch_ms >= 0 else "-",
                     "holds the HW back" if r.broker_id in why.hw_held_by else "-"])
        classes.append("" if r.in_isr else "urp")
    return table(["Broker", "Role", "In ISR", "LEO", "Behind leader (messages)",
                  "Last caught up", "Last fetch", "HW"], rows, row_classes=classes,
                 table_id="replicas")


def changes_table(why: PartitionWhy) -> Markup:
    return table(["Time", "Change", "Replica", "Reason", "Behind (ms)", "Behind (messages)",
                  "ISR after"],
                 [[ms_time(c.time_ms), c.kind, c.replica, c.reason,
                   f"{c.lag_ms:,}" if c.lag_ms >= 0 else "-",
                   f"{c.lag_messages:,}" if c.lag_messages >= 0 else "-", ids(c.isr_after)]
                  for c in why.isr_changes],
                 row_classes=["urp" if c.kind == SHRINK else "" for c in why.isr_changes],
                 table_id="isr-changes", empty="no ISR change since this leader was elected")


def render_partition(v: PartitionView, *, refresh_s: int = 0) -> str:
    row = v.row
    missing = [r for r in row.replicas if r not in row.isr]
    state = definition_list({
        "Topic": v.topic, "Partition": row.partition,
        "Leader": row.leader if row.leader >= 0 else "none (offline)",
        "Leader epoch": row.leader_epoch, "Replicas": ids(row.replicas), "ISR": ids(row.isr),
        "Out of ISR": ids(missing) if missing else "-",
        "Log start offset": offset(row.log_start_offset),
        "High watermark": offset(row.high_watermark),
        "Leader LEO": offset(row.log_end_offset), "LEO per replica": replica_leos(row),
        "Size on disk per replica": ", ".join(
            f"{r}: {size(v.replica_bytes[r]) if r in v.replica_bytes else '?'}"
            for r in row.replicas),
    })
    refresh = link(url("/partition", topic=v.topic, p=row.partition, refresh=5), "auto-refresh")
    links = Markup(f'<p>{link(url("/topic", name=v.topic), "back to the topic")} · '
                   f'{link(url("/messages", topic=v.topic, p=row.partition), "browse messages")}'
                   f' · {refresh}</p>')
    body = [links, state]
    if row.under_replicated:
        body.append(Markup(f'<p class="why">Under-replicated: {esc(ids(missing))} '
                           f'not in the ISR.</p>'))
    why = v.why.value
    if why is None:
        body.append(Markup(f'<p class="error" id="why-unavailable">why unavailable: '
                           f'{esc(v.why.unavailable)}</p>'))
    else:
        body += [Markup("<h2>Why the ISR is what it is</h2>"), isr_why(why, v.now_ms),
                 Markup("<h2>Why the high watermark is where it is</h2>"), hw_why(why),
                 Markup("<h2>Replicas (as the leader sees them)</h2>"),
                 replica_table(why, v.now_ms),
                 Markup("<h2>ISR changes</h2>"), changes_table(why)]
    return page(f"Partition {v.topic}-{row.partition}", Markup("".join(body)), refresh_s=refresh_s)


__all__ = ["changes_table", "hw_why", "isr_why", "render_partition", "replica_table"]
