"""Leader elections asked for by an admin (ElectLeaders) or by the controller's
own leader-imbalance check (Kafka's processReplicaLeaderElection and
checkAndTriggerAutoLeaderRebalance).

Preferred: the first assigned replica leads if it is live and in the ISR (ISR
unchanged, leader epoch + 1). Unclean: only for partitions without a live
leader; the first live ISR member in assignment order, else the first live
replica with ISR = [it] (may lose data, by request). Per partition, first
failure wins:

    partition unknown                        -> UNKNOWN_TOPIC_OR_PARTITION
    topic queued for deletion                -> INVALID_TOPIC_EXCEPTION
    preferred already leads / leader is live -> ELECTION_NOT_NEEDED
    no eligible replica                      -> PREFERRED_LEADER_NOT_AVAILABLE /
                                                ELIGIBLE_LEADERS_NOT_AVAILABLE

Auto rebalance, every leader.imbalance.check.interval.seconds: per preferred
broker, the share of its preferred partitions led by someone else; above
leader.imbalance.per.broker.percentage, a preferred election for those of
them whose preferred replica can lead (partitions being reassigned excepted).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from controller.context import TopicPartition
from controller.events import ErrorResult
from controller.partition_state_machine import PartitionState, offline_leader
from controller.zkdata import NO_LEADER, LeaderIsr
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from controller.controller_ops import ControllerOps

log = logging.getLogger("pybroker.controller")

PREFERRED, UNCLEAN = 0, 1


def preferred_leader(replicas: list[int], isr: tuple[int, ...], live: set[int]) -> int | None:
    """Kafka's preferredReplicaPartitionLeaderElection."""
    if replicas and replicas[0] in live and replicas[0] in isr:
        return replicas[0]
    return None


async def elect(c: ControllerOps, parts: list[TopicPartition] | None, election_type: int
                ) -> dict[TopicPartition, ErrorResult]:
    ctx = c.ctx
    wanted = ctx.all_partitions() if parts is None else parts
    live = set(ctx.live) - ctx.shutting_down
    out: dict[TopicPartition, ErrorResult] = {}
    changes: dict[TopicPartition, LeaderIsr] = {}
    started = time.monotonic()                    # metrics: ControllerStats
    unclean: set[TopicPartition] = set()
    for tp in wanted:
        s = ctx.states.get(tp)
        if s is None or not ctx.replicas(tp):
            out[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
        elif tp[0] in ctx.topics_to_delete:
            out[tp] = ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted"
        elif election_type == PREFERRED:
            replicas = ctx.replicas(tp)
            if s.leader == replicas[0]:
                out[tp] = ErrorCode.ELECTION_NOT_NEEDED, None
            elif (leader := preferred_leader(replicas, s.isr,
                                             live & ctx.online_brokers(tp))) is None:
                out[tp] = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                           f"Failed to elect leader for partition {tp[0]}-{tp[1]} under "
                           f"strategy PreferredReplicaPartitionLeaderElectionStrategy")
            else:
                changes[tp] = s.new_leader(leader, s.isr)
        else:
            if s.leader != NO_LEADER and ctx.is_replica_online(s.leader, tp):
                out[tp] = ErrorCode.ELECTION_NOT_NEEDED, None
            elif (chosen := offline_leader(ctx.replicas(tp), s.isr, live & ctx.online_brokers(tp),
                                           True)) is None:
                out[tp] = (ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                           f"Failed to elect leader for partition {tp[0]}-{tp[1]} under "
                           f"strategy OfflinePartitionLeaderElectionStrategy(true)")
            else:
                changes[tp] = s.new_leader(*chosen)
                if chosen[0] not in s.isr:
                    unclean.add(tp)
    await write_leaders(c, changes, out)
    c.stats.record_elections(sum(1 for tp in changes if out.get(tp, (1,))[0] == 0),
                             sum(1 for tp in unclean if out.get(tp, (1,))[0] == 0),
                             (time.monotonic() - started) * 1000)
    return out


async def write_leaders(c: ControllerOps, changes: dict[TopicPartition, LeaderIsr],
                        out: dict[TopicPartition, ErrorResult]) -> None:
    """Write new leaders (one pipelined batch); LeaderAndIsr to the live replicas,
    UpdateMetadata to every live broker."""
    ctx = c.ctx
    updated, failed = await c.store.update_partition_states(changes, ctx.epoch,
                                                           ctx.epoch_zk_version)
    batch = c.new_batch()
    for tp, s in updated.items():
        ctx.states[tp] = s
        c.set_partition_state(tp, PartitionState.ONLINE)
        batch.add_leader_and_isr(ctx.replicas(tp), tp)
        out[tp] = 0, None
    for tp in failed:
        out[tp] = ErrorCode.UNKNOWN_SERVER_ERROR, "The partition state changed concurrently."
    batch.send(c.channel)
    if updated:
        log.info("controller %d: %d leaders elected", c.broker_id, len(updated))


def imbalanced(c: ControllerOps, percentage: int) -> list[TopicPartition]:
    """The partitions a leader-imbalance check would move back to their preferred
    replica."""
    ctx = c.ctx
    by_preferred: dict[int, list[TopicPartition]] = {}
    for tp in ctx.all_partitions():
        if tp[0] in ctx.topics_to_delete or tp in ctx.reassigning or tp not in ctx.states:
            continue
        by_preferred.setdefault(ctx.replicas(tp)[0], []).append(tp)
    live = set(ctx.live) - ctx.shutting_down
    out: list[TopicPartition] = []
    for broker, parts in sorted(by_preferred.items()):
        off = [tp for tp in parts if ctx.states[tp].leader != broker]
        if len(off) / len(parts) > percentage / 100:
            out += [tp for tp in off
                    if preferred_leader(ctx.replicas(tp), ctx.states[tp].isr,
                                        live & ctx.online_brokers(tp)) is not None]
    return out


async def auto_rebalance(c: ControllerOps, percentage: int) -> None:
    parts = imbalanced(c, percentage)
    if parts:
        log.info("controller %d: leader imbalance; preferred election for %d partitions",
                 c.broker_id, len(parts))
        await elect(c, parts, PREFERRED)
