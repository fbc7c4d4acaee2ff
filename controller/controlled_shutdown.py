"""ControlledShutdown (Kafka's KafkaController.doControlledShutdown): a broker about
to stop asks the controller to move its leaderships away first.

``handle`` runs inside Controller.process, as every event handler: for each
partition of the broker with at least two replicas, a leader moves to the first
live ISR member not shutting down (partition_state_machine.controlled_shutdown_leader;
the fenced ZooKeeper write first, then the context, then LeaderAndIsr to the other
replicas), a follower gets StopReplica (no delete) and leaves the ISR. The answer is
the partitions it still leads (none when every move succeeded): the broker retries
while any remain. Not the active controller: NotControllerError; a broker not live
or an older broker epoch: an error, nothing changed.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from controller import events as ev
from controller.context import TopicPartition
from controller.errors import NotControllerError, StaleBrokerEpochError
from controller.partition_state_machine import controlled_shutdown_leader
from controller.zkdata import LeaderIsr

if TYPE_CHECKING:
    from controller.controller_ops import ControllerOps

log = logging.getLogger("pybroker.controller")


async def handle(controller: ControllerOps, e: ev.ControlledShutdown) -> None:
    if not controller.is_active:
        e.result.set_exception(NotControllerError())
        return
    ctx = controller.ctx
    if e.broker_id not in ctx.live:
        e.result.set_exception(KeyError(f"broker {e.broker_id} is not live"))
        return
    if e.broker_epoch != -1 and e.broker_epoch < ctx.live[e.broker_id].epoch:
        e.result.set_exception(StaleBrokerEpochError(
            f"broker {e.broker_id}: epoch {e.broker_epoch} is older than "
            f"{ctx.live[e.broker_id].epoch}"))
        return
    ctx.shutting_down.add(e.broker_id)
    live = set(ctx.live)
    started = time.monotonic()                # metrics: ControllerStats
    moves: dict[TopicPartition, LeaderIsr] = {}
    followers: list[TopicPartition] = []
    for tp in ctx.partitions_on(e.broker_id):
        s = ctx.states.get(tp)
        if s is None or len(ctx.replicas(tp)) < 2:
            continue
        if s.leader == e.broker_id:
            chosen = controlled_shutdown_leader(ctx.replicas(tp), s.isr, live,
                                                ctx.shutting_down)
            if chosen is not None:
                moves[tp] = s.new_leader(*chosen)
        else:
            followers.append(tp)
    batch = controller.new_batch()
    updated, _ = await controller.store.update_partition_states(moves, ctx.epoch,
                                                          ctx.epoch_zk_version)
    for tp, s in updated.items():
        ctx.states[tp] = s
        batch.add_leader_and_isr([b for b in ctx.replicas(tp) if b not in ctx.shutting_down],
                                 tp)
    controller.stats.record_elections(len(updated), 0, (time.monotonic() - started) * 1000)
    for tp in followers:
        batch.add_stop_replica(e.broker_id, tp, delete=False)
    await controller.remove_from_isr(followers, {e.broker_id}, batch)
    batch.send(controller.channel)
    remaining = [tp for tp in ctx.partitions_on(e.broker_id)
                 if len(ctx.replicas(tp)) > 1 and tp in ctx.states
                 and ctx.states[tp].leader == e.broker_id]
    log.info("controlled shutdown of broker %d: %d partitions moved, %d remain",
             e.broker_id, len(updated), len(remaining))
    e.result.set_result(remaining)
