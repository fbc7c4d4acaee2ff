"""Partition reassignment (KIP-455, Kafka's KafkaController.onPartitionReassignment),
run by the active controller from AlterPartitionReassignments or from the
/admin/reassign_partitions znode.

Names (per partition): ORS the origin replicas, TRS the target, RS = TRS +
(ORS - TRS) the full set while moving, AR = TRS - ORS adding, RR = ORS - TRS
removing. A new target while one is running is taken relative to the origin
(the running reassignment's adding replicas not in the new target are stopped).

  start:  1. /brokers/topics/<t> gets RS, AR, RR (fenced read-modify-write);
          2. unless TRS is already in the ISR: leader epoch + 1 (state znode),
             LeaderAndIsr to every live replica of RS (AR with is_new), so the new
             replicas start following and the leader learns its new replica set;
  ...the new replicas catch up; their leader adds them to the ISR with
     AlterPartition (alter_partition.py calls ``maybe_complete``)...
  complete, once TRS is in the ISR:
          3. leader stays if it is in TRS and live, else the first live TRS member
             in the ISR leads; ISR = ISR - RR; leader epoch + 1; state written;
          4. LeaderAndIsr to the live TRS, StopReplica(delete) to the live RR,
             UpdateMetadata to every live broker;
          5. /brokers/topics/<t> gets TRS with AR, RR removed; the partition leaves
             /admin/reassign_partitions (the znode is deleted once empty).
Cancelling (target None) reassigns back to the origin replicas.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from controller.context import TopicPartition
from controller.events import ErrorResult
from controller.replica_state_machine import ReplicaState
from controller.zkdata import NO_LEADER
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from controller.channel import RequestBatch
    from controller.controller_ops import ControllerOps

log = logging.getLogger("pybroker.controller")
_R = ReplicaState
OK: ErrorResult = (0, None)


def reassign_to(replicas: list[int], adding: list[int], target: list[int]
                ) -> tuple[list[int], list[int], list[int]]:
    """-> (RS, AR, RR) for moving a partition whose current full set is ``replicas``
    (with ``adding`` still being added) to ``target``."""
    origin = [r for r in replicas if r not in adding]
    rs = list(target) + [r for r in origin if r not in target]
    return rs, [r for r in target if r not in origin], [r for r in origin if r not in target]


def validate_target(c: ControllerOps, tp: TopicPartition, target: list[int]) -> ErrorResult:
    """Kafka's validateReplicas: non-empty, no duplicates, no negative ids, every
    replica to be added live."""
    ctx = c.ctx
    if not target:
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "Empty replica list specified in partition reassignment.")
    if len(set(target)) != len(target):
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate replica ids in partition reassignment replica list: {target}")
    if any(r < 0 for r in target):
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica list: {target}"
    adding = ctx.reassigning.get(tp, ([], []))[0]
    _rs, new, _rr = reassign_to(ctx.replicas(tp), adding, target)
    dead = [r for r in new if r not in ctx.live]
    if dead:
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Replica assignment has brokers that are not alive. Replica list: {new}, "
                f"live broker list: {sorted(ctx.live)}")
    return OK


def _exists(c: ControllerOps, tp: TopicPartition) -> ErrorResult | None:
    if tp[0] in c.ctx.topics_to_delete or not c.ctx.replicas(tp):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
    return None


async def api_reassign(c: ControllerOps, targets: dict[TopicPartition, list[int] | None]
                       ) -> dict[TopicPartition, ErrorResult]:
    """AlterPartitionReassignments: start (or, target None, cancel) each one."""
    ctx = c.ctx
    out: dict[TopicPartition, ErrorResult] = {}
    for tp, target in targets.items():
        missing = _exists(c, tp)
        if missing is not None:
            out[tp] = missing
            continue
        if target is None:
            if tp not in ctx.reassigning:
                out[tp] = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
                continue
            adding = ctx.reassigning[tp][0]
            target = [r for r in ctx.replicas(tp) if r not in adding]
        else:
            err = validate_target(c, tp, target)
            if err != OK:
                out[tp] = err
                continue
        out[tp] = await start(c, tp, list(target))
    # an API reassignment of a partition also named in the znode supersedes it
    overridden = {tp for tp, r in out.items() if r == OK} & ctx.zk_reassigning
    if overridden:
        ctx.zk_reassigning -= overridden
        await c.store.remove_from_reassignment(overridden, ctx.epoch_zk_version)
    return out


async def zk_reassign(c: ControllerOps) -> None:
    """/admin/reassign_partitions changed: start what it lists that is not running
    yet; entries that cannot start are removed from the znode."""
    ctx = c.ctx
    wanted = await c.store.read_reassignment()
    failed: set[TopicPartition] = set()
    for tp, target in sorted(wanted.items()):
        if tp in ctx.zk_reassigning:
            continue
        err = _exists(c, tp) or validate_target(c, tp, target)
        if err == OK:
            err = await start(c, tp, target)
        if err == OK:
            if tp in ctx.reassigning:
                ctx.zk_reassigning.add(tp)
        else:
            log.warning("reassignment of %s-%d from /admin/reassign_partitions failed: %s",
                        tp[0], tp[1], err[1] or ErrorCode.from_code(err[0]).name)
            failed.add(tp)
    done = {tp for tp in wanted if tp not in ctx.reassigning and tp not in failed}
    if failed or done:
        await c.store.remove_from_reassignment(failed | done, ctx.epoch_zk_version)


async def start(c: ControllerOps, tp: TopicPartition, target: list[int]) -> ErrorResult:
    ctx = c.ctx
    old_rs = list(ctx.replicas(tp))
    adding_before = ctx.reassigning.get(tp, ([], []))[0]
    rs, adding, removing = reassign_to(old_rs, adding_before, target)
    dropped = [r for r in old_rs if r not in rs]      # adding replicas no longer wanted
    await c.store.update_topic_replicas(tp[0], {tp[1]: (rs, adding, removing)},
                                        ctx.epoch_zk_version)
    ctx.assignments[tp[0]][tp[1]] = rs
    if adding or removing:
        ctx.reassigning[tp] = (adding, removing)
    else:
        ctx.reassigning.pop(tp, None)
    log.info("reassignment of %s-%d: replicas %s -> %s (adding %s, removing %s)",
             tp[0], tp[1], old_rs, target, adding, removing)
    batch = c.new_batch()
    for r in dropped:
        _remove_replica(c, tp, r, batch)
    s = ctx.states.get(tp)
    if s is not None and set(target) <= set(s.isr):
        await complete(c, tp, batch)
    elif s is not None:
        new_isr = [r for r in s.isr if r not in dropped] or list(s.isr[:1])
        if s.leader != NO_LEADER or dropped:
            updated, _ = await c.store.update_partition_states(
                {tp: s.new_leader(s.leader, new_isr)}, ctx.epoch, ctx.epoch_zk_version)
            ctx.states.update(updated)
        for r in adding:
            c.replica_states.online_or_offline((tp[0], tp[1], r), r in ctx.live)
        batch.add_leader_and_isr(rs, tp)
        for r in adding:
            batch.leader_and_isr.get(r, {}).update({tp: True})
    batch.send(c.channel)
    return OK


async def maybe_complete(c: ControllerOps, tp: TopicPartition) -> None:
    """After an ISR change: finish the partition's reassignment if TRS is in the ISR."""
    s = c.ctx.states.get(tp)
    if tp in c.ctx.reassigning and s is not None and \
            set(c.ctx.target_replicas(tp)) <= set(s.isr):
        batch = c.new_batch()
        await complete(c, tp, batch)
        batch.send(c.channel)


async def complete(c: ControllerOps, tp: TopicPartition, batch: RequestBatch) -> None:
    ctx = c.ctx
    target = ctx.target_replicas(tp)
    removing = [r for r in ctx.replicas(tp) if r not in target]
    s = ctx.states[tp]
    isr = [r for r in s.isr if r in target]
    leader = s.leader if s.leader in target and s.leader in ctx.live else next(
        (r for r in target if r in ctx.live and r in isr), None)
    if leader is None:
        log.warning("reassignment of %s-%d waits: no live target replica in the ISR %s",
                    tp[0], tp[1], list(s.isr))
        return
    updated, failed = await c.store.update_partition_states(
        {tp: s.new_leader(leader, isr)}, ctx.epoch, ctx.epoch_zk_version)
    if failed:
        log.warning("reassignment of %s-%d: state changed under us; retried on the next "
                    "ISR change", *tp)
        return
    ctx.states.update(updated)
    ctx.assignments[tp[0]][tp[1]] = target
    ctx.reassigning.pop(tp, None)
    await c.store.update_topic_replicas(tp[0], {tp[1]: (target, [], [])}, ctx.epoch_zk_version)
    for r in target:
        c.replica_states.online_or_offline((tp[0], tp[1], r), r in ctx.live)
    batch.add_leader_and_isr(target, tp)
    for r in removing:
        _remove_replica(c, tp, r, batch)
    batch.add_update_metadata(ctx.live, [tp])
    if tp in ctx.zk_reassigning:
        ctx.zk_reassigning.discard(tp)
        await c.store.remove_from_reassignment({tp}, ctx.epoch_zk_version)
    log.info("reassignment of %s-%d completed: replicas %s, leader %d", tp[0], tp[1], target,
             leader)


def _remove_replica(c: ControllerOps, tp: TopicPartition, broker: int, batch: RequestBatch) -> None:
    """A replica leaves the partition: StopReplica(delete) if its broker is live;
    its replica state walks Offline -> ... -> NonExistent."""
    r = (tp[0], tp[1], broker)
    states = c.replica_states
    if states.get(r) is _R.NON_EXISTENT:
        states.move(r, _R.NEW)
    for target in (_R.OFFLINE, _R.DELETION_STARTED, _R.DELETION_SUCCESSFUL, _R.NON_EXISTENT):
        states.move(r, target)
    if broker in c.ctx.live:
        batch.add_stop_replica(broker, tp, True)


def ongoing(c: ControllerOps, parts: list[TopicPartition] | None
            ) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
    """ListPartitionReassignments: tp -> (replicas, adding, removing)."""
    ctx = c.ctx
    chosen = sorted(ctx.reassigning) if parts is None else [p for p in parts
                                                            if p in ctx.reassigning]
    return {tp: (list(ctx.replicas(tp)), list(ctx.reassigning[tp][0]),
                 list(ctx.reassigning[tp][1])) for tp in chosen}


async def resume(c: ControllerOps) -> None:
    """After a controller failover: finish reassignments whose target is already in
    the ISR, re-send the rest (Kafka's initializePartitionReassignments), and pick
    up /admin/reassign_partitions."""
    ctx = c.ctx
    batch = c.new_batch()
    for tp in sorted(ctx.reassigning):
        s = ctx.states.get(tp)
        if s is not None and set(ctx.target_replicas(tp)) <= set(s.isr):
            await complete(c, tp, batch)
    batch.send(c.channel)
    await zk_reassign(c)
