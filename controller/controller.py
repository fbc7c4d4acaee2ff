"""The controller: runs in every broker, active only while it holds /controller.

Events (controller/events.py) arrive on one queue; ``process`` handles them one
at a time. Each handler follows the same steps and never awaits in the middle
of changing ControllerContext:
  1. compute the new leaders/ISRs from the context,
  2. write them to ZooKeeper with versioned, epoch-fenced updates,
  3. apply what was written to the context and queue the requests
     (LeaderAndIsr, UpdateMetadata, StopReplica) on the channel.
A fenced write (ControllerMovedError) makes us resign.

Besides elections on broker changes, topics and deletion (deletion.py), the
queue carries requests answered through futures: AlterPartition
(alter_partition.py), ElectLeaders and the periodic leader-imbalance check
(leader_election.py), reassignments from AlterPartitionReassignments or
/admin/reassign_partitions (reassignment.py), and ControlledShutdown
(controlled_shutdown.py). Log dir
failures (KIP-112: /log_dir_event_notification, LeaderAndIsr answers with
KAFKA_STORAGE_ERROR) are log_dir_events.py's; a live broker's new endpoints
(its /brokers/ids/<id> data rewritten: dynamic listeners) broker_modifications.py's.
ZooKeeper writes go out as pipelined, chunked, fenced transactions
(ClusterStore), and each event sends at most one LeaderAndIsr and one
UpdateMetadata per broker (channel.RequestBatch).
"""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial
from typing import Any, Callable

from controller import (alter_partition, broker_modifications, controlled_shutdown, deletion,
                        leader_election, log_dir_events, reassignment)
from controller import events as ev
from controller.channel import BrokerTransport, ControllerChannel, RequestBatch
from controller.context import ControllerContext, TopicPartition
from controller.restarts import restarted_leaders
from controller.election import try_elect
from controller.errors import ControllerMovedError, NotControllerError, ZkError
from controller.event_manager import EventManager
from controller.partition_state_machine import (PartitionState, PartitionStates, initial_leader,
                                                offline_leader, without_replicas)
from controller.replica_state_machine import ReplicaState, ReplicaStates
from controller.stats import ControllerStats
from controller.zk import ClusterStore
from controller import zkdata as zd
from controller.zkdata import NO_LEADER, LeaderIsr

log = logging.getLogger("pybroker.controller")

_P = PartitionState


class Controller:
    """``Controller(broker_id, store, transport)``; ``await start()`` after the
    broker registered itself; ``await stop()`` at shutdown."""

    def __init__(self, broker_id: int, store: ClusterStore, transport: BrokerTransport, *,
                 unclean_leader_election: bool = False, request_timeout: float = 30.0,
                 auto_leader_rebalance: bool = True,
                 leader_imbalance_check_interval_s: float = 300.0,
                 leader_imbalance_per_broker_percentage: int = 10,
                 listener: str | None = None) -> None:
        """The keyword arguments are the broker configs unclean.leader.election.enable
        (default for topics without an override), request.timeout.ms (in seconds),
        auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds and
        leader.imbalance.per.broker.percentage (Kafka's defaults), and the listener of
        the brokers the controller's requests go to (control.plane.listener.name or
        the inter-broker listener; None: each broker's default endpoint)."""
        self.broker_id = broker_id
        self.store = store
        self.transport = transport
        self.unclean = unclean_leader_election
        self.request_timeout = request_timeout
        self.auto_rebalance = auto_leader_rebalance
        self.imbalance_interval = leader_imbalance_check_interval_s
        self.imbalance_percentage = leader_imbalance_per_broker_percentage
        self._rebalance_timer: asyncio.TimerHandle | None = None
        self.ctx = ControllerContext()
        self.partition_states = PartitionStates()
        self.replica_states = ReplicaStates()
        self.channel = ControllerChannel(broker_id, transport, request_timeout, listener)
        self.events = EventManager(self.process, lambda e: _answer(e, NotControllerError()))
        self.active_controller_id: int | None = None
        self._active = False
        self._topic_watches: dict[str, Callable[[], None]] = {}
        self._cancel: list[Callable[[], None]] = []
        self.broker_watches: dict[int, Callable[[], None]] = {}   # broker_modifications
        self.stats = ControllerStats()          # read by the broker's metrics

    # -- facade --------------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self._active

    def set_unclean_leader_election(self, enabled: bool) -> None:
        """The broker default changed at run time; turned on, offline partitions
        are elected now (on the active controller)."""
        was, self.unclean = self.unclean, enabled
        if enabled and not was and self._active:
            self.events.put(ev.UncleanLeaderElectionEnable())

    @property
    def epoch(self) -> int:
        return self.ctx.epoch if self._active else -1

    def offline_partition_count(self) -> int:
        """Partitions in OfflinePartition state (Kafka's OfflinePartitionsCount)."""
        return self.partition_states.count(PartitionState.OFFLINE) if self._active else 0

    async def start(self) -> None:
        self.events.start()
        put = self.events.put
        self.store.add_session_listener(
            lambda what: put(ev.SessionExpired() if what == "LOST" else ev.SessionRenewed()))
        self._cancel += [
            self.store.watch_data(zd.CONTROLLER, lambda _d: put(ev.ControllerChange())),
            self.store.watch_children(zd.BROKER_IDS, lambda _c: put(ev.BrokerChange())),
            self.store.watch_children(zd.TOPICS, lambda _c: put(ev.TopicChange())),
            self.store.watch_children(zd.DELETE_TOPICS, lambda _c: put(ev.TopicDeletion())),
            self.store.watch_data(zd.REASSIGN_PARTITIONS, lambda d: None if d is None
                                  else put(ev.ZkPartitionReassignment())),
            self.store.watch_children(zd.LOG_DIR_EVENT,
                                      lambda c: put(ev.LogDirEventNotification()) if c else None),
        ]
        put(ev.Startup())

    async def stop(self) -> None:
        for cancel in self._cancel + list(self._topic_watches.values()):
            cancel()
        broker_modifications.cancel_all(self)
        await self.events.stop()
        if self._active:
            self._resign()
            if not self.store.closed:
                # bounded: with ZooKeeper gone the delete would wait for a connection for
                # ever; /controller is ephemeral and goes with the session anyway
                try:
                    await asyncio.wait_for(self.store.resign_controller(self.broker_id),
                                           self.store.connection_timeout_s)
                except ZkError as e:
                    log.warning("could not delete /controller: %s", e)
                except asyncio.TimeoutError:
                    log.warning("could not delete /controller: ZooKeeper did not answer "
                                "within %.0f s; it goes with the session",
                                self.store.connection_timeout_s)

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int = -1
                                  ) -> list[tuple[str, int]]:
        """Handle a ControlledShutdown request: -> partitions the broker still leads.
        Raises NotControllerError when this broker is not the controller."""
        if not self._active:
            raise NotControllerError()
        fut: asyncio.Future[list[tuple[str, int]]] = asyncio.get_running_loop().create_future()
        self.events.put(ev.ControlledShutdown(broker_id, broker_epoch, fut))
        return await fut

    async def alter_partition(self, request: Any, version: int) -> Any:
        """Handle an AlterPartition request body: -> the response body."""
        return await self._ask(lambda f: ev.AlterPartitionReceived(request, version, f))

    async def elect_leaders(self, partitions: list[tuple[str, int]] | None, election_type: int
                            ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """ElectLeaders (0 preferred, 1 unclean; None = every partition):
        -> tp -> (error code, message)."""
        parts = None if partitions is None else tuple(partitions)
        return await self._ask(lambda f: ev.ElectLeaders(parts, election_type, f))

    async def alter_reassignments(self, targets: dict[tuple[str, int], list[int] | None]
                                  ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """AlterPartitionReassignments (None cancels): -> tp -> (error code, message)."""
        items = tuple((tp, None if r is None else tuple(r)) for tp, r in targets.items())
        return await self._ask(lambda f: ev.ApiPartitionReassignment(items, f))

    async def list_reassignments(self, partitions: list[tuple[str, int]] | None
                                 ) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
        """Ongoing reassignments: tp -> (replicas, adding, removing)."""
        parts = None if partitions is None else tuple(partitions)
        return await self._ask(lambda f: ev.ListPartitionReassignments(parts, f))

    async def _ask(self, make: Callable[[asyncio.Future[Any]], ev.Event]) -> Any:
        """Queue a request event and wait for its answer. Raises NotControllerError
        when this broker is not (or stops being) the controller."""
        if not self._active:
            raise NotControllerError()
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.events.put(make(fut))
        return await fut

    async def idle(self) -> None:
        """Wait until queued events are processed (tests, orderly shutdown)."""
        await self.events.idle()

    # -- the event loop ------------------------------------------------------------------

    async def process(self, event: ev.Event) -> None:
        if self.store.closed:
            _answer(event, NotControllerError())
            return
        try:
            await self._dispatch(event)
        except ControllerMovedError:
            log.warning("broker %d: controller moved while handling %s; resigning",
                        self.broker_id, type(event).__name__)
            _answer(event, NotControllerError())
            self._resign()
            await self._elect()
        except BaseException as e:
            _answer(event, e)
            raise
        _answer(event, NotControllerError())   # a request event nobody answered

    async def _dispatch(self, event: ev.Event) -> None:
        match event:
            case ev.Startup() | ev.SessionRenewed():
                await self._elect()
            case ev.ControllerChange():
                await self._controller_change()
            case ev.SessionExpired():
                self._resign()
            case ev.ControlledShutdown():
                await controlled_shutdown.handle(self, event)
            case _ if not self._active:
                return
            case ev.AlterPartitionReceived(request=req, version=v, result=answer):
                answer.set_result(await alter_partition.process(self, req, v))
            case ev.ElectLeaders(partitions=parts, election_type=kind, result=fut):
                res = await leader_election.elect(self, None if parts is None else list(parts),
                                                  kind)
                if fut is not None:
                    fut.set_result(res)
            case ev.AutoLeaderRebalance():
                await self._auto_rebalance()
            case ev.ApiPartitionReassignment(targets=targets, result=fut):
                fut.set_result(await reassignment.api_reassign(
                    self, {tp: None if r is None else list(r) for tp, r in targets}))
            case ev.ListPartitionReassignments(partitions=parts, result=fut):
                fut.set_result(reassignment.ongoing(self, None if parts is None else list(parts)))
            case ev.ZkPartitionReassignment():
                await reassignment.zk_reassign(self)
            case ev.BrokerChange():
                await self._broker_change()
            case ev.BrokerModification(broker_id=b):
                await broker_modifications.on_modification(self, b)
            case ev.UncleanLeaderElectionEnable():
                await broker_modifications.on_unclean_enabled(self)
            case ev.TopicChange():
                await self._topic_change()
            case ev.PartitionModifications(topic=t):
                await self._partition_modifications(t)
            case ev.TopicDeletion():
                await self._topic_deletion()
            case ev.StopReplicaResult():
                await self._stop_replica_result(event)
            case ev.LogDirEventNotification():
                await log_dir_events.on_notification(self)
            case ev.LeaderAndIsrResponseReceived():
                await log_dir_events.on_leader_and_isr_response(self, event)

    # -- election ------------------------------------------------------------------------

    async def _controller_change(self) -> None:
        active = await self.store.controller_id()
        if self._active and active != self.broker_id:
            log.info("broker %d: controller moved to %s", self.broker_id, active)
            self._resign()
        self.active_controller_id = active
        if active is None:
            await self._elect()

    async def _elect(self) -> None:
        if self._active:
            return
        active, won = await try_elect(self.store, self.broker_id)
        self.active_controller_id = active
        if won is not None:
            self.ctx = ControllerContext(epoch=won[0], epoch_zk_version=won[1])
            self._active = True
            await self._on_failover()

    def _resign(self) -> None:
        if not self._active:
            return
        log.info("broker %d resigned as controller (epoch %d)", self.broker_id, self.ctx.epoch)
        self._active = False
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
            self._rebalance_timer = None
        self.channel.shutdown()
        self.partition_states.clear()
        self.replica_states.clear()
        self.ctx = ControllerContext()

    def new_batch(self) -> RequestBatch:
        batch = RequestBatch(self.ctx, self.broker_id, self.channel.listener)
        batch.on_leader_and_isr_response = log_dir_events.response_sink(self)
        return batch

    async def _on_failover(self) -> None:
        """Load everything, then tell every broker everything (Kafka's onControllerFailover)."""
        ctx = self.ctx
        for b in await self.store.live_brokers():
            ctx.live[b.id] = b
        topics = await self.store.read_topics()
        self._load_topics(topics)
        changed_at: dict[TopicPartition, int] = {}
        ctx.states.update(await self.store.partition_states(ctx.all_partitions(), changed_at))
        # A restarted leader is handled as Kafka handles a bounce: dead first, then
        # new. It is left out of the live set until the failover's full batch has gone
        # (its partitions get leaders elsewhere), then joins through the BrokerChange
        # below; so no broker is ever told it leads at the leader epoch of its previous
        # process, not even for the moment before the move. It stays in the ISRs (its
        # log is the one it had when it died): the member it hands over to may itself
        # be dead with its registration not yet expired (every broker killed at once),
        # and an ISR shrunk to that one member would leave the partition without a
        # leader once its session ends, beside a live replica holding every record.
        restarted = restarted_leaders(ctx, changed_at)
        for restarted_id in restarted:
            del ctx.live[restarted_id]
        for info in ctx.live.values():
            self.channel.add_broker(info)
        broker_modifications.watch(self, ctx.live)
        # pending log dir events are moot: every broker gets the full LeaderAndIsr below
        await self.store.delete_log_dir_events(await self.store.log_dir_events(),
                                               ctx.epoch_zk_version)
        batch = self.new_batch()
        batch.full = True
        batch.add_update_metadata(ctx.live, ctx.all_partitions())
        await self.bring_partitions_online(ctx.all_partitions(), batch, resend_all=True,
                                           keep_in_isr=frozenset(restarted))
        # replicas on brokers that died while nobody was controller go Offline: out of
        # the ISRs (Kafka's replicaStateMachine.startup)
        gone = {b for s in ctx.states.values() for b in s.isr} - set(ctx.live) - restarted
        if gone:
            await self.remove_from_isr(ctx.all_partitions(), gone, batch)
        batch.send(self.channel)
        if restarted:
            log.info("controller %d: brokers %s lead partitions whose state predates their "
                     "registration: restarted while no controller saw it; handled as restarts",
                     self.broker_id, sorted(restarted))
            await self._broker_change()
        await self._topic_deletion()
        await reassignment.resume(self)
        self._schedule_rebalance()
        log.info("controller %d: %d live brokers, %d topics, %d partitions", self.broker_id,
                 len(ctx.live), len(ctx.assignments), len(ctx.states))

    def _schedule_rebalance(self) -> None:
        if not self.auto_rebalance or not self._active:
            return
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()       # one timer at a time
        self._rebalance_timer = asyncio.get_running_loop().call_later(
            self.imbalance_interval, self.events.put, ev.AutoLeaderRebalance())

    async def _auto_rebalance(self) -> None:
        # a check queued by the timer before auto-rebalance was turned off does nothing
        if not self.auto_rebalance:
            return
        try:
            await leader_election.auto_rebalance(self, self.imbalance_percentage)
        finally:
            self._schedule_rebalance()

    def _load_topics(self, topics: dict[str, zd.TopicAssignment]) -> None:
        for t, a in topics.items():
            self.ctx.assignments[t] = dict(a.partitions)
            for p in set(a.adding) | set(a.removing):
                self.ctx.reassigning[(t, p)] = (list(a.adding.get(p, [])),
                                                list(a.removing.get(p, [])))
            if a.topic_id is not None:
                self.ctx.topic_ids[t] = a.topic_id
            if t not in self._topic_watches:
                self._topic_watches[t] = self.store.watch_data(
                    zd.topic_path(t), partial(self._topic_changed, t))

    def _topic_changed(self, topic: str, _data: bytes | None) -> None:
        """A topic znode's data watch: partitions may have been added to it."""
        self.events.put(ev.PartitionModifications(topic))

    # -- partitions online ---------------------------------------------------------------

    async def bring_partitions_online(self, parts: list[TopicPartition], batch: RequestBatch,
                                       resend_all: bool = False,
                                       keep_in_isr: frozenset[int] = frozenset()) -> None:
        """Give every partition in ``parts`` a state znode and a live leader where
        possible: New -> initialise; leaderless or dead leader -> offline election
        (``keep_in_isr``: brokers out of the live set that stay ISR members, see
        ``_on_failover``). LeaderAndIsr to the live replicas of every partition
        changed (or all of them with ``resend_all``)."""
        ctx = self.ctx
        live = set(ctx.live)
        to_create: dict[TopicPartition, LeaderIsr] = {}
        to_update: dict[TopicPartition, LeaderIsr] = {}
        started = time.monotonic()                # metrics: ControllerStats
        unclean_elected: set[TopicPartition] = set()
        unclean = await self.unclean_topics(parts)
        for tp in parts:
            if tp[0] in ctx.topics_to_delete:
                continue
            s = ctx.states.get(tp)
            replicas = ctx.replicas(tp)
            if s is None:
                init = initial_leader(replicas, live)
                if init is None:
                    log.error("partition %s-%d has no live replica; left offline", *tp)
                    self.set_partition_state(tp, _P.NEW)
                    continue
                to_create[tp] = LeaderIsr(init[0], 0, tuple(init[1]), ctx.epoch)
            elif not ctx.is_replica_online(s.leader, tp) or s.leader in ctx.shutting_down:
                chosen = offline_leader(replicas, s.isr,
                                        ctx.online_brokers(tp) - ctx.shutting_down,
                                        tp[0] in unclean, keep_in_isr)
                if chosen is None:
                    self.set_partition_state(tp, _P.OFFLINE)
                    if s.leader != NO_LEADER:
                        leader, isr = without_replicas(s.leader, s.isr,
                                                       {s.leader} - keep_in_isr)
                        to_update[tp] = s.new_leader(NO_LEADER, isr)
                    continue
                to_update[tp] = s.new_leader(*chosen)
                if chosen[0] not in s.isr:
                    unclean_elected.add(tp)
            elif resend_all:
                self.set_partition_state(tp, _P.ONLINE)
                for b in replicas:
                    self.replica_states.online_or_offline((tp[0], tp[1], b), b in live)
                batch.add_leader_and_isr(replicas, tp)
        created = await self.store.create_partition_states(to_create, ctx.epoch,
                                                           ctx.epoch_zk_version)
        updated, failed = await self.store.update_partition_states(to_update, ctx.epoch,
                                                                   ctx.epoch_zk_version)
        for tp in failed:
            log.warning("partition state of %s-%d changed under the controller", *tp)
        self.stats.record_elections(
            sum(1 for tp, s in updated.items() if s.leader != NO_LEADER),
            len(unclean_elected & updated.keys()), (time.monotonic() - started) * 1000)
        for tp, s in {**created, **updated}.items():
            ctx.states[tp] = s
            self.set_partition_state(tp, _P.ONLINE if s.leader != NO_LEADER else _P.OFFLINE)
            for b in ctx.replicas(tp):
                self.replica_states.online_or_offline((tp[0], tp[1], b), b in ctx.live)
            batch.add_leader_and_isr(ctx.replicas(tp), tp, is_new=tp in created)
        if created:
            log.info("controller %d: initialised %d new partitions", self.broker_id, len(created))

    async def unclean_topics(self, parts: list[TopicPartition]) -> set[str]:
        """Topics among ``parts`` that may elect a leader from outside the ISR: only
        asked of topics with a partition that needs a new leader and has no live ISR
        member (Kafka reads the topic config only then); the topic's
        unclean.leader.election.enable overrides the broker default either way."""
        ctx = self.ctx

        def online(b: int, tp: TopicPartition) -> bool:
            return b not in ctx.shutting_down and ctx.is_replica_online(b, tp)
        stuck = {tp[0] for tp in parts
                 if (s := ctx.states.get(tp)) is not None and not online(s.leader, tp)
                 and not any(online(r, tp) for r in s.isr)}
        out = set()
        for t in sorted(stuck):
            raw = (await self.store.topic_configs(t)).get("unclean.leader.election.enable")
            if (raw.strip().lower() == "true") if raw is not None else self.unclean:
                out.add(t)
        return out

    def set_partition_state(self, tp: TopicPartition, target: PartitionState) -> None:
        if target is _P.NEW and self.partition_states.get(tp) is _P.NEW:
            return
        if self.partition_states.get(tp) is _P.NON_EXISTENT and target is not _P.NEW:
            self.partition_states.move(tp, _P.NEW)
        self.partition_states.move(tp, target)

    # -- brokers -------------------------------------------------------------------------

    async def _broker_change(self) -> None:
        """BrokerChange: brokers gone, new, or bounced (registered again: a new broker
        epoch)."""
        ctx = self.ctx
        current = {b.id: b for b in await self.store.live_brokers()}
        bounced = {i for i, b in current.items() if i in ctx.live and ctx.live[i].epoch != b.epoch}
        dead = (set(ctx.live) - set(current)) | bounced
        new = (set(current) - set(ctx.live)) | bounced
        if not dead and not new:
            return
        log.info("controller %d: brokers joined %s, left %s", self.broker_id,
                 sorted(new), sorted(dead))
        # Kafka's order: bounced brokers count as dead first, then as new.
        affected = [tp for tp in ctx.all_partitions() if set(ctx.replicas(tp)) & (dead | new)]
        log_dir_events.forget_brokers(self, dead | new)
        batch = self.new_batch()
        for b in dead:
            ctx.live.pop(b, None)
            ctx.shutting_down.discard(b)
            self.channel.remove_broker(b)
        if dead:
            await self.bring_partitions_online(affected, batch)   # leaders off dead brokers
            await self.remove_from_isr(affected, dead, batch)
        for b in new:
            ctx.live[b] = current[b]
            self.channel.add_broker(current[b])
        broker_modifications.watch(self, new)
        if new:
            await self.bring_partitions_online(affected, batch)   # leaderless ones may recover
        for tp in affected:  # the new brokers learn their replicas
            news = [b for b in ctx.replicas(tp) if b in new]
            if news and tp in ctx.states and tp[0] not in ctx.topics_to_delete:
                batch.add_leader_and_isr(news, tp)
        batch.add_update_metadata(ctx.live, affected)
        batch.update_metadata_brokers.update(ctx.live)
        if new:   # new brokers get the whole picture
            batch.add_update_metadata(new, ctx.all_partitions())
        batch.send(self.channel)
        if new and ctx.topics_to_delete:
            await self._resume_deletion(new)

    async def remove_from_isr(self, parts: list[TopicPartition], gone: set[int],
                               batch: RequestBatch) -> None:
        """OfflineReplica: drop ``gone`` brokers from the ISR of partitions whose
        leader survives (leaders were re-elected first)."""
        ctx = self.ctx
        changes: dict[TopicPartition, LeaderIsr] = {}
        for tp in parts:
            s = ctx.states.get(tp)
            if s is None or s.leader == NO_LEADER or not set(s.isr) & gone:
                continue
            leader, isr = without_replicas(s.leader, s.isr, gone)
            if tuple(isr) != s.isr or leader != s.leader:
                changes[tp] = s.new_leader(leader, isr)
        updated, _failed = await self.store.update_partition_states(changes, ctx.epoch,
                                                                    ctx.epoch_zk_version)
        for tp, s in updated.items():
            ctx.states[tp] = s
            batch.add_leader_and_isr([b for b in ctx.replicas(tp) if b not in gone], tp)

    # -- topics --------------------------------------------------------------------------

    async def _topic_change(self) -> None:
        ctx = self.ctx
        names = set((await self.store.read_topics()).keys())
        new = names - set(ctx.assignments)
        for t in set(ctx.assignments) - names:  # deleted behind our back
            ctx.remove_topic(t)
            self.drop_topic_watch(t)
        if not new:
            return
        topics = await self.store.read_topics(sorted(new))
        self._load_topics(topics)
        await self._new_partitions(ctx.partitions_of(list(topics)))

    async def _partition_modifications(self, topic: str) -> None:
        ctx = self.ctx
        if topic not in ctx.assignments or topic in ctx.topics_to_delete:
            return
        a = (await self.store.read_topics([topic])).get(topic)
        if a is None:
            return
        added = sorted(set(a.partitions) - set(ctx.assignments[topic]))
        if not added:
            return
        for p in added:
            ctx.assignments[topic][p] = list(a.partitions[p])
        await self._new_partitions([(topic, p) for p in added])

    async def _new_partitions(self, parts: list[TopicPartition]) -> None:
        batch = self.new_batch()
        for tp in parts:
            self.partition_states.move(tp, _P.NEW)
            for b in self.ctx.replicas(tp):
                self.replica_states.move((tp[0], tp[1], b), ReplicaState.NEW)
        await self.bring_partitions_online(parts, batch)
        batch.send(self.channel)

    def drop_topic_watch(self, topic: str) -> None:
        cancel = self._topic_watches.pop(topic, None)
        if cancel:
            cancel()

    async def _topic_deletion(self) -> None:
        await deletion.start_deletion(self)

    async def _resume_deletion(self, brokers: set[int]) -> None:
        deletion.resume_deletion(self, brokers)

    async def _stop_replica_result(self, e: ev.StopReplicaResult) -> None:
        await deletion.stop_replica_result(self, e)


def _answer(event: ev.Event, outcome: BaseException) -> None:
    """Fail a request event's future if it is still unanswered (the requester gets
    NOT_CONTROLLER or the error instead of waiting for ever)."""
    fut = getattr(event, "result", None)
    if isinstance(fut, asyncio.Future) and not fut.done():
        fut.set_exception(outcome if isinstance(outcome, Exception) else NotControllerError())
