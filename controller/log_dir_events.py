"""Log dir failures, the controller's side (KIP-112 in ZooKeeper mode).

What Kafka's ZooKeeper controller does, and what this module does the same way:

1. A broker whose log dir failed writes the persistent sequential znode
   ``/log_dir_event_notification/log_dir_event_<seq>`` = ``{"version":1,
   "broker":<id>,"event":1}`` (broker/log_dirs/). The controller watches the
   path's children (event LogDirEventNotification): ``on_notification`` reads
   every notification, deletes them (fenced by the controller epoch) and, for
   each live broker named, sends LeaderAndIsr for all the partitions it hosts at
   their current leader epochs (Kafka's onBrokerLogDirFailure: the replicas go
   through OnlineReplica again).
2. The broker answers KAFKA_STORAGE_ERROR for every partition whose log is in an
   offline dir (and KIP-112's rule: a partition it should have but finds in no
   live dir). Every LeaderAndIsr answer with such an error, or from a broker with
   replicas recorded offline, comes back as LeaderAndIsrResponseReceived:
   ``on_leader_and_isr_response`` records the replicas in
   ``ctx.replicas_on_offline_dirs`` (a NONE answer takes one out) -- Kafka's
   replicasOnOfflineDirs.
3. Replicas newly recorded offline go OfflineReplica (Kafka's
   onReplicasBecomeOffline), ``replicas_offline``: where the broker led, a new
   leader is elected from the rest of the ISR among online replicas (outside the
   ISR only with unclean.leader.election.enable), else the partition is left
   leaderless (OfflinePartition, the ISR keeping its last member, as Kafka's
   removeReplicasFromIsr); the broker leaves every other ISR it is in. New states
   are written to ZooKeeper in one fenced batch, LeaderAndIsr goes to the other
   replicas, UpdateMetadata to every broker with the replica in offline_replicas.
4. The record of a broker is dropped when it restarts (new or bounced in
   BrokerChange, as Kafka's onBrokerStartup): its answers to the LeaderAndIsr it
   then gets tell again which replicas are offline. A new controller starts with
   no record and deletes pending notifications: its full LeaderAndIsr to every
   broker brings the same answers.

Where the rest of the controller honours the record: elections of
``bring_partitions_online`` and ``unclean_topics`` (ctx.is_replica_online /
online_brokers), preferred elections (leader_election), and UpdateMetadata's
offline_replicas (ctx.offline_replicas). Kafka differs in being stricter in more
places (e.g. AlterPartition refusing an offline replica in a new ISR); here a
replica in an offline dir does not fetch, so it never asks to rejoin.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from controller import events as ev
from controller.partition_state_machine import PartitionState, offline_leader, without_replicas
from controller.zkdata import NO_LEADER, LeaderIsr

if TYPE_CHECKING:
    from controller.controller_ops import ControllerOps

log = logging.getLogger("pybroker.controller")

TopicPartition = tuple[str, int]
LeaderAndIsrSink = Callable[[int, int, dict[TopicPartition, int]], None]
KAFKA_STORAGE_ERROR = 56
NONE = 0


async def on_notification(c: ControllerOps) -> None:
    """Step 1: LeaderAndIsr for every partition of each broker named."""
    ctx = c.ctx
    events = await c.store.log_dir_events()
    if not events:
        return
    try:
        brokers = sorted({b for b in events.values() if b is not None})
        live = [b for b in brokers if b in ctx.live]
        log.info("controller %d: log dir failure reported by brokers %s (live: %s)",
                 c.broker_id, brokers, live)
        batch = c.new_batch()
        for b in live:
            for tp in ctx.partitions_on(b):
                if tp in ctx.states and tp[0] not in ctx.topics_to_delete:
                    batch.add_leader_and_isr([b], tp)
        batch.send(c.channel)
    finally:
        await c.store.delete_log_dir_events(events, ctx.epoch_zk_version)


def response_sink(c: ControllerOps) -> LeaderAndIsrSink:
    """The RequestBatch hook: a LeaderAndIsr answer worth looking at becomes an event
    (called from the channel's sender task; it only reads the context)."""
    def received(broker_id: int, broker_epoch: int, errors: dict[TopicPartition, int]) -> None:
        if (KAFKA_STORAGE_ERROR in errors.values()
                or broker_id in c.ctx.replicas_on_offline_dirs):
            c.events.put(ev.LeaderAndIsrResponseReceived(
                broker_id, broker_epoch, tuple(sorted(errors.items()))))
    return received


async def on_leader_and_isr_response(c: ControllerOps, e: ev.LeaderAndIsrResponseReceived) -> None:
    """Step 2: update the broker's offline replicas; step 3 for the new ones."""
    ctx = c.ctx
    info = ctx.live.get(e.broker_id)
    if info is None or info.epoch != e.broker_epoch:
        return                       # an answer from a broker's earlier life
    before = ctx.replicas_on_offline_dirs.get(e.broker_id, set())
    offline = {tp for tp, code in e.errors if code == KAFKA_STORAGE_ERROR}
    online = {tp for tp, code in e.errors if code == NONE}
    now = (before - online) | offline
    if now:
        ctx.replicas_on_offline_dirs[e.broker_id] = now
    else:
        ctx.replicas_on_offline_dirs.pop(e.broker_id, None)
    new = sorted(now - before)
    if new:
        log.info("controller %d: replicas of broker %d in offline log dirs: %d partitions "
                 "(%s)", c.broker_id, e.broker_id, len(new),
                 ", ".join(f"{t}-{p}" for t, p in new[:10]))
        await replicas_offline(c, e.broker_id, new)


async def replicas_offline(c: ControllerOps, broker_id: int, parts: list[TopicPartition]) -> None:
    """Step 3: the replicas of ``broker_id`` in ``parts`` are offline (already in
    ``ctx.replicas_on_offline_dirs``): new leaders where it led, out of every ISR."""
    ctx = c.ctx
    parts = [tp for tp in parts if tp in ctx.states and tp[0] not in ctx.topics_to_delete]
    unclean = await c.unclean_topics(parts)
    changes: dict[TopicPartition, LeaderIsr] = {}
    led = {tp for tp in parts if ctx.states[tp].leader == broker_id}
    for tp in parts:
        s = ctx.states[tp]
        c.replica_states.online_or_offline((tp[0], tp[1], broker_id), False)
        if s.leader == broker_id:
            chosen = offline_leader(ctx.replicas(tp), [r for r in s.isr if r != broker_id],
                                    ctx.online_brokers(tp) - ctx.shutting_down, tp[0] in unclean)
            if chosen is None:
                _leader, isr = without_replicas(s.leader, s.isr, {broker_id})
                chosen = (NO_LEADER, isr)
                log.error("partition %s-%d has no other in-sync replica online; left "
                          "without a leader", *tp)
            changes[tp] = s.new_leader(*chosen)
        elif broker_id in s.isr:
            leader, isr = without_replicas(s.leader, s.isr, {broker_id})
            if tuple(isr) != s.isr:
                changes[tp] = s.new_leader(leader, isr)
    updated, failed = await c.store.update_partition_states(changes, ctx.epoch,
                                                           ctx.epoch_zk_version)
    for tp in failed:
        log.warning("partition state of %s-%d changed under the controller", *tp)
    batch = c.new_batch()
    for tp, s in updated.items():
        ctx.states[tp] = s
        c.set_partition_state(tp, PartitionState.ONLINE if s.leader != NO_LEADER
                               else PartitionState.OFFLINE)
        batch.add_leader_and_isr([r for r in ctx.replicas(tp) if r != broker_id], tp)
    batch.add_update_metadata(ctx.live, parts)    # offline_replicas now name the broker
    batch.send(c.channel)
    moved = [tp for tp, s in updated.items() if tp in led and s.leader != NO_LEADER]
    log.info("controller %d: broker %d's offline replicas: %d leaders moved (%s), %d "
             "partition states changed", c.broker_id, broker_id, len(moved),
             ", ".join(f"{t}-{p}->{updated[(t, p)].leader}" for t, p in moved[:10]),
             len(updated))


def forget_brokers(c: ControllerOps, brokers: set[int]) -> None:
    """Step 4: brokers restarted (or gone): their offline replicas are unknown again."""
    for b in brokers:
        if c.ctx.replicas_on_offline_dirs.pop(b, None):
            log.info("controller %d: broker %d restarted; its log dirs are asked again",
                     c.broker_id, b)


__all__ = ["forget_brokers", "on_leader_and_isr_response", "on_notification",
           "replicas_offline", "response_sink"]
