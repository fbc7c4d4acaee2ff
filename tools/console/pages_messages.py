"""The message browser (``/messages?topic=T&p=N&offset=O&n=20`` or ``&ts=...``).

A form (topic, partition, from offset or from a time, how many) and the
messages: offset, timestamp, key, value, headers, each decoded by decode.py
(text, pretty JSON, or hex, with its kind shown). Without an offset or a time
the last ``n`` messages before the high watermark are shown.

``parse_browse_query`` turns the query string into a ``BrowseQuery``; a bad
value raises ``ValueError`` naming the parameter and the value (a 400 page).
Times: epoch milliseconds, or an ISO 8601 date-time (UTC when no offset is
given), e.g. ``2026-11-25T23:00:00``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping

from tools.console.decode import describe_bytes
from tools.console.html import Markup, esc, link, ms_time, page, table, url
from tools.console.model import BrowseQuery, BrowseView

MAX_COUNT = 500


def _int(query: Mapping[str, str], name: str, lo: int, hi: int) -> int | None:
    raw = query.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if not lo <= value <= hi:
        raise ValueError(f"{name}={raw!r} is out of range ({lo}..{hi})")
    return value


def parse_time(raw: str) -> int:
    """Epoch ms or ISO 8601 (naive = UTC) -> epoch ms; ValueError naming the value."""
    raw = raw.strip()
    if raw.lstrip("-").isdigit():
        return int(raw)
    try:
        t = _dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"ts={raw!r} is neither epoch milliseconds nor an ISO 8601 "
                         "date-time") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return int(t.timestamp() * 1000)


def parse_browse_query(query: Mapping[str, str]) -> BrowseQuery:
    ts_raw = query.get("ts", "").strip()
    return BrowseQuery(
        topic=query.get("topic", "").strip(),
        partition=_int(query, "p", 0, 2**31 - 1) or 0,
        offset=_int(query, "offset", 0, 2**63 - 1),
        timestamp_ms=parse_time(ts_raw) if ts_raw else None,
        count=_int(query, "n", 1, MAX_COUNT) or 20)


def _form(q: BrowseQuery) -> Markup:
    def field(name: str, label: str, value: object, size: int) -> str:
        return (f'<label>{esc(label)} <input name="{esc(name)}" value="{esc(value)}" '
                f'size="{size}"></label>')
    ts = "" if q.timestamp_ms is None else q.timestamp_ms
    off = "" if q.offset is None else q.offset
    return Markup('<form method="get" action="/messages" id="browse">'
                  + field("topic", "Topic", q.topic, 24) + field("p", "Partition", q.partition, 4)
                  + field("offset", "From offset", off, 10)
                  + field("ts", "or from time (ms or ISO 8601)", ts, 22)
                  + field("n", "Messages", q.count, 4)
                  + '<input type="submit" value="Show"></form>')


def _bytes_cell(data: bytes | None) -> Markup:
    kind, text = describe_bytes(data)
    if kind == "null":
        return Markup('<span class="muted">null</span>')
    return Markup(f'<span class="muted">{esc(kind)}</span>'
                  f'<pre class="{esc(kind)}">{esc(text)}</pre>')


def _headers_cell(headers: list[tuple[str, bytes | None]]) -> Markup:
    if not headers:
        return Markup('<span class="muted">-</span>')
    return Markup("".join(f"<div><strong>{esc(k)}</strong>: {_bytes_cell(v)}</div>"
                          for k, v in headers))


def render_form_only(q: BrowseQuery, message: str = "") -> str:
    note = Markup(f'<p class="muted">{esc(message)}</p>') if message else Markup("")
    return page("Messages", Markup(_form(q) + note))


def render_messages(v: BrowseView) -> str:
    q = v.query
    nav = []
    if v.messages:
        last = v.messages[-1].offset
        nav.append(link(url("/messages", topic=q.topic, p=q.partition, offset=last + 1, n=q.count),
                        "next page"))
        first = v.messages[0].offset
        if first > max(0, v.log_start_offset):
            nav.append(link(url("/messages", topic=q.topic, p=q.partition,
                                offset=max(v.log_start_offset, first - q.count, 0), n=q.count),
                            "previous page"))
    info = Markup(
        f'<p>{link(url("/topic", name=q.topic), q.topic)}-{esc(q.partition)}: log start '
        f'{esc(v.log_start_offset)}, high watermark {esc(v.high_watermark)}; showing '
        f'{esc(len(v.messages))} message(s) from offset {esc(v.start_offset)}. '
        f'{esc(v.note)} {" · ".join(nav)}</p>')
    rows = [[m.offset, ms_time(m.timestamp), _bytes_cell(m.key), _bytes_cell(m.value),
             _headers_cell(m.headers)] for m in v.messages]
    body = Markup(_form(q) + info + table(["Offset", "Timestamp", "Key", "Value", "Headers"],
                                          rows, table_id="messages", empty="no messages there"))
    return page(f"Messages of {q.topic}-{q.partition}", body)


__all__ = ["parse_browse_query", "parse_time", "render_form_only", "render_messages"]
