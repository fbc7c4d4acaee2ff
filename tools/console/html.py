"""HTML building for the console's pages: escaping, links, tables, the layout.

The one rule: every piece of text that comes from the cluster or the request
(topic names, group ids, client ids, hosts, keys, values, headers, error
messages, reasons) reaches the page through ``esc`` (text and attribute
values alike: ``html.escape`` with quotes), and every URL is built by ``url``
(query values percent-encoded) and then escaped. Helpers here take *text*
and escape it; they take *markup* only through parameters named ``*_html``,
which callers build from these helpers. A ``Markup`` string type marks what is
already safe so that ``cell`` and ``table`` escape everything else.

The layout: a header with the navigation, an optional ``<meta refresh>`` (the
``refresh`` query parameter, 2..600 s: auto-refresh without JavaScript), a
little inline CSS; no scripts, no external resources.
"""

from __future__ import annotations

import datetime as _dt
import html as _html
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import urlencode


class Markup(str):
    """A string that is already HTML (built by these helpers); never escaped again."""


def esc(value: object) -> Markup:
    """Text (or anything printable) as HTML text or attribute value; Markup passes."""
    if isinstance(value, Markup):
        return value
    return Markup(_html.escape(str(value), quote=True))


def url(path: str, **params: object) -> str:
    """``/topic?name=a%3Cb``: a path and query parameters (None values left out);
    the caller escapes it when placing it in an attribute (``link`` does)."""
    query = {k: str(v) for k, v in params.items() if v is not None}
    return path + ("?" + urlencode(query) if query else "")


def link(href: str, text: object, *, cls: str = "") -> Markup:
    klass = f' class="{esc(cls)}"' if cls else ""
    return Markup(f'<a href="{esc(href)}"{klass}>{esc(text)}</a>')


def tag(name: str, content: object, **attrs: object) -> Markup:
    """``<name attr="...">content</name>``; ``cls`` becomes ``class``."""
    rendered = "".join(f' {"class" if k == "cls" else k.replace("_", "-")}="{esc(v)}"'
                       for k, v in attrs.items() if v is not None and v != "")
    return Markup(f"<{name}{rendered}>{esc(content)}</{name}>")


def join(parts: Iterable[object], sep: str = "") -> Markup:
    return Markup(esc(sep).join(esc(p) for p in parts))


def ids(values: Iterable[int]) -> str:
    """[1, 2, 3] -> "1, 2, 3" (broker id lists as Kafka's tools print them)."""
    return ", ".join(str(v) for v in values) or "none"


def ms_time(epoch_ms: int) -> str:
    """Epoch ms -> "2026-11-25 23:01:02.345 UTC"; "-" for unknown (< 0)."""
    if epoch_ms is None or epoch_ms < 0:
        return "-"
    try:
        t = _dt.datetime.fromtimestamp(epoch_ms / 1000, tz=_dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return str(epoch_ms)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d} UTC"


def size(n: int) -> str:
    """Bytes as "1.5 MiB" (binary units); "?" for unknown (< 0)."""
    if n < 0:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def ago(epoch_ms: int, now_ms: int) -> str:
    """How long before ``now_ms``: "12.3 s ago"; "-" for unknown."""
    if epoch_ms is None or epoch_ms < 0:
        return "-"
    delta = max(0, now_ms - epoch_ms) / 1000
    if delta < 120:
        return f"{delta:.1f} s ago"
    if delta < 7200:
        return f"{delta / 60:.1f} min ago"
    return f"{delta / 3600:.1f} h ago"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], *,
          row_classes: Iterable[str] | None = None, table_id: str = "",
          empty: str = "none") -> Markup:
    """A table; each cell is text (escaped) or Markup; ``row_classes`` one per row."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    classes = iter(row_classes) if row_classes is not None else None
    body: list[str] = []
    for row in rows:
        klass = next(classes, "") if classes is not None else ""
        cls_attr = f' class="{esc(klass)}"' if klass else ""
        body.append(f"<tr{cls_attr}>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(headers)}" class="empty">{esc(empty)}</td></tr>')
    id_attr = f' id="{esc(table_id)}"' if table_id else ""
    return Markup(f"<table{id_attr}><thead><tr>{head}</tr></thead>"
                  f"<tbody>{''.join(body)}</tbody></table>")


def definition_list(items: Mapping[str, object]) -> Markup:
    return Markup("<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>"
                                   for k, v in items.items()) + "</dl>")


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#23313f;color:#fff;padding:8px 16px}
header a{color:#cfe3ff;margin-right:16px;text-decoration:none}
header .brand{font-weight:bold;color:#fff}
main{padding:12px 16px}
table{border-collapse:collapse;margin:8px 0 16px;background:#fff}
th,td{border:1px solid #ccd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5}
tr.urp td,tr.bad td{background:#ffe3e0}
tr.offline td{background:#f5c2bd}
tr.lagging td{background:#fff4d6}
td.empty{color:#888;font-style:italic}
.why{border-left:4px solid #d9822b;background:#fff8ef;padding:6px 12px;margin:8px 0}
.ok{border-left:4px solid #3c9a5f;background:#effaf2;padding:6px 12px;margin:8px 0}
.error{border-left:4px solid #c0392b;background:#fdecea;padding:6px 12px;margin:8px 0}
.muted{color:#777}
pre{margin:0;white-space:pre-wrap;word-break:break-all;max-width:60em}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}
dt{font-weight:bold} dd{margin:0}
form input{margin-right:8px}
"""

NAV = (("/", "Cluster"), ("/topics", "Topics"), ("/groups", "Consumer groups"),
       ("/messages", "Messages"))


def page(title: str, body_html: Markup, *, refresh_s: int = 0, status_note: str = "") -> str:
    """A whole document. ``refresh_s`` (0: none) adds a meta refresh."""
    meta = (f'<meta http-equiv="refresh" content="{int(refresh_s)}">'
            if refresh_s else "")
    nav = "".join(link(href, text) for href, text in NAV)
    note = f'<span class="muted">{esc(status_note)}</span>' if status_note else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)} · pybroker console</title>{meta}<style>{CSS}</style></head>"
            f"<body><header><span class=\"brand\">pybroker console</span> {nav}{note}</header>"
            f"<main><h1>{esc(title)}</h1>{body_html}</main></body></html>\n")


def refresh_param(value: str) -> int:
    """The ``refresh`` query parameter: seconds in 2..600, else 0 (off)."""
    try:
        seconds = int(value)
    except ValueError:
        return 0
    return seconds if 2 <= seconds <= 600 else 0


__all__ = ["Markup", "ago", "definition_list", "esc", "ids", "join", "link", "ms_time", "page",
           "refresh_param", "size", "table", "tag", "url"]
