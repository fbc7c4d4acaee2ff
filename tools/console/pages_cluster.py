"""The cluster overview page (``/``): cluster id, controller, counts, and one
row per broker with its ZooKeeper session state, controller flag and uptime
from the broker's own BrokerStatus (the why facts); a broker whose status is
unavailable says why in its row.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from tools.console.html import Markup, definition_list, esc, link, page, size, table, url
from tools.console.model import BrokerRow, Overview


def _uptime(ms: int) -> str:
    if ms < 0:
        return "-"
    s = ms // 1000
    parts = [(s // 86400, "d"), (s % 86400 // 3600, "h"), (s % 3600 // 60, "m"), (s % 60, "s")]
    while len(parts) > 1 and parts[0][0] == 0:
        parts.pop(0)
    return " ".join(f"{n}{unit}" for n, unit in parts[:2])


def log_dirs_cell(b: BrokerRow) -> Markup:
    """Each log dir: path, online or its error, replicas, bytes, free space."""
    if b.log_dirs_error:
        return Markup(f'<span class="muted">unknown: {esc(b.log_dirs_error)}</span>')
    lines = []
    for d in b.log_dirs:
        if d.error:
            lines.append(f'<div class="offline-dir"><strong>{esc(d.path)}</strong>: offline '
                         f'({esc(ErrorCode.from_code(d.error).name)})</div>')
            continue
        used = sum(r.size for r in d.replicas.values())
        free = (f", {size(d.usable_bytes)} free of {size(d.total_bytes)}"
                if d.total_bytes >= 0 else "")
        lines.append(f"<div>{esc(d.path)}: {esc(len(d.replicas))} replica(s), "
                     f"{esc(size(used))}{esc(free)}</div>")
    return Markup("".join(lines) or '<span class="muted">none</span>')


def render_overview(o: Overview, *, refresh_s: int = 0) -> str:
    summary = definition_list({
        "Cluster id": o.cluster_id or "-",
        "Controller": f"broker {o.controller_id}" if o.controller_id >= 0 else "none",
        "Brokers": len(o.brokers),
        "Topics": o.topics,
        "Partitions": o.partitions,
        "Under-replicated partitions": o.under_replicated,
        "Offline partitions": o.offline,
    })
    rows, classes = [], []
    for b in o.brokers:
        st = b.status.value
        zk: str | Markup
        if st is None:
            zk, ctl, up = Markup(f'<span class="muted">why unavailable: '
                                 f'{esc(b.status.unavailable)}</span>'), "-", "-"
        else:
            zk = st.zk_session_state
            ctl = "yes" if st.is_controller else "no"
            up = _uptime(st.uptime_ms)
        is_controller = b.broker_id == o.controller_id
        rows.append([b.broker_id, f"{b.host}:{b.port}", b.rack or "-",
                     "yes" if is_controller else "no", zk, ctl, up, log_dirs_cell(b)])
        bad_dir = any(d.error for d in b.log_dirs)
        classes.append("bad" if bad_dir or (st is not None and st.zk_session_state != "CONNECTED")
                       else "")
    brokers = table(["Broker", "Address", "Rack", "Controller (metadata)",
                     "ZooKeeper session", "Controller (broker says)", "Uptime", "Log dirs"],
                    rows, row_classes=classes, table_id="brokers", empty="no brokers")
    urp = (Markup(f'<p class="why">{esc(o.under_replicated)} partition(s) under-replicated: '
                  f'{link(url("/topics"), "see the topics")}</p>')
           if o.under_replicated else Markup('<p class="ok">Every partition has its full ISR.</p>'))
    body = Markup(summary + urp + Markup("<h2>Brokers</h2>") + brokers)
    return page("Cluster", body, refresh_s=refresh_s)


__all__ = ["render_overview"]
