"""Followers: one ReplicaFetcher task per source broker (Kafka ``ReplicaFetcherThread``).

The ReplicaFetcherManager keeps one fetcher per leader broker; each batches
every partition this broker follows from that leader into one request.

Theory of operation, per partition (``PartitionFetchState``):

1. TRUNCATING (on becoming follower, KIP-101/279): ask the leader
   OffsetForLeaderEpoch(our latest epoch E). The leader answers the largest
   epoch L <= E it knows and where L ends. If we have L too, truncate to
   min(leader's end of L, our end of L, our LEO) and fetch. If we do not
   (our epochs jump over L), truncate to where our largest epoch below L ends
   and ask again with that epoch. An empty log starts fetching at once; a
   log with data but no epochs (its leader-epoch checkpoint was lost) is cut
   at its HW, the pre-KIP-101 rule, as the only safe guess.
   Never truncate to our own high watermark: it lags the leader's by a
   fetch round trip, and truncating to it is what lost acknowledged records
   in Kafka before KIP-101 (a restarted follower dropped records the leader
   had already committed, then became leader).
2. FETCHING: Fetch(v12, ReplicaId = us) at our LEO with LastFetchedEpoch =
   our latest epoch and CurrentLeaderEpoch = the epoch we follow. The
   leader's batches are appended as they are (offsets and epochs kept; the
   leader-epoch cache follows them); our HW = min(leader's HW, our LEO),
   only moving up. A DivergingEpoch in the answer is an epoch answer as in
   step 1 (truncate, then go on fetching).
3. OFFSET_OUT_OF_RANGE: if the leader's LEO is below ours, truncate to it
   (only an unclean election leaves such a tail); else the leader's log
   start passed our LEO: restart our log empty at the leader's log start.
4. Fencing errors (FENCED/UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER,
   UNKNOWN_TOPIC_OR_PARTITION) and others delay the partition by the
   backoff; the controller's next LeaderAndIsr re-adds it at a new epoch.
   A local write that fails (append, truncation: the log's guard took its dir
   offline) delays only that partition, as KAFKA_STORAGE_ERROR; the broker's
   log-dir failure handling then removes it from the fetcher.

Every answer is checked against the partition's state after the await: a
partition removed or re-added meanwhile (new epoch) ignores it.

Follower replication quota (replication/throttle.py, Kafka's
``shouldFollowerThrottle``): a partition that the quota throttles and that is not
in sync by our own measure (``in_sync``: after the last answer our LEO had reached
the leader's high watermark) is left out of the Fetch while the quota is exceeded,
until the rate may be back under its bound (at most the back-off); the bytes
appended for throttled partitions are recorded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from client import KafkaConnectionError
from broker.tasks import cancel_and_wait
from broker.replication.leader_endpoint import (EpochEndOffset, FetchedPartition,
                                                FetchRequestPartition, LeaderEndpoint,
                                                LeaderUnknown)
from broker.replication.partition import Partition
from broker.replication.throttle import ReplicationQuota
from protocol.errors import ErrorCode
from storage.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_OFFSET
from storage.log import wall_clock_ms

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
UNKNOWN_LEADER_RETRY_MS = 50
# a request to the leader waiting this long is taken as lost when a LeaderAndIsr arrives
STUCK_REQUEST_S = 3.0
TRUNCATING = "truncating"
FETCHING = "fetching"


@dataclass(slots=True)
class PartitionFetchState:
    partition: Partition
    leader_epoch: int              # the epoch we follow at (CurrentLeaderEpoch)
    state: str = TRUNCATING
    delayed_until_ms: int = 0
    # the Fetch request entry for our log as it is; None after anything here changed
    # the log (append, truncation, log start). Rebuilding 1,000 entries per round
    # trip was a third of a follower's time; the fetcher is the one writer of a
    # follower's log, so it knows when the entry goes stale. (Retention on the
    # follower moving its log start is the exception: that hint goes out with the
    # next append.)
    request: FetchRequestPartition | None = None
    # follower quota: our LEO had reached the leader's HW at the last answer
    in_sync: bool = False
    throttled_until_ms: int = 0     # left out of fetches until then (quota exceeded)

    @property
    def tp(self) -> TopicPartition:
        return self.partition.tp


def follower_end_offset_for(p: Partition, epoch: int) -> tuple[int, int] | None:
    """(our largest epoch <= ``epoch``, where it ends in our log), None if we have none."""
    plog = p.local_log()
    earliest = plog.leader_epoch_cache.earliest_entry
    if earliest is None or earliest[0] > epoch:
        return None
    ours, end = plog.leader_epoch_cache.end_offset_for(epoch, plog.log_end_offset)
    if ours == UNDEFINED_EPOCH:  # epoch above our latest: our latest ends at our LEO
        return plog.leader_epoch_cache.latest_epoch, plog.log_end_offset
    return ours, end


def truncation_for(p: Partition, leader: EpochEndOffset) -> tuple[int | None, bool]:
    """(offset to truncate to or None for no truncation, truncation complete) given
    the leader's answer about our latest epoch (Kafka ``getOffsetTruncationState``)."""
    leo = p.log_end_offset
    if leader.end_offset == UNDEFINED_OFFSET:
        # the leader has no epoch information (its log is empty): no truncation here;
        # a fetch above its log end answers OFFSET_OUT_OF_RANGE, handled there
        return None, True
    if leader.leader_epoch == UNDEFINED_EPOCH:
        return min(leader.end_offset, leo), True
    ours = follower_end_offset_for(p, leader.leader_epoch)
    if ours is None:  # we know no epoch <= the leader's: nothing of ours is confirmed past its end
        return min(leader.end_offset, leo), True
    our_epoch, our_end = ours
    if our_epoch != leader.leader_epoch:
        # our epochs jump over the leader's: cut back to the end of our epoch below it, ask again
        return min(our_end, leo), False
    return min(our_end, leader.end_offset, leo), True


class ReplicaFetcher:
    """Fetches every partition we follow from one leader broker; see the module docstring."""

    def __init__(self, broker_id: int, endpoint: LeaderEndpoint, *,
                 clock: Callable[[], int] = wall_clock_ms, max_partition_bytes: int = 1 << 20,
                 backoff_ms: int = 1000, quota: ReplicationQuota | None = None) -> None:
        self.broker_id = broker_id
        self.endpoint = endpoint
        self.quota = quota                  # the follower replication quota
        self.leader_id = endpoint.leader_id
        self.clock = clock
        self.max_partition_bytes = max_partition_bytes
        self.backoff_ms = backoff_ms
        self.partitions: dict[TopicPartition, PartitionFetchState] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._request_started: float | None = None     # monotonic; a round in flight
        self._closing: set[asyncio.Task[None]] = set()
        # the last round failed on the connection (reset, refused, timed out) and none
        # has gone through since: FindCoordinator does not name this leader meanwhile
        self.unreachable = False

    def __repr__(self) -> str:
        return f"ReplicaFetcher(broker {self.broker_id} <- {self.leader_id}, {len(self.partitions)} partitions)"

    # -- membership --------------------------------------------------------------------

    def add(self, p: Partition) -> None:
        self.partitions[p.tp] = PartitionFetchState(p, p.leader_epoch)
        self._wake.set()
        self._drop_connection_if_stuck()

    def _drop_connection_if_stuck(self) -> None:
        """Called when a LeaderAndIsr (re)makes us follower of this leader: if our
        request to it has been waiting for STUCK_REQUEST_S (far past the leader's
        max wait), the connection most likely died in a network partition -- an
        established TCP connection whose packets were dropped stays open until the
        request times out (request.timeout.ms, 30 s), and the new epoch's fetches
        would wait behind it (seen: 6 s of NOT_ENOUGH_REPLICAS after a heal). The
        controller just reached us, so the network is back: close the connection;
        the loop reconnects after its back-off. Kafka's fetcher waits out the timeout."""
        started = self._request_started
        if (self._task is None or started is None
                or time.monotonic() - started < STUCK_REQUEST_S):
            return
        log.info("fetcher for broker %d: a request has waited %.1f s; reconnecting",
                 self.leader_id, time.monotonic() - started)
        self._request_started = None
        task = asyncio.get_running_loop().create_task(self.endpoint.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def remove(self, tp: TopicPartition) -> bool:
        return self.partitions.pop(tp, None) is not None

    def _current(self, s: PartitionFetchState) -> bool:
        """Whether ``s`` is still the state of its partition (nothing replaced it
        while we awaited the leader) and the partition still follows our leader."""
        p = s.partition
        return (self.partitions.get(s.tp) is s and p.leader_id == self.leader_id
                and p.leader_epoch == s.leader_epoch and p.log is not None)

    def _delay(self, s: PartitionFetchState, error: int) -> None:
        s.delayed_until_ms = self.clock() + self.backoff_ms
        log.info("%s-%d: fetch from broker %d failed with %s; retrying in %d ms", s.tp[0], s.tp[1],
                 self.leader_id, ErrorCode.from_code(error).name, self.backoff_ms)

    # -- the loop ----------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"replica-fetcher-{self.leader_id}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)
        await self.endpoint.close()

    async def _run(self) -> None:
        while True:
            try:
                worked = await self.run_once()
                if worked:
                    self.unreachable = False
            except asyncio.CancelledError:
                raise
            except LeaderUnknown:  # UpdateMetadata follows LeaderAndIsr closely: retry soon
                await asyncio.sleep(min(self.backoff_ms, UNKNOWN_LEADER_RETRY_MS) / 1000)
                continue
            except (KafkaConnectionError, OSError, asyncio.TimeoutError) as e:
                log.warning("fetcher for broker %d: %s; retrying in %d ms", self.leader_id, e,
                            self.backoff_ms)
                self.unreachable = True
                await self.endpoint.close()
                await asyncio.sleep(self.backoff_ms / 1000)
                continue
            except Exception:
                log.exception("fetcher for broker %d failed; retrying", self.leader_id)
                await asyncio.sleep(self.backoff_ms / 1000)
                continue
            if not worked:
                await self._idle()

    async def _idle(self) -> None:
        """Wait for a new partition, or until the first delayed one may go again."""
        self._wake.clear()
        now = self.clock()
        delays = [max(s.delayed_until_ms, s.throttled_until_ms) - now
                  for s in self.partitions.values()]
        timeout = max(min(delays), 1) / 1000 if delays else None
        try:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for swallows a cancel
            # that races with the wake-up, and stop() then waited for ever
            async with asyncio.timeout(timeout):
                await self._wake.wait()
        except TimeoutError:
            pass

    async def run_once(self) -> bool:
        """One round: the epoch requests of partitions still truncating, then one
        Fetch for the rest. False when nothing was ready (all delayed or none)."""
        now = self.clock()
        truncating = [s for s in self.partitions.values()
                      if s.delayed_until_ms <= now and s.state == TRUNCATING]
        self._request_started = time.monotonic()
        try:
            if truncating:
                await self._truncate(truncating)
            now = self.clock()
            fetching = self._unthrottled(
                [s for s in self.partitions.values()
                 if s.delayed_until_ms <= now and s.state == FETCHING], now)
            if fetching:
                self._request_started = time.monotonic()
                await self._fetch(fetching)
        finally:
            self._request_started = None
        return bool(truncating or fetching)

    def _unthrottled(self, states: list[PartitionFetchState], now: int
                     ) -> list[PartitionFetchState]:
        """``states`` less those the follower quota holds back now (each then waits
        until the rate may be under the bound again, at most the back-off)."""
        quota = self.quota
        if quota is None or quota.unlimited:
            return states
        out = []
        wait_ms: int | None = None
        for s in states:
            if s.throttled_until_ms > now:
                continue
            if not s.in_sync and quota.is_throttled(s.tp):
                if wait_ms is None:
                    wait_ms = min(quota.ms_until_within(), self.backoff_ms)
                if wait_ms > 0:
                    s.throttled_until_ms = now + wait_ms
                    continue
            out.append(s)
        return out

    # -- step 1: truncation by leader epoch -----------------------------------------------

    async def _truncate(self, states: list[PartitionFetchState]) -> None:
        ask: dict[TopicPartition, tuple[int, int]] = {}
        asked: dict[TopicPartition, PartitionFetchState] = {}
        for s in states:
            p = s.partition
            epoch = p.latest_epoch
            if epoch < 0:
                if p.log_end_offset > p.log_start_offset:
                    # data but no epoch information (a lost leader-epoch checkpoint): the
                    # pre-KIP-101 fallback, the one case we cut at our HW; the leader refills it
                    try:
                        p.truncate_to(max(p.high_watermark, p.log_start_offset))
                    except OSError as e:
                        self._storage_failed(s, e)
                        continue
                    s.request = None
                s.state = FETCHING
                continue
            ask[s.tp] = (s.leader_epoch, epoch)
            asked[s.tp] = s
        if not ask:
            return
        answers = await self.endpoint.fetch_epoch_end_offsets(ask)
        for tp, s in asked.items():
            answer = answers.get(tp)
            if answer is None or not self._current(s):
                continue
            if answer.error:
                self._delay(s, answer.error)
                continue
            try:
                self._apply_epoch_answer(s, answer)
            except OSError as e:
                self._storage_failed(s, e)

    def _apply_epoch_answer(self, s: PartitionFetchState, answer: EpochEndOffset) -> None:
        p = s.partition
        s.request = None
        offset, done = truncation_for(p, answer)
        if offset is not None and offset < p.log_end_offset:
            log.info("%s-%d: leader %d says epoch %d ends at %d; truncating from LEO %d to %d",
                     p.topic, p.partition, self.leader_id, answer.leader_epoch, answer.end_offset,
                     p.log_end_offset, offset)
            p.truncate_to(offset)
        elif offset is not None and offset == p.log_end_offset:
            p.truncate_to(offset)       # no record goes; epochs that start at the LEO do
        s.state = FETCHING if done else TRUNCATING

    # -- step 2: fetch -----------------------------------------------------------------

    async def _fetch(self, states: list[PartitionFetchState]) -> None:
        request: dict[TopicPartition, FetchRequestPartition] = {}
        for s in states:
            if s.request is None:
                p = s.partition
                s.request = FetchRequestPartition(
                    p.log_end_offset, s.leader_epoch, p.latest_epoch, p.log_start_offset,
                    self.max_partition_bytes)
            request[s.tp] = s.request
        answers = await self.endpoint.fetch(request)
        for tp, answer in answers.items():
            fetched = self.partitions.get(tp)
            sent = request.get(tp)
            if (fetched is None or sent is None or not self._current(fetched)
                    or fetched.state != FETCHING):
                continue
            if fetched.partition.log_end_offset != sent.fetch_offset:
                continue  # our log moved meanwhile; this answer is for an old offset
            try:
                await self._apply_fetch_answer(fetched, answer)
            except OSError as e:
                self._storage_failed(fetched, e)

    def _storage_failed(self, s: PartitionFetchState, error: OSError) -> None:
        """A write to our copy failed (its log dir is offline): delay this partition
        only; the log-dir failure handling takes it out of the fetcher."""
        log.error("%s-%d: local log write failed: %s", s.tp[0], s.tp[1], error)
        s.request = None
        self._delay(s, ErrorCode.KAFKA_STORAGE_ERROR)

    async def _apply_fetch_answer(self, s: PartitionFetchState, answer: FetchedPartition) -> None:
        p = s.partition
        s.request = None
        if answer.error == ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._handle_out_of_range(s)
            return
        if answer.error:
            self._delay(s, answer.error)
            return
        if answer.diverging_epoch is not None:
            self._apply_epoch_answer(s, EpochEndOffset(ErrorCode.NONE, *answer.diverging_epoch))
            return
        size = len(answer.records)
        if size:
            try:
                p.append_records_as_follower(answer.records)
            except OSError:
                raise                # _storage_failed
            except Exception:
                log.exception("%s-%d: cannot append the leader's records at %d", p.topic,
                              p.partition, p.log_end_offset)
                self._delay(s, ErrorCode.KAFKA_STORAGE_ERROR)
                return
            if self.quota is not None and self.quota.is_throttled(s.tp):
                self.quota.record(size)
        s.in_sync = p.log_end_offset >= answer.high_watermark
        p.update_follower_high_watermark(answer.high_watermark)
        if answer.log_start_offset >= 0:
            p.maybe_increment_follower_log_start_offset(answer.log_start_offset)

    async def _handle_out_of_range(self, s: PartitionFetchState) -> None:
        """Step 3: our LEO is outside the leader's [log start, LEO]."""
        p = s.partition
        s.request = None
        error, leader_end = await self.endpoint.fetch_latest_offset(s.tp, s.leader_epoch)
        if not self._current(s):
            return
        if error:
            self._delay(s, error)
            return
        if leader_end < p.log_end_offset:
            log.warning("%s-%d: leader %d's log ends at %d, below our %d; truncating",
                        p.topic, p.partition, self.leader_id, leader_end, p.log_end_offset)
            p.truncate_to(leader_end)
            return
        error, leader_start = await self.endpoint.fetch_earliest_offset(s.tp, s.leader_epoch)
        if not self._current(s):
            return
        if error:
            self._delay(s, error)
            return
        if leader_start > p.log_end_offset:
            p.truncate_fully_and_start_at(leader_start)


class ReplicaFetcherManager:
    """One ReplicaFetcher per leader broker (Kafka ``ReplicaFetcherManager``).

    ``endpoint_factory(leader_id)`` makes the LeaderEndpoint for a new
    fetcher. With ``autostart`` (the broker) each fetcher runs as an asyncio
    task; without it (tests) nothing runs until ``run_once`` is awaited.
    """

    def __init__(self, broker_id: int, endpoint_factory: Callable[[int], LeaderEndpoint], *,
                 clock: Callable[[], int] = wall_clock_ms, max_partition_bytes: int = 1 << 20,
                 backoff_ms: int = 1000, autostart: bool = True,
                 quota: ReplicationQuota | None = None) -> None:
        self.broker_id = broker_id
        self.endpoint_factory = endpoint_factory
        self.quota = quota      # the follower replication quota, shared by the fetchers
        self.clock = clock
        self.max_partition_bytes = max_partition_bytes
        self.backoff_ms = backoff_ms
        self.autostart = autostart
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    def set_quota(self, quota: ReplicationQuota | None) -> None:
        """The follower replication quota, for every fetcher now and later."""
        self.quota = quota
        for fetcher in self.fetchers.values():
            fetcher.quota = quota

    def add_partitions(self, partitions: Sequence[Partition]) -> None:
        """Start following each partition from its current leader (truncating first)."""
        for p in partitions:
            if p.leader_id < 0 or p.leader_id == self.broker_id:
                continue  # leaderless: the controller will tell us the next leader
            fetcher = self.fetchers.get(p.leader_id)
            if fetcher is None:
                fetcher = ReplicaFetcher(self.broker_id, self.endpoint_factory(p.leader_id),
                                         clock=self.clock,
                                         max_partition_bytes=self.max_partition_bytes,
                                         backoff_ms=self.backoff_ms, quota=self.quota)
                self.fetchers[p.leader_id] = fetcher
                if self.autostart:
                    fetcher.start()
            fetcher.add(p)

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """Stop fetching these partitions; a fetcher left idle is stopped."""
        touched = set()
        for tp in tps:
            for leader_id, fetcher in self.fetchers.items():
                if fetcher.remove(tp):
                    touched.add(leader_id)
        for leader_id in touched:
            fetcher = self.fetchers[leader_id]
            if not fetcher.partitions:
                del self.fetchers[leader_id]
                if fetcher._task is not None:
                    task = asyncio.get_running_loop().create_task(fetcher.stop())
                    self._stopping.add(task)
                    task.add_done_callback(self._stopping.discard)

    def unreachable(self, leader_id: int) -> bool:
        """Whether our fetcher from ``leader_id`` last failed on its connection (a
        killed or cut-off leader, before ZooKeeper drops its session); False when we
        fetch nothing from it."""
        fetcher = self.fetchers.get(leader_id)
        return fetcher is not None and fetcher.unreachable

    def fetcher_for(self, tp: TopicPartition) -> ReplicaFetcher | None:
        return next((f for f in self.fetchers.values() if tp in f.partitions), None)

    async def shutdown(self) -> None:
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        await asyncio.gather(*(f.stop() for f in fetchers), *self._stopping,
                             return_exceptions=True)
