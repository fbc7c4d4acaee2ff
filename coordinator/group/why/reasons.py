"""The human text of a group rebalance's reason (classic groups) and of what bumped
a consumer group's epoch (KIP-848): one function per kind of fact, so that the words
an operator reads (in the console, in DescribeWhy) are written once and tested.

Numbers are written with thousands separators ("6,000"); a -1 means "unknown" and is
left out of the sentence rather than printed.
"""

from __future__ import annotations


def _ms(ms: int) -> str:
    return f"{ms:,} ms"


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

def names_text(names: list[str] | tuple[str, ...]) -> str:
    return ", ".join(sorted(names)) or "nothing"


def subscription_text(topics: tuple[str, ...] | list[str], regex: str | None) -> str:
    parts = [f"topics {names_text(topics)}"] if topics or not regex else []
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
