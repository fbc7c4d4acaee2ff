"""Brokers restarted while no controller watched: a controller's failover finds the
live brokers leading partitions whose state predates their registration
(``restarted_leaders``) and handles each as a bounce (controller.py ``_on_failover``:
out of the live set for the failover's first batch, then joined through BrokerChange).
"""

from __future__ import annotations

from controller.context import ControllerContext, TopicPartition


def restarted_leaders(ctx: ControllerContext, changed_at: dict[TopicPartition, int]) -> set[int]:
    """Live brokers leading a partition whose state znode was last written before the
    broker's current registration (zxid of the state < its broker epoch, the
    registration's czxid), where another live ISR member could lead instead.

    Every leader change writes the state, and a broker restarts by registering anew;
    so such a leader restarted after it was made leader and no controller handled it:
    the restart fell between two controllers (a former controller, or a broker whose
    registration came just before the new controller read the brokers). Left alone it
    would lead again at its old leader epoch, as if it had not restarted, and the
    coordinators and followers that keyed state to that epoch with the old process
    would not learn of the change (a transaction seen to stall so). Kafka's ZooKeeper
    controller has the same gap; its brokers exit instead of re-registering while the
    old session lives, which makes it rarer. A partition without another live ISR
    member (one replica, one broker) is left as it is: there is no one else to lead."""
    out: set[int] = set()
    for tp, s in ctx.states.items():
        leader = s.leader
        info = ctx.live.get(leader)
        if info is None or tp not in changed_at or changed_at[tp] >= info.epoch:
            continue
        if any(b != leader and b in ctx.live for b in s.isr):
            out.add(leader)
    return out


__all__ = ["restarted_leaders"]
