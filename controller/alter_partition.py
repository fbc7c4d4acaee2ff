"""AlterPartition (API 56) on the active controller: the one way an ISR changes
while its leader stays (Kafka's KafkaController.processAlterPartition, 2.7+).

The partition leader proposes (leader epoch, new ISR, partition epoch); the
controller, alone in writing /brokers/topics/<t>/partitions/<p>/state, checks
the proposal against its context in this order, first failure wins:

  0. the request's broker is not registered, or with another broker epoch
     (the czxid of its /brokers/ids znode)          -> STALE_BROKER_EPOCH (top level)
  1. topic unknown (by name v0-1, by id v2+)       -> UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID
  2. partition or leader epoch ahead of ours       -> NOT_CONTROLLER (we are probably stale)
  3. leader epoch behind ours                      -> FENCED_LEADER_EPOCH (a zombie leader)
  4. already the current state (leader, leader epoch, ISR in order, recovery
     state equal; partition epoch <= ours)        -> success with the current state (idempotent)
  5. partition epoch behind ours                   -> INVALID_UPDATE_VERSION
  6. RECOVERING with more than one ISR member, or RECOVERED -> RECOVERING
                                                   -> INVALID_REQUEST
  7. an ISR member not live                        -> INELIGIBLE_REPLICA (v2+) / OPERATION_NOT_ATTEMPTED
Accepted proposals are written in one pipelined batch of fenced, versioned
transactions (expected version = the partition epoch); a lost race is
INVALID_UPDATE_VERSION. The answer carries the written state (the znode's new
version is the new partition epoch). The leader epoch is *not* bumped: an ISR
change is not a leader change. Every live broker then gets UpdateMetadata for
the partitions in the request (no LeaderAndIsr, as Kafka 2.7+). Successful
changes of partitions under reassignment may complete it (reassignment.py).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controller import reassignment
from controller.context import TopicPartition
from controller.zkdata import LeaderIsr
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

if TYPE_CHECKING:
    from controller.controller_ops import ControllerOps

log = logging.getLogger("pybroker.controller")

ALTER_PARTITION = 56
RECOVERING = 1


@dataclass(frozen=True)
class Proposal:
    """One partition of an AlterPartition request, as the controller reads it."""
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    recovery_state: int
    partition_epoch: int

    @staticmethod
    def from_request(broker_id: int, p: Struct, version: int) -> Proposal:
        isr = ([b.broker_id for b in p.new_isr_with_epochs] if version >= 3
               else list(p.new_isr))
        return Proposal(broker_id, p.leader_epoch, tuple(isr),
                        p.leader_recovery_state if version >= 1 else 0, p.partition_epoch)


def check(current: LeaderIsr | None, p: Proposal, live: set[int],
          version: int) -> int | LeaderIsr | None:
    """Rules 1-7 above for one partition: -> an error code, the current state
    (nothing to write), or None (accepted: write it)."""
    if current is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if p.partition_epoch > current.zk_version or p.leader_epoch > current.leader_epoch:
        return ErrorCode.NOT_CONTROLLER
    if p.leader_epoch < current.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if (p.leader == current.leader and p.isr == tuple(current.isr)
            and p.recovery_state == current.leader_recovery_state):
        return current
    if p.partition_epoch < current.zk_version:
        return ErrorCode.INVALID_UPDATE_VERSION
    if p.recovery_state == RECOVERING and (len(p.isr) > 1
                                           or current.leader_recovery_state != RECOVERING):
        return ErrorCode.INVALID_REQUEST
    if set(p.isr) - live:
        return ErrorCode.INELIGIBLE_REPLICA if version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED
    return None


async def process(c: ControllerOps, request: Struct, version: int) -> Struct:
    """Validate, write, answer; then UpdateMetadata and reassignment progress."""
    spec = api(ALTER_PARTITION).response
    ctx = c.ctx
    broker = ctx.live.get(request.broker_id)
    if broker is None or broker.epoch != request.broker_epoch:
        log.info("AlterPartition from broker %d with stale broker epoch %d (registered: %s)",
                 request.broker_id, request.broker_epoch, broker.epoch if broker else "not live")
        return spec.new(error_code=ErrorCode.STALE_BROKER_EPOCH, topics=[])
    names = {tid: t for t, tid in ctx.topic_ids.items()}
    results: dict[TopicPartition, int | LeaderIsr] = {}
    unknown_ids: dict[uuid.UUID, list[int]] = {}
    to_write: dict[TopicPartition, LeaderIsr] = {}
    live = set(ctx.live)
    for t in request.topics:
        name = names.get(t.topic_id) if version >= 2 else t.topic_name
        if name is None:
            unknown_ids[t.topic_id] = [p.partition_index for p in t.partitions]
            continue
        for p in t.partitions:
            tp = (name, p.partition_index)
            prop = Proposal.from_request(request.broker_id, p, version)
            verdict = check(ctx.states.get(tp), prop, live, version)
            if verdict is None:
                cur = ctx.states[tp]
                to_write[tp] = LeaderIsr(prop.leader, prop.leader_epoch, prop.isr,
                                         cur.controller_epoch, cur.zk_version,
                                         prop.recovery_state)
            else:
                results[tp] = verdict
    written, failed = await c.store.update_partition_states(to_write, ctx.epoch,
                                                           ctx.epoch_zk_version)
    for tp, s in written.items():
        ctx.states[tp] = s
        results[tp] = s
    for tp in failed:
        results[tp] = ErrorCode.INVALID_UPDATE_VERSION
    if written or failed:
        log.info("AlterPartition from broker %d: %d ISR changes written, %d lost a race",
                 request.broker_id, len(written), len(failed))
    batch = c.new_batch()
    batch.add_update_metadata(ctx.live, [tp for tp in results if tp in ctx.states])
    batch.send(c.channel)
    for tp in written:
        if tp in ctx.reassigning:
            await reassignment.maybe_complete(c, tp)
    return _response(spec, results, unknown_ids, version, ctx.topic_ids)


def _response(spec: Any, results: dict[TopicPartition, int | LeaderIsr],
              unknown_ids: dict[uuid.UUID, list[int]], version: int,
              topic_ids: dict[str, uuid.UUID]) -> Struct:
    td, pd = spec.structs["TopicData"], spec.structs["PartitionData"]
    by_topic: dict[str, list[Struct]] = {}
    for (t, p), r in sorted(results.items()):
        if isinstance(r, LeaderIsr):
            part = pd.new(partition_index=p, error_code=0, leader_id=r.leader,
                          leader_epoch=r.leader_epoch, isr=list(r.isr),
                          leader_recovery_state=r.leader_recovery_state,
                          partition_epoch=r.zk_version)
        else:
            part = pd.new(partition_index=p, error_code=int(r))
        by_topic.setdefault(t, []).append(part)
    topics = [td.new(topic_name=t, topic_id=topic_ids.get(t, uuid.UUID(int=0)), partitions=ps)
              for t, ps in by_topic.items()]
    topics += [td.new(topic_id=tid, partitions=[
        pd.new(partition_index=i, error_code=ErrorCode.UNKNOWN_TOPIC_ID) for i in idx])
        for tid, idx in unknown_ids.items()]
    return spec.new(error_code=0, topics=topics)
