"""Topic deletion (Kafka's TopicDeletionManager), run by the active controller.

  1. /admin/delete_topics/<t> appears: the topic is queued; UpdateMetadata to
     every live broker marks its partitions with leader -2 (LeaderDuringDelete),
     so brokers stop serving it; its partitions go Offline.
  2. StopReplica(delete=true) to every replica; replicas go
     ReplicaDeletionStarted. A replica on a dead broker, or one that answers
     with an error, is ReplicaDeletionIneligible and is retried when its broker
     registers again.
  3. When every replica answered without error: delete /brokers/topics/<t>
     (with its partition state znodes), /config/topics/<t> and the
     /admin/delete_topics/<t> marker (one fenced transaction); the topic
     leaves the context.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from controller import events as ev
from controller.partition_state_machine import PartitionState
from controller.replica_state_machine import ReplicaState

if TYPE_CHECKING:
    from controller.channel import StopReplicaCallback
    from controller.controller_ops import ControllerOps

log = logging.getLogger("pybroker.controller")
_R = ReplicaState


async def start_deletion(c: ControllerOps) -> None:
    ctx = c.ctx
    names = await c.store.topics_to_delete()
    for t in names:
        if t not in ctx.assignments:
            await c.store.remove_delete_marker(t)
    fresh = sorted(t for t in names if t in ctx.assignments and t not in ctx.topics_to_delete)
    if not fresh:
        return
    batch = c.new_batch()
    for t in fresh:
        ctx.topics_to_delete.add(t)
        pending = ctx.deletion_pending.setdefault(t, set())
        parts = ctx.partitions_of([t])
        batch.add_update_metadata(ctx.live, parts, deleting=True)
        for tp in parts:
            c.set_partition_state(tp, PartitionState.OFFLINE)
            for b in ctx.replicas(tp):
                pending.add((tp[1], b))
                _move(c, (t, tp[1], b), _R.OFFLINE)
                _move(c, (t, tp[1], b), _R.DELETION_STARTED)
                if b in ctx.live:
                    batch.add_stop_replica(b, tp, True, _result_callback(c, t, tp[1], b))
                else:
                    _move(c, (t, tp[1], b), _R.DELETION_INELIGIBLE)
        log.info("controller %d: deleting topic %s (%d replicas)", c.broker_id, t, len(pending))
    batch.send(c.channel)
    for t in fresh:
        if not ctx.deletion_pending.get(t):
            await _complete(c, t)


def resume_deletion(c: ControllerOps, brokers: set[int]) -> None:
    """Retry StopReplica(delete) for replicas on brokers that came back."""
    ctx = c.ctx
    batch = c.new_batch()
    for t in sorted(ctx.topics_to_delete):
        for p, b in sorted(ctx.deletion_pending.get(t, ())):
            if b in brokers:
                r = (t, p, b)
                if c.replica_states.get(r) is _R.DELETION_INELIGIBLE:
                    _move(c, r, _R.OFFLINE)
                    _move(c, r, _R.DELETION_STARTED)
                batch.add_stop_replica(b, (t, p), True, _result_callback(c, t, p, b))
    batch.send(c.channel)


async def stop_replica_result(c: ControllerOps, e: ev.StopReplicaResult) -> None:
    ctx = c.ctx
    pending = ctx.deletion_pending.get(e.topic)
    if pending is None or (e.partition, e.broker_id) not in pending:
        return
    r = (e.topic, e.partition, e.broker_id)
    if e.error != 0:
        if c.replica_states.get(r) is _R.DELETION_STARTED:
            _move(c, r, _R.DELETION_INELIGIBLE)
        if e.error != -1:
            log.warning("StopReplica(delete) of %s-%d on broker %d failed: error %d",
                        e.topic, e.partition, e.broker_id, e.error)
        return
    pending.discard((e.partition, e.broker_id))
    _move(c, r, _R.DELETION_SUCCESSFUL)
    if not pending:
        await _complete(c, e.topic)


async def _complete(c: ControllerOps, topic: str) -> None:
    ctx = c.ctx
    await c.store.delete_topic_znodes(topic, ctx.epoch_zk_version)
    for tp in ctx.partitions_of([topic]):
        c.set_partition_state(tp, PartitionState.OFFLINE)
        c.partition_states.move(tp, PartitionState.NON_EXISTENT)
        for b in ctx.replicas(tp):
            r = (topic, tp[1], b)
            if c.replica_states.get(r) is _R.DELETION_SUCCESSFUL:
                c.replica_states.move(r, _R.NON_EXISTENT)
    ctx.remove_topic(topic)
    c.drop_topic_watch(topic)
    log.info("controller %d: topic %s deleted", c.broker_id, topic)


def _move(c: ControllerOps, r: tuple[str, int, int], target: ReplicaState) -> None:
    if c.replica_states.get(r) is _R.NON_EXISTENT and target is _R.OFFLINE:
        c.replica_states.move(r, _R.NEW)
    c.replica_states.move(r, target)


def _result_callback(c: ControllerOps, topic: str, partition: int,
                     broker: int) -> StopReplicaCallback:
    def done(code: int) -> None:      # -1: the StopReplica was not delivered
        c.events.put(ev.StopReplicaResult(topic, partition, broker, code))
    return done
