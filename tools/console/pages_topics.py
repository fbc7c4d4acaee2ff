"""The topics list (``/topics``) and a topic's page (``/topic?name=T``).

The list: partitions, replication factor, under-replicated and offline counts
(rows with either highlighted). The topic page: one row per partition with
leader, epoch, replicas, ISR, log start / HW / leader LEO, and each replica's
LEO as the leader sees it (from the why facts; "?" where unknown). A row is
highlighted when under-replicated (ISR smaller than the replica set) or
offline (no leader); each links to its partition page (pages_partition.py).
"""

from __future__ import annotations

from tools.console.html import Markup, esc, ids, link, page, table, url
from tools.console.model import PartitionRow, TopicSummary, TopicView


def render_topics(topics: list[TopicSummary], *, refresh_s: int = 0) -> str:
    rows, classes = [], []
    for t in topics:
        rows.append([link(url("/topic", name=t.name), t.name), "yes" if t.internal else "no",
                     t.partitions, t.replication_factor, t.under_replicated, t.offline,
                     t.error or "-"])
        classes.append("offline" if t.offline else "urp" if t.under_replicated else "")
    total_urp = sum(t.under_replicated for t in topics)
    head = (Markup(f'<p class="why">{esc(total_urp)} under-replicated partition(s), '
                   f'highlighted below.</p>') if total_urp else Markup(""))
    body = Markup(head + table(["Topic", "Internal", "Partitions", "Replication factor",
                                "Under-replicated", "Offline", "Error"], rows,
                               row_classes=classes, table_id="topics", empty="no topics"))
    return page("Topics", body, refresh_s=refresh_s)


def offset(value: int) -> str:
    return str(value) if value >= 0 else "?"


def replica_leos(row: PartitionRow) -> str:
    """"1: 120 (leader), 2: 118, 3: ?" in replica order."""
    parts = []
    for r in row.replicas:
        leo = row.replica_leo.get(r, row.log_end_offset if r == row.leader else -1)
        parts.append(f"{r}: {offset(leo)}" + (" (leader)" if r == row.leader else ""))
    return ", ".join(parts)


def partition_cells(topic: str, row: PartitionRow) -> list[object]:
    missing = [r for r in row.replicas if r not in row.isr]
    return [link(url("/partition", topic=topic, p=row.partition), row.partition),
            row.leader if row.leader >= 0 else "none", row.leader_epoch, ids(row.replicas),
            ids(row.isr), ids(missing) if missing else "-", offset(row.log_start_offset),
            offset(row.high_watermark), offset(row.log_end_offset), replica_leos(row),
            row.error or "-"]


PARTITION_HEADERS = ["Partition", "Leader", "Epoch", "Replicas", "ISR", "Out of ISR",
                     "Log start", "HW", "Leader LEO", "LEO per replica", "Error"]


def row_class(row: PartitionRow) -> str:
    return "offline" if row.offline else "urp" if row.under_replicated else ""


def render_topic(v: TopicView, *, refresh_s: int = 0) -> str:
    urp = [r for r in v.partitions if r.under_replicated]
    internal = " (internal topic)" if v.internal else ""
    head = Markup(f'<p>{esc(len(v.partitions))} partition(s){internal}'
                  f' · {link(url("/messages", topic=v.name), "browse messages")}</p>')
    if urp:
        head = Markup(head + f'<p class="why">Under-replicated: partition(s) '
                      f'{esc(ids(r.partition for r in urp))} (highlighted; open one to see '
                      'why).</p>')
    if v.error:
        head = Markup(head + f'<p class="error">{esc(v.error)}</p>')
    if v.why_note:
        head = Markup(head + f'<p class="muted">why unavailable: {esc(v.why_note)}</p>')
    cells = [partition_cells(v.name, r) for r in v.partitions]
    body = Markup(head + table(PARTITION_HEADERS, cells,
                               row_classes=[row_class(r) for r in v.partitions],
                               table_id="partitions", empty="no partitions"))
    return page(f"Topic {v.name}", body, refresh_s=refresh_s)


__all__ = ["PARTITION_HEADERS", "offset", "partition_cells", "render_topic", "render_topics",
           "replica_leos", "row_class"]
