"""The human text of an ISR change's reason: one function per kind of fact, so that
the words an operator reads (in the console, in DescribeWhy) are written once and
tested. The groups' reasons are coordinator/group/why/reasons.py.

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
