"""The human text of a reason: one function per kind of fact, so that the words an
operator reads (in the console, in DescribeWhy) are written once and tested.

Numbers are written with thousands separators ("31,002 ms"); a -1 means "unknown"
and is left out of the sentence rather than printed.
"""

from __future__ import annotations


def _ms(ms: int) -> str:
    return f"{ms:,} ms"


def shrink_reason(*, lag_ms: int, max_lag_ms: int, since_fetch_ms: int,
                  lag_messages: int) -> str:
    """A leader's own shrink (replica.lag.time.max.ms passed without a catch-up).

    ``since_fetch_ms`` -1: the follower never fetched since this broker became
    leader; that, or a fetch long ago, says "stopped fetching" (dead, paused,
    cut off) rather than "fetching but too slow"."""
    text = f"not caught up for {_ms(lag_ms)} (replica.lag.time.max.ms={max_lag_ms})"
    if since_fetch_ms < 0:
        text += "; no fetch from it since this broker became leader"
    elif since_fetch_ms > max_lag_ms:
        text += f"; no fetch from it for {_ms(since_fetch_ms)}"
    else:
        text += f"; fetching (last fetch {_ms(since_fetch_ms)} ago) but slower than the log grows"
    if lag_messages >= 0:
        text += f"; {lag_messages:,} messages behind"
    return text


def expand_reason(*, replica_leo: int, high_watermark: int) -> str:
    """A leader's own expand: the follower's LEO reached the high watermark."""
    return (f"caught up: its log end offset {replica_leo:,} reached the high watermark "
            f"{high_watermark:,}")


def controller_shrink_reason(*, leader_epoch: int, since_fetch_ms: int) -> str:
    """The controller removed the replica (LeaderAndIsr): in ZooKeeper mode it does
    that when the broker went offline (its session expired), shut down, or lost the
    log dir holding the replica."""
    text = (f"removed by the controller (LeaderAndIsr, leader epoch {leader_epoch}): "
            "its broker went offline, shut down or lost the log dir")
    if since_fetch_ms >= 0:
        text += f"; last fetch from it {_ms(since_fetch_ms)} ago"
    return text


def controller_expand_reason(*, leader_epoch: int) -> str:
    return f"added by the controller (LeaderAndIsr, leader epoch {leader_epoch})"


def committed_without_proposal(kind: str) -> str:
    """An AlterPartition answer changed a replica this leader had not proposed."""
    return f"{'removed' if kind == 'shrink' else 'added'} by the controller's AlterPartition answer"


# ---- groups -----------------------------------------------------------------------------

def join_reason(client_reason: str | None, *, first: bool) -> str:
    base = "first member of a new group" if first else "a new member joined"
    return f"{base} (client: {client_reason})" if client_reason else base


def rejoin_reason(client_reason: str | None, *, metadata_changed: bool, leader: bool) -> str:
    if metadata_changed:
        base = "a member rejoined with changed subscription / protocol metadata"
    elif leader:
        base = "the group leader rejoined (it asks for a new assignment)"
    else:
        base = "a member rejoined"
    return f"{base} (client: {client_reason})" if client_reason else base


def leave_reason(client_reason: str | None) -> str:
    """LeaveGroup; the KIP-800 Reason (v5+) when the client sent one."""
    return f"left the group: {client_reason}" if client_reason else "left the group (no reason given)"


def timeout_reason(session_timeout_ms: int) -> str:
    return f"no heartbeat within session.timeout.ms={session_timeout_ms:,}"


def rejoin_timeout_reason(rebalance_timeout_ms: int) -> str:
    return (f"did not rejoin within the rebalance timeout "
            f"(max.poll.interval.ms={rebalance_timeout_ms:,})")


def sync_timeout_reason(rebalance_timeout_ms: int) -> str:
    return f"did not send SyncGroup within the rebalance timeout ({_ms(rebalance_timeout_ms)})"


def static_replace_reason(instance_id: str, old_member_id: str) -> str:
    return (f"static member group.instance.id={instance_id} rejoined with a new member id "
            f"(replacing {old_member_id})")


# ---- consumer groups (KIP-848): what bumped the group epoch -------------------------------

def _names(names: list[str] | tuple[str, ...]) -> str:
    return ", ".join(sorted(names)) or "nothing"


def subscription_text(topics: tuple[str, ...] | list[str], regex: str | None) -> str:
    parts = [f"topics {_names(topics)}"] if topics or not regex else []
    if regex:
        parts.append(f"regex {regex!r}")
    return " and ".join(parts)


def member_joined_reason(topics: tuple[str, ...] | list[str], regex: str | None,
                         instance_id: str | None) -> str:
    static = f" (static member group.instance.id={instance_id})" if instance_id else ""
    return f"subscribed to {subscription_text(topics, regex)}{static}"


def member_left_reason() -> str:
    """A heartbeat with member epoch -1. (A static member's -2 keeps it in the
    group until its session times out: no bump, a fence later.)"""
    return "sent a heartbeat with member epoch -1 (leave the group)"


def member_fenced_reason(cause: str, timeout_ms: int | None) -> str:
    """``cause``: "session-timeout" / "rebalance-timeout" (or with a space, as the
    coordinator's timers name them) / anything else (quoted)."""
    cause = cause.replace(" ", "-")
    if cause == "session-timeout":
        return ("no heartbeat within the session timeout"
                + (f" (group.consumer.session.timeout.ms={timeout_ms:,})" if timeout_ms else ""))
    if cause == "rebalance-timeout":
        return ("did not revoke its partitions within the rebalance timeout"
                + (f" ({_ms(timeout_ms)})" if timeout_ms else ""))
    return f"fenced: {cause}"


def subscription_changed_reason(changes: list[str]) -> str:
    return "; ".join(changes) if changes else "subscription changed"


def metadata_changed_reason(changes: list[str]) -> str:
    return ("the subscribed topics changed: " + "; ".join(changes) if changes
            else "the subscribed topics' metadata changed")
