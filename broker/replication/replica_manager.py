"""ReplicaManager: the partitions this broker hosts, and the data path over them.

* ``become_leader_or_follower`` (``..._paced``: the handler's, yielding to the loop)
  / ``stop_replicas``: LeaderAndIsr and StopReplica, fenced by the controller epoch
  and each partition's leader epoch, one at a time (``state_change_lock``).
* ``appends`` (``broker.replication.leader_appends``): Produce and WriteTxnMarkers.
  acks=0/1 answer once the leader has appended; acks=all parks a DelayedProduce
  until the high watermark passes the batch.
* ``fetch``: Fetch from consumers (below the HW / LSO) and followers (below
  the LEO, updating what the leader knows of them). A fetch short of
  ``min_bytes`` parks a DelayedFetch until data arrives or max wait passes.
  The reads themselves (and the fetch request/result types) are in
  ``broker.replication.fetch_reads``.
* ``fetch_offset_for_timestamp`` (ListOffsets; the lookups are in
  ``broker.replication.offset_lookup``), ``last_offset_for_leader_epoch``
  (OffsetForLeaderEpoch), ``delete_records`` (DeleteRecords).

Purgatory keys are (topic, partition). Whoever moves a partition calls
``partition_changed`` so waiting produces and fetches re-check.

Offline partitions (KIP-112): a partition whose log dir failed is in
``offline_partitions``, not ``partitions`` (Kafka's HostedPartition.Offline; put there
by broker/log_dirs/). Every request for it answers KAFKA_STORAGE_ERROR until the
broker restarts, as does a storage OSError met on the way.

Replication (issue 4) through two seams, no-ops by default (RF 1 needs neither):
* ``fetchers`` (broker.replication.fetcher.ReplicaFetcherManager): on
  LeaderAndIsr, partitions we now lead leave it; partitions whose leader or
  epoch changed are (re)added, to truncate by leader epoch and fetch.
* ``alter_partitions`` (broker.replication.alter_partition_manager): ISR
  changes proposed by ``Partition.maybe_expand_isr`` / ``maybe_shrink_isr``
  (the latter every replica.lag.time.max.ms / 2) go to the controller; the
  answer is applied to the Partition and waiting produces/fetches re-check.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from broker.replication.fetch_reads import (FetchPartitionRequest, FetchPartitionResult, read_all,
                                            probe_partition, valid_follower_position)
from broker.replication.leader_fence import LeaderFence
from broker.replication.offset_lookup import legacy_offsets_before, offset_for_timestamp
from broker.replication.leader_appends import LeaderAppends
from broker.replication.leader_appends import ProduceResult as ProduceResult  # re-exported
from broker.replication.partition import Partition
from broker.replication.partition_isr import PendingIsrChange
from broker.replication.partition_state import NO_TOPIC_ID, PartitionState
from broker.replication.purgatory import DelayedFetch
from coordinator.runtime.purgatory import Purgatory, Timer
from broker.replication.throttle import ReplicationQuota, leader_throttle
from broker.replication.txn_verify import Verifier
from protocol.errors import ErrorCode, KafkaError
from protocol.primitives import uuid_text
from storage.log import wall_clock_ms

if TYPE_CHECKING:
    from broker.metrics.topic_stats import BrokerTopicStats
from storage.log_manager import LogManager

LEADER_AND_ISR_SLICE_S = 0.005    # LeaderAndIsr work between event-loop turns (paced)

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
EPOCH_DURING_DELETE = -2
NO_EPOCH = -1


def topic_id_text(topic_id: Any) -> str:
    """Kafka's Uuid.toString (protocol.primitives.uuid_text)."""
    return uuid_text(topic_id)


# An AlterPartition answer for one partition: (error, leader epoch, isr, partition epoch).
IsrAnswer = Callable[[int, int, tuple[int, ...], int], None]


class FetcherSeam(Protocol):
    """What the ReplicaManager asks of the ReplicaFetcherManager."""

    def add_partitions(self, partitions: Sequence[Partition]) -> None: ...

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None: ...

    def unreachable(self, leader_id: int) -> bool: ...

    async def shutdown(self) -> None: ...


class AlterPartitionSeam(Protocol):
    """What the ReplicaManager asks of the AlterPartitionManager."""

    def submit(self, p: Partition, change: PendingIsrChange, on_answer: IsrAnswer) -> None: ...

    async def shutdown(self) -> None: ...


class NoFetchers:
    def add_partitions(self, partitions: Sequence[Partition]) -> None:
        if partitions:
            log.warning("no replica fetcher: %d follower partitions will not replicate",
                        len(partitions))

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        pass

    def unreachable(self, leader_id: int) -> bool:
        return False

    async def shutdown(self) -> None:
        pass


class ReplicaManager:
    def __init__(self, broker_id: int, logs: LogManager, *, clock: Callable[[], int] = wall_clock_ms,
                 timer: Timer | None = None,
                 min_insync_replicas: Callable[[str], int] = lambda _topic: 1,
                 producer_id_expiration_ms: int = 86_400_000,
                 fetchers: FetcherSeam | None = None,
                 alter_partitions: AlterPartitionSeam | None = None,
                 replica_lag_time_max_ms: int = 30_000) -> None:
        self.broker_id = broker_id
        self.fetchers: FetcherSeam = fetchers or NoFetchers()
        self.verifier: Verifier | None = None    # KIP-890 (coordinator.transaction.verification)
        self.alter_partitions = alter_partitions   # None: the ISR never changes (RF 1)
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.logs = logs
        self.clock = clock
        self.min_insync_replicas = min_insync_replicas  # topic -> min.insync.replicas (topic config)
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.partitions: dict[TopicPartition, Partition] = {}
        self.offline_partitions: set[TopicPartition] = set()   # in a failed log dir
        self.controller_epoch = 0
        self.produce_purgatory = Purgatory("Produce", timer)
        self.fetch_purgatory = Purgatory("Fetch", timer)
        # writes refused while we cannot be sure we lead (ZooKeeper connection lost)
        self.fence = LeaderFence(broker_id)
        # issue 17, replication quotas: the leader side (replication/throttle.py); None: none
        self.leader_quota: ReplicationQuota | None = None
        self.state_change_lock = asyncio.Lock()   # LeaderAndIsr / StopReplica, one at a time
        # deleted logs' files being removed in worker threads (stop_replicas)
        self._purges: set[asyncio.Future[None]] = set()
        self.isr_shrinks = 0        # ISR changes committed (metrics, broker/metrics/)
        self.isr_expands = 0
        self.topic_stats: BrokerTopicStats | None = None   # metrics (broker/metrics/; None: off)
        # Produce and WriteTxnMarkers appends as leader, and the wait for the HW
        self.appends = LeaderAppends(self)

    def partition(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self.partitions.values() if p.is_leader]

    def absent(self, tp: TopicPartition) -> int:
        """The error for a partition not in ``partitions``: KAFKA_STORAGE_ERROR when it
        is offline here, else UNKNOWN_TOPIC_OR_PARTITION."""
        if tp in self.offline_partitions:
            return ErrorCode.KAFKA_STORAGE_ERROR
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def mark_partition_offline(self, tp: TopicPartition) -> Partition | None:
        """Stop hosting ``tp`` because its log dir failed: out of ``partitions`` (its
        role dropped), into ``offline_partitions``; waiting produces and fetches
        re-check (and fail with KAFKA_STORAGE_ERROR). -> the Partition it was."""
        p = self.partitions.pop(tp, None)
        self.offline_partitions.add(tp)
        if p is not None:
            p.leader_id = -1
            p.pending_isr = None
            p.log = None          # its files are released (LogManager.take_dir_offline)
        self.partition_changed(tp)
        return p

    # -- LeaderAndIsr / StopReplica ----------------------------------------------------

    def check_controller_epoch(self, controller_epoch: int) -> int:
        """STALE_CONTROLLER_EPOCH for a request from an older controller, else NONE."""
        if controller_epoch < self.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        return ErrorCode.NONE

    def become_leader_or_follower(self, controller_epoch: int,
                                  states: Sequence[PartitionState]) -> dict[TopicPartition, int]:
        """Apply a LeaderAndIsr request; error per partition.

        A request from an older controller changes nothing (every partition
        STALE_CONTROLLER_EPOCH; the handler also answers it at top level). A
        partition state with a leader epoch not above ours is ignored with
        STALE_CONTROLLER_EPOCH (Kafka, ZooKeeper mode), except to adopt a topic id.
        """
        if self.check_controller_epoch(controller_epoch):
            log.warning("ignoring LeaderAndIsr from controller epoch %d (ours is %d)",
                        controller_epoch, self.controller_epoch)
            return {s.tp: ErrorCode.STALE_CONTROLLER_EPOCH for s in states}
        self.controller_epoch = controller_epoch
        result: dict[TopicPartition, int] = {}
        leaders: list[Partition] = []
        followers: list[Partition] = []
        for state in states:
            result[state.tp] = self._become_one(state, leaders, followers)
        self._log_roles(controller_epoch, *self._take_roles(leaders, followers))
        return result

    async def become_leader_or_follower_paced(self, controller_epoch: int,
                                              states: Sequence[PartitionState],
                                              slice_s: float = LEADER_AND_ISR_SLICE_S
                                              ) -> dict[TopicPartition, int]:
        """``become_leader_or_follower`` giving the event loop a turn after each
        ``slice_s`` of work (Kafka runs it on a request thread, not the network's): a
        new partition opens its files (~1.5 ms), so a topic of hundreds would stall
        every connection. Partitions done take their roles before each pause; this and
        StopReplica hold ``state_change_lock`` (Kafka's replicaStateChangeLock)."""
        async with self.state_change_lock:
            if self.check_controller_epoch(controller_epoch):
                return self.become_leader_or_follower(controller_epoch, states)
            self.controller_epoch = controller_epoch
            result: dict[TopicPartition, int] = {}
            leaders: list[Partition] = []     # roles not taken yet (and counts of taken)
            followers: list[Partition] = []
            led = followed = 0
            loop = asyncio.get_running_loop()
            slice_end = loop.time() + slice_s
            for state in states:
                result[state.tp] = self._become_one(state, leaders, followers)
                if loop.time() >= slice_end:
                    taken = self._take_roles(leaders, followers)
                    led, followed = led + taken[0], followed + taken[1]
                    leaders, followers = [], []
                    await asyncio.sleep(0)
                    slice_end = loop.time() + slice_s
            taken = self._take_roles(leaders, followers)
            self._log_roles(controller_epoch, led + taken[0], followed + taken[1])
            return result

    def _become_one(self, state: PartitionState, leaders: list[Partition],
                    followers: list[Partition]) -> int:
        if state.tp in self.offline_partitions:
            return ErrorCode.KAFKA_STORAGE_ERROR   # the controller's cue
        error = self._become(state, leaders, followers)
        self.fence.leader_and_isr(state.tp)       # the current controller's word, even "as is"
        return error

    def _take_roles(self, leaders: list[Partition], followers: list[Partition]
                    ) -> tuple[int, int]:
        """The partitions made leaders and followers start their roles -> how many."""
        if leaders:
            self.fetchers.remove_partitions(p.tp for p in leaders)
            for p in leaders:
                p.start_follower_clocks()
        if followers:
            # a new leader or epoch: stop fetching at the old one, truncate by epoch, refetch
            self.fetchers.remove_partitions(p.tp for p in followers)
            self.fetchers.add_partitions(followers)
        return len(leaders), len(followers)

    @staticmethod
    def _log_roles(controller_epoch: int, leaders: int, followers: int) -> None:
        if leaders or followers:
            log.info("controller epoch %d: became leader for %d, follower for %d partitions",
                     controller_epoch, leaders, followers)

    def _become(self, state: PartitionState, leaders: list[Partition],
                followers: list[Partition]) -> int:
        p = self.partitions.get(state.tp)
        if p is not None and state.topic_id != NO_TOPIC_ID and p.topic_id not in (NO_TOPIC_ID, state.topic_id):
            log.error("%s-%d: topic id %s in the request does not match ours %s",
                      state.topic, state.partition, state.topic_id, p.topic_id)
            return ErrorCode.INCONSISTENT_TOPIC_ID
        if p is not None and state.leader_epoch <= p.leader_epoch:
            if state.leader_epoch == p.leader_epoch and p.topic_id == NO_TOPIC_ID != state.topic_id:
                p.topic_id = state.topic_id
                return self._attach_or_offline(p, state)
            log.warning("%s-%d: ignoring leader epoch %d, ours is %d", state.topic, state.partition,
                        state.leader_epoch, p.leader_epoch)
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if self.broker_id not in state.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if p is None:
            p = Partition(state.topic, state.partition, self.broker_id, self.clock)
            if self.alter_partitions is not None:
                p.isr_sink = partial(self._submit_isr_change, p)
            self.partitions[state.tp] = p
        error = self._attach_or_offline(p, state, become=True)
        if error:
            return error
        (leaders if state.leader == self.broker_id else followers).append(p)
        self.partition_changed(state.tp)
        return ErrorCode.NONE

    def _attach_or_offline(self, p: Partition, state: PartitionState, become: bool = False) -> int:
        """Attach the log (and with ``become`` take the role); a storage OSError (its
        log dir is offline or just failed) marks the partition offline, as Kafka's
        markPartitionOffline, and answers KAFKA_STORAGE_ERROR."""
        try:
            self._attach(p, state)
            if become and state.leader == self.broker_id:
                p.make_leader(state)
            elif become:
                p.make_follower(state)
        except OSError as e:
            log.error("%s-%d: its log is unavailable: %s", state.topic, state.partition, e)
            self.mark_partition_offline(state.tp)
            return ErrorCode.KAFKA_STORAGE_ERROR
        return ErrorCode.NONE

    def _attach(self, p: Partition, state: PartitionState) -> None:
        topic_id = topic_id_text(state.topic_id) if state.topic_id != NO_TOPIC_ID else None
        plog = self.logs.get_or_create_log(state.topic, state.partition, topic_id=topic_id,
                                           is_new=state.is_new)
        if p.log is not plog:
            p.attach_log(plog, self.producer_id_expiration_ms)

    def stop_replicas(self, controller_epoch: int,
                      entries: Iterable[tuple[str, int, bool] | tuple[str, int, bool, int]]
                      ) -> dict[TopicPartition, int]:
        """StopReplica: stop hosting partitions, deleting their logs when asked.

        Entries are (topic, partition, delete[, leader_epoch]); a leader epoch
        below ours is FENCED_LEADER_EPOCH (-1 = none given, -2 = topic deletion).
        """
        entries = list(entries)
        if self.check_controller_epoch(controller_epoch):
            return {(e[0], e[1]): ErrorCode.STALE_CONTROLLER_EPOCH for e in entries}
        self.controller_epoch = controller_epoch
        result: dict[TopicPartition, int] = {}
        doomed: list[str] = []          # detached log dirs, removed off the event loop
        for entry in entries:
            topic, index, delete = entry[0], entry[1], entry[2]
            epoch = entry[3] if len(entry) > 3 else NO_EPOCH
            tp = (topic, index)
            p = self.partitions.get(tp)
            if tp in self.offline_partitions:
                result[tp] = ErrorCode.KAFKA_STORAGE_ERROR     # as Kafka: nothing to stop
                continue
            if p is not None and epoch not in (NO_EPOCH, EPOCH_DURING_DELETE) and epoch < p.leader_epoch:
                result[tp] = ErrorCode.FENCED_LEADER_EPOCH
                continue
            self.partitions.pop(tp, None)
            self.fetchers.remove_partitions([tp])
            if p is not None:
                p.leader_id = -1
                p.pending_isr = None
            self.partition_changed(tp)
            if delete:
                try:
                    detached = self.logs.detach_log(topic, index)
                    if detached is not None:
                        doomed.append(detached)
                except OSError as e:
                    log.error("%s-%d: cannot delete its log: %s", topic, index, e)
                    result[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
            result[tp] = ErrorCode.NONE
        if doomed:
            self._purge_in_background(doomed)
            self._forget_topic_metrics({e[0] for e in entries if e[2]})
        if result:
            log.info("stopped %d replicas (%d deleted)", len(result),
                     sum(1 for e in entries if e[2]))
        return result

    def _forget_topic_metrics(self, deleted: set[str]) -> None:
        """A topic none of whose partitions is hosted here any more loses its
        per-topic metric series, as Kafka's brokerTopicStats.removeMetrics (its
        counts stay in the broker-wide totals)."""
        if self.topic_stats is None:
            return
        hosted = {t for t, _ in self.partitions}
        for topic in deleted - hosted:
            self.topic_stats.remove_topic(topic)

    def _purge_in_background(self, doomed: list[str]) -> None:
        """Remove detached log dirs and rewrite the checkpoints in a worker thread:
        rmtree and the checkpoints' fsyncs took the event loop for 50-125 ms under
        the fuzzer's topic churn. A crash before it ends leaves ``-delete`` dirs,
        which start-up removes. No running loop (unit tests): at once."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.logs.purge_deleted(doomed)
            return
        future = loop.run_in_executor(None, self.logs.purge_deleted, doomed)
        self._purges.add(future)
        future.add_done_callback(self._purge_done)

    def _purge_done(self, future: asyncio.Future[None]) -> None:
        self._purges.discard(future)
        if not future.cancelled() and future.exception() is not None:
            log.error("removing deleted logs failed: %s", future.exception())

    # -- ISR changes (AlterPartition) ----------------------------------------------------

    def _submit_isr_change(self, p: Partition, change: PendingIsrChange) -> None:
        assert self.alter_partitions is not None

        def on_answer(error: int, leader_epoch: int, isr: tuple[int, ...], partition_epoch: int) -> None:
            if self.partitions.get(p.tp) is not p:
                return
            was_pending = p.pending_isr is change
            moved = p.on_alter_partition_answer(change, error, leader_epoch, isr, partition_epoch)
            if was_pending and not error and p.pending_isr is None \
                    and p.partition_epoch == partition_epoch:
                # committed (metrics: IsrShrinksPerSec / IsrExpandsPerSec)
                if change.is_shrink:
                    self.isr_shrinks += 1
                else:
                    self.isr_expands += 1
            if moved:
                self.partition_changed(p.tp)
            else:  # a committed shrink may complete waiting acks=all with an error
                self.produce_purgatory.check_and_complete(p.tp)

        self.alter_partitions.submit(p, change, on_answer)

    def maybe_shrink_isr(self) -> int:
        """The periodic ISR check (every replica.lag.time.max.ms / 2): how many
        partitions proposed a shrink."""
        return sum(1 for p in list(self.partitions.values())
                   if p.maybe_shrink_isr(self.replica_lag_time_max_ms))

    def sweep_fenced(self) -> int:
        """The periodic fence sweep (every ``fence.quiet_ms`` / 2 while the fence is
        up): acks=all produces waiting on a partition we now fence are answered
        REQUEST_TIMED_OUT (``LeaderAppends._enough_replicas``). A partition
        becomes fenced by time passing (its followers fall quiet), not by an event
        the purgatory hears of. -> partitions swept."""
        fence = self.fence
        if not fence.up:
            return 0
        now, swept = self.clock(), 0
        for p in self.leader_partitions():
            if fence.fenced(p.tp, p, now):
                self.produce_purgatory.check_and_complete(p.tp)
                swept += 1
        return swept

    async def stop_replication(self) -> None:
        """Stop the fetchers and the AlterPartition sender (broker shutdown)."""
        await self.fetchers.shutdown()
        if self.alter_partitions is not None:
            await self.alter_partitions.shutdown()

    def log_starts_moved(self) -> None:
        """Retention moved log start offsets: fetch sessions must look again (their
        answers carry the log start; see ``fetch``'s ``unchanged_since``)."""
        for p in self.partitions.values():
            p.mark_changed()

    def partition_changed(self, tp: TopicPartition) -> None:
        """Data, HW or role changed: let waiting fetches and produces re-check."""
        p = self.partitions.get(tp)
        if p is not None:
            p.mark_changed()
        self.fetch_purgatory.check_and_complete(tp)
        self.produce_purgatory.check_and_complete(tp)

    # -- Produce -------------------------------------------------------------------------

    # -- Fetch ---------------------------------------------------------------------------

    async def fetch(self, replica_id: int, max_wait_ms: int, min_bytes: int, max_bytes: int,
                    isolation: int, entries: dict[TopicPartition, FetchPartitionRequest], *,
                    hard_max_bytes_limit: bool = False,
                    unchanged_since: dict[TopicPartition, int] | None = None
                    ) -> dict[TopicPartition, FetchPartitionResult]:
        """Read every partition in request order; wait (purgatory) while short of ``min_bytes``.

        ``max_bytes`` bounds the whole response; unless ``hard_max_bytes_limit``
        (Fetch v0-2) the first non-empty partition returns at least one whole
        batch even above the limits (Kafka's "at least one batch" rule).

        ``unchanged_since`` (incremental fetch sessions): tp -> the partition's
        ``change_seq`` when the session last found its fetcher caught up, for
        partitions whose fetch position has not changed since. While the number
        is the same nothing new can be answered: such a partition is left out of
        the result unread (a follower's caught-up time is refreshed), yet still
        watched, so new data wakes the fetch. This keeps a replica fetch over
        1,000 mostly idle partitions at the cost of the few that changed.
        """
        known = unchanged_since or {}
        partitions = self.partitions
        throttle = leader_throttle(self.leader_quota, replica_id)   # issue 17: replication quota
        skip: set[TopicPartition] = set()      # unchanged since the session last looked
        if replica_id >= 0:
            now = self.clock()
            for tp, req in entries.items():
                p = partitions.get(tp)
                if p is None:
                    continue
                if known.get(tp) == p.change_seq and p.refresh_caught_up_follower(replica_id, now):
                    skip.add(tp)
                    continue
                if (valid_follower_position(p, req)
                        and p.update_follower_fetch_state(replica_id, req.fetch_offset)):
                    self.partition_changed(tp)
        elif known:
            skip = {tp for tp, seq in known.items()
                    if (p := partitions.get(tp)) is not None and p.change_seq == seq}

        def read() -> dict[TopicPartition, FetchPartitionResult]:
            """The delayed read: partitions changed while the fetch waited are read."""
            still = {tp for tp in skip
                     if (p := partitions.get(tp)) is not None and p.change_seq == known[tp]}
            return self._offline_answers(read_all(partitions, replica_id, max_bytes, isolation,
                                                  entries, hard_max_bytes_limit, still, throttle))

        results = self._offline_answers(read_all(partitions, replica_id, max_bytes, isolation,
                                                 entries, hard_max_bytes_limit, skip, throttle))
        if (max_wait_ms <= 0 or not entries or sum(r.size for r in results.values()) >= min_bytes
                or any(r.error or r.diverging_epoch for r in results.values())):
            return results

        def probe(tp: TopicPartition) -> tuple[int, bool]:
            return probe_partition(partitions.get(tp), entries[tp], replica_id, isolation,
                                   min_bytes, throttle)

        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        measured: dict[Hashable, int] = dict.fromkeys(entries, 0)
        measured.update((tp, r.size) for tp, r in results.items())
        op = DelayedFetch(max_wait_ms, min_bytes, measured, probe, read, future)
        self.fetch_purgatory.watch(op, list(entries))   # just measured: short of min_bytes
        return await future

    def _offline_answers(self, results: dict[TopicPartition, FetchPartitionResult]
                         ) -> dict[TopicPartition, FetchPartitionResult]:
        """Fetch answers KAFKA_STORAGE_ERROR for the offline partitions among ``results``."""
        if self.offline_partitions:
            for tp in results.keys() & self.offline_partitions:
                results[tp] = FetchPartitionResult(ErrorCode.KAFKA_STORAGE_ERROR)
        return results

    # -- ListOffsets / OffsetForLeaderEpoch / DeleteRecords ------------------------------

    def leader_partition(self, tp: TopicPartition, current_leader_epoch: int = -1) -> Partition:
        """The partition if we lead it at the caller's epoch; KafkaError otherwise."""
        p = self.partitions.get(tp)
        if p is None:
            raise KafkaError(self.absent(tp))
        if not p.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        error = p.check_leader_epoch(current_leader_epoch)
        if error:
            raise KafkaError(error)
        return p

    def fetch_offset_for_timestamp(self, tp: TopicPartition, timestamp: int, isolation: int | None,
                                   current_leader_epoch: int = -1) -> tuple[int, int, int]:
        """(offset, timestamp, leader epoch) for ListOffsets from the partition we lead
        at ``current_leader_epoch`` (``offset_lookup.offset_for_timestamp``)."""
        return offset_for_timestamp(self.leader_partition(tp, current_leader_epoch), timestamp,
                                    isolation)

    def legacy_offsets_before(self, tp: TopicPartition, timestamp: int, max_num: int,
                              from_consumer: bool) -> list[int]:
        """ListOffsets v0 from the partition we lead (``offset_lookup.legacy_offsets_before``)."""
        return legacy_offsets_before(self.leader_partition(tp), timestamp, max_num, from_consumer,
                                     self.clock)

    def last_offset_for_leader_epoch(self, tp: TopicPartition, current_leader_epoch: int,
                                     leader_epoch: int) -> tuple[int, int, int]:
        """(error, epoch, end offset) for OffsetForLeaderEpoch (leader only)."""
        p = self.partitions.get(tp)
        if p is None:
            return self.absent(tp), -1, -1
        return p.last_offset_for_leader_epoch(current_leader_epoch, leader_epoch, True)

    def delete_records(self, tp: TopicPartition, offset: int) -> tuple[int, int]:
        """(error, low watermark): move the log start up to ``offset`` (-1 = the HW)."""
        try:
            p = self.leader_partition(tp)
        except KafkaError as e:
            return e.code, -1
        plog = p.local_log()
        target = p.high_watermark if offset == -1 else offset
        if target < 0 or target > p.high_watermark:
            return ErrorCode.OFFSET_OUT_OF_RANGE, -1
        if plog.maybe_increment_log_start_offset(target):
            log.info("%s-%d: log start offset moved to %d by DeleteRecords", tp[0], tp[1], target)
            self.partition_changed(tp)
        return ErrorCode.NONE, plog.log_start_offset

    # -- background work (the broker schedules these) ------------------------------------

    def remove_expired_producers(self) -> int:
        now = self.clock()
        return sum(p.producers.remove_expired(now, self.producer_id_expiration_ms)
                   for p in self.partitions.values())

    def shutdown(self) -> None:
        """Answer every parked request (they see the partitions as they are now)."""
        self.fetch_purgatory.complete_all()
        self.produce_purgatory.complete_all()

