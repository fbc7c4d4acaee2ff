"""ConsumerGroupCoordinator: the asyncio glue of KIP-848 consumer groups.

It lives inside the classic GroupCoordinator (``classic.consumer``) and shares its
ownership of ``__consumer_offsets``: a group is served here while the classic
coordinator serves its partition (``classic.status``: NOT_COORDINATOR /
COORDINATOR_LOAD_IN_PROGRESS otherwise), loaded with it and unloaded with it.

Theory of operation:

1. One writer. ``groups`` (group id -> model.ConsumerGroup) changes only by
   ``replay.replay`` of records that were written: a heartbeat runs the pure
   ``group_logic.heartbeat`` on the current state, writes the records it returns
   as one batch (acks=-1, like the classic group-metadata write; errors mapped as
   the classic ``group_write_error``, a timeout as COORDINATOR_NOT_AVAILABLE),
   then replays them and answers. Nothing is answered or applied before the
   write succeeded, so a failover never loses what a member was told; what is
   replayed is decoded back from the written bytes, as a load will decode it.
2. One request at a time per group: everything that reads-then-writes a group
   (heartbeats, timers, metadata refresh, deletion, migration) runs under the
   group's asyncio.Lock (``locked``), so each computation sees the state the
   previous write left.
3. Timers, as Kafka: every member has a session timer (the broker's
   group.consumer.session.timeout.ms, or a classic member's own) re-armed by
   each heartbeat; at expiry the member is fenced (``fence_member``: its
   records' tombstones and a group epoch bump). A member entering
   UNREVOKED_PARTITIONS gets a rebalance timer (its rebalance timeout); if it
   has not revoked by then (same epoch, still revoking) it is fenced too.
4. Loading: loader.LoadedPartition replays the consumer group records of a
   partition (record_codec + replay) in log order; ``install`` adopts the
   groups as they are (no epoch bump: no rebalance) and arms fresh session
   timers and the rebalance timers of revoking members. ``unload`` drops the
   partition's groups and their timers (the next request answers
   NOT_COORDINATOR via ``classic.status``).
5. Topics: ``topics`` is a TopicView over the metadata cache; after every
   metadata update (``on_metadata_update``) a changed view re-evaluates every
   group with ``group_logic.refresh_metadata`` (regexes re-resolved, deleted /
   created / grown topics: an epoch bump when the group's subscribed metadata
   changed).
6. One group id space with classic groups: ``groups`` is the consumer view of the
   classic coordinator's GroupMap (group_map.py: an id names one group of one
   kind), and committed offsets are the coordinator's ``committed``, keyed by group
   id whatever its kind (committed_offsets.py); the classic request paths ask
   ``classic_*`` here first (admin_ops.py has the offsets and admin side). A
   heartbeat for the id of an *empty* classic group replaces it (its GroupMetadata
   tombstone, when it ever had a generation, goes in the same batch; it leaves the
   map before the new group is replayed; the offsets stay); a
   *non-empty* classic group is upgraded by migration.py when the policy allows,
   else GROUP_ID_NOT_FOUND; when the last consumer-protocol member leaves or is
   fenced and only classic-protocol members stay, migration.py downgrades it.
7. Classic requests for a consumer group id: the hooks in coordinator/group/classic/*
   call ``classic_join`` / ``classic_sync`` / ``classic_heartbeat`` /
   ``classic_leave``; for a consumer group's id, classic_glue.py answers with the
   group's classic-protocol members (heartbeat and leave are synchronous: a write
   goes through ``runtime.spawn(locked(group_id, ...))``). None falls through to the
   classic path, which knows no members there (UNKNOWN_MEMBER_ID). A JoinGroup for
   an empty consumer group deletes it and proceeds as a classic group's (Kafka 4.0).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from coordinator.group.consumer import classic_glue
from coordinator.group.consumer import group_logic as gl
from coordinator.group.consumer import migration as mg
from coordinator.group.consumer import record_codec
from coordinator.group.consumer.model import ConsumerGroup, MemberState
from coordinator.group.consumer.records import Record
from coordinator.group.consumer.replay import replay
from coordinator.group.consumer.target_assignment import preferred_assignor
from coordinator.group.consumer.topic_view import LiveTopicView, StaticTopics
from coordinator.group.classic.coordinator_types import group_write_error
from coordinator.group.why import consumer_group_facts
from protocol.errors import ErrorCode

from coordinator.group.classic.coordinator_types import JoinRequest, LeaveMember
from coordinator.group.classic.group_metadata import JoinCallback, SyncCallback

if TYPE_CHECKING:
    from coordinator.group.classic.port import ClassicGroups
    from coordinator.group.classic.group_metadata import GroupMetadata
    from coordinator.group.group_map import KindView

log = logging.getLogger(__name__)
T = TypeVar("T")
KeyValue = tuple[bytes, bytes | None]
MemberKey = tuple[str, str]


def _error(code: int, message: str | None = None) -> gl.HeartbeatResult:
    return gl.HeartbeatResult(error=int(code), message=message, member_id=None, member_epoch=0,
                              heartbeat_interval_ms=0, assignment=None)


def write_error(error: int) -> int:
    """A log append's error as a consumer group request answers it: the classic
    mapping, except that a timed-out write is COORDINATOR_NOT_AVAILABLE (Kafka's
    runtime; REBALANCE_IN_PROGRESS means nothing to a ConsumerGroupHeartbeat)."""
    mapped = group_write_error(error)
    return ErrorCode.COORDINATOR_NOT_AVAILABLE if mapped == ErrorCode.REBALANCE_IN_PROGRESS \
        else mapped


@dataclass(slots=True)
class _GroupLock:
    """A group's lock and how many requests hold or wait for it (dropped at 0)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class ConsumerGroupCoordinator:
    def __init__(self, classic: ClassicGroups, config: gl.GroupConfig | None = None,
                 topics: LiveTopicView | None = None, *, enabled: bool = True) -> None:
        self.classic = classic
        self.runtime = classic.runtime   # shared with the classic side: one group id space
        self.config = config or gl.GroupConfig()
        self.topics: LiveTopicView = topics if topics is not None else StaticTopics()
        self.enabled = enabled                       # group.coordinator.rebalance.protocols
        # the consumer view of the one group map (classic groups are its other view)
        self.groups: KindView[ConsumerGroup] = classic.group_map.consumer
        self._locks: dict[str, _GroupLock] = {}
        self._sessions: dict[MemberKey, asyncio.TimerHandle] = {}
        self._rebalance: dict[MemberKey, tuple[int, asyncio.TimerHandle]] = {}
        # classic-protocol members' join / sync deadlines (classic_glue):
        # (group, member, "join" | "sync") -> (member epoch when armed, timer)
        self.classic_timers: dict[tuple[str, str, str], tuple[int, asyncio.TimerHandle]] = {}

    def configure(self, config: gl.GroupConfig, topics: LiveTopicView, *, enabled: bool) -> None:
        """The broker's group.consumer.* settings (``enabled``: the consumer protocol is
        in group.coordinator.rebalance.protocols) and its view of the topics."""
        self.config, self.topics, self.enabled = config, topics, enabled

    @property
    def policy(self) -> mg.MigrationPolicy:
        return mg.MigrationPolicy.parse(self.config.migration_policy)

    def has_group(self, group_id: str) -> bool:
        return group_id in self.groups

    def now(self) -> int:
        return self.runtime.clock()

    # -- serialization and writing ---------------------------------------------------------

    async def locked(self, group_id: str, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn`` while holding ``group_id``'s lock (one writer per group)."""
        entry = self._locks.get(group_id)
        if entry is None:
            entry = self._locks[group_id] = _GroupLock()
        entry.users += 1
        try:
            async with entry.lock:
                return await fn()
        finally:
            entry.users -= 1
            if entry.users == 0:          # nobody holds or waits: no lock per id ever seen
                del self._locks[group_id]

    async def write(self, group_id: str, key_values: list[KeyValue]) -> int:
        """Append one batch to the group's partition (acks=-1) -> mapped error (0 = ok)."""
        if not key_values:
            return ErrorCode.NONE
        partition = self.runtime.partition_for(group_id)
        try:
            error = await self.runtime.log.append(
                partition, key_values, acks=-1,
                timeout_ms=self.classic.config.offsets_commit_timeout_ms, timestamp=self.now())
        except Exception:
            log.exception("writing records of consumer group %s failed", group_id)
            error = ErrorCode.UNKNOWN_SERVER_ERROR
        return write_error(error)

    def apply(self, records: Iterable[Record]) -> None:
        """Replay typed records that were written (as their bytes read back)."""
        self.apply_written(record_codec.encode(r) for r in records)

    def apply_written(self, key_values: Iterable[KeyValue]) -> None:
        """Replay written records *as read back from their bytes*, exactly as a load
        after failover will: live state and reloaded state cannot drift apart.
        Classic keys in the batch (a conversion's) are not ours: skipped."""
        for key, value in key_values:
            record = record_codec.decode(key, value)
            if record is not None:
                replay(self.groups, record)

    async def write_and_apply(self, group_id: str, records: list[Record],
                              extra: list[KeyValue] | None = None, *,
                              fenced: str | None = None) -> int:
        """Write ``extra`` (already encoded) then ``records``; apply on success. A group
        epoch bump is noted for broker/why first (it compares with the group as it was).
        A batch that makes the group while a classic group holds the id displaces that
        one first (``_displace_classic``): one id, one group."""
        batch = (extra or []) + record_codec.encode_all(records)
        error = await self.write(group_id, batch)
        if error == ErrorCode.NONE:
            if group_id not in self.groups and any(not r.tombstone for r in records):
                self._displace_classic(group_id)
            consumer_group_facts.epoch_bumped(self.classic.why, self.groups.get(group_id),
                                              records, self.now(), fenced=fenced,
                                              timeout_ms=self.config.session_timeout_ms)
            self.apply_written(batch)
        return error

    def _displace_classic(self, group_id: str) -> None:
        """A consumer group is about to be replayed under ``group_id``: the classic
        group holding it leaves the map. It is the empty classic group the heartbeat
        replaces (Kafka 4: a simple group is overridden, an emptied one was tombstoned
        in the batch), or -- a classic JoinGroup or standalone commit made it while the
        batch was being written -- one whose waiting members are told to rejoin
        (REBALANCE_IN_PROGRESS), which brings them into the consumer group as classic
        members, as an upgrade does."""
        classic = self.classic.groups.get(group_id)
        if classic is None:
            return
        if not mg.is_empty_classic(classic):
            log.warning("classic group %s was made while consumer group %s was being "
                        "written: its members rejoin the consumer group", group_id, group_id)
        mg.complete_upgrade(self.classic, group_id)

    # -- ConsumerGroupHeartbeat ------------------------------------------------------------

    async def heartbeat(self, hb: gl.Heartbeat) -> gl.HeartbeatResult:
        status = self.classic.status(hb.group_id)
        if status is not None:
            return _error(status)
        return await self.locked(hb.group_id, lambda: self._heartbeat(hb))

    async def _heartbeat(self, hb: gl.Heartbeat) -> gl.HeartbeatResult:
        gid = hb.group_id
        status = self.classic.status(gid)          # leadership may have moved meanwhile
        if status is not None:
            return _error(status)
        group = self.groups.get(gid)
        extra: list[KeyValue] = []
        classic = self.classic.groups.get(gid) if group is None else None
        if classic is not None:
            if not mg.is_empty_classic(classic):
                return await self._upgrade(classic, hb)
            if classic.generation_id > 0 and hb.member_epoch == 0:
                extra.append(mg.classic_tombstone(gid))   # an empty classic group is replaced
        elif group is not None and hb.member_epoch == gl.LEAVE_GROUP_MEMBER_EPOCH \
                and hb.member_id in group.members \
                and mg.can_downgrade(group, hb.member_id, self.policy,
                                     self.classic.config.group_max_size):
            return await self._downgrade(group, hb)
        result, records = gl.heartbeat(group, hb, self.topics, self.config, self.now())
        if result.error != ErrorCode.NONE or not (records or extra):
            self._after(gid, result.member_id or hb.member_id, result)
            return result
        error = await self.write_and_apply(gid, records, extra)
        if error != ErrorCode.NONE:
            return _error(error)
        self._after(gid, result.member_id or hb.member_id, result)
        return result

    def _after(self, group_id: str, member_id: str, result: gl.HeartbeatResult) -> None:
        """Timers after a heartbeat: the member's session and rebalance timers follow
        its state; a member that is gone loses both."""
        if result.error not in (ErrorCode.NONE,):
            return
        self.arm(group_id, member_id)

    # -- timers ----------------------------------------------------------------------------

    def arm(self, group_id: str, member_id: str) -> None:
        """(Re)start a member's session timer; start / stop its rebalance timer."""
        key = (group_id, member_id)
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is None:
            self.disarm(group_id, member_id)
            return
        loop = asyncio.get_running_loop()
        old = self._sessions.pop(key, None)
        if old is not None:
            old.cancel()
        timeout = (member.classic.session_timeout_ms if member.classic is not None
                   else self.config.session_timeout_ms)
        self._sessions[key] = loop.call_later(timeout / 1000, self._expired, group_id,
                                              member_id, None, "session timeout")
        armed = self._rebalance.get(key)
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            if armed is None or armed[0] != member.member_epoch:
                if armed is not None:
                    armed[1].cancel()
                timeout_ms = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 \
                    else self.config.session_timeout_ms
                self._rebalance[key] = (member.member_epoch, loop.call_later(
                    timeout_ms / 1000, self._expired, group_id, member_id,
                    member.member_epoch, "rebalance timeout"))
        elif armed is not None:
            armed[1].cancel()
            del self._rebalance[key]

    def disarm(self, group_id: str, member_id: str) -> None:
        key = (group_id, member_id)
        session = self._sessions.pop(key, None)
        if session is not None:
            session.cancel()
        armed = self._rebalance.pop(key, None)
        if armed is not None:
            armed[1].cancel()

    def _expired(self, group_id: str, member_id: str, revoking_epoch: int | None,
                 reason: str) -> None:
        key = (group_id, member_id)
        if revoking_epoch is None:
            self._sessions.pop(key, None)
        else:
            self._rebalance.pop(key, None)
        self.runtime.spawn(self.locked(group_id, lambda: self.fence_member(
            group_id, member_id, revoking_epoch, reason)))

    async def fence_member(self, group_id: str, member_id: str, revoking_epoch: int | None,
                     reason: str) -> None:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return
        if revoking_epoch is not None and (member.state != MemberState.UNREVOKED_PARTITIONS
                                           or member.member_epoch != revoking_epoch):
            return                                   # it revoked meanwhile
        if self.classic.status(group_id) is not None:
            return
        log.info("member %s of consumer group %s fenced (%s)", member_id, group_id, reason)
        if mg.can_downgrade(group, member_id, self.policy, self.classic.config.group_max_size):
            await self._convert_to_classic(group, member_id)
            return
        error = await self.write_and_apply(group_id, gl.fence_member(group, member_id,
                                                                     self.topics),
                                           fenced=reason)
        if error != ErrorCode.NONE:
            log.warning("fencing %s of %s: write failed (%d); retried at the next expiry",
                        member_id, group_id, error)
            self.arm(group_id, member_id)
            return
        self.disarm(group_id, member_id)

    # -- migration (these call migration.py's public functions) ----------------------------

    async def _upgrade(self, classic: GroupMetadata, hb: gl.Heartbeat) -> gl.HeartbeatResult:
        gid = hb.group_id
        message = f"Group {gid} is not a consumer group."
        if hb.member_epoch != 0 or not mg.can_upgrade(classic, self.policy,
                                                      self.config.max_size):
            return _error(ErrorCode.GROUP_ID_NOT_FOUND, message)
        try:
            conversion = mg.upgrade(classic, self.topics)
        except mg.MigrationError as e:
            return _error(e.error, str(e))
        scratch: dict[str, ConsumerGroup] = {}
        for record in conversion.records:
            replay(scratch, record)
        result, records = gl.heartbeat(scratch.get(gid), hb, self.topics, self.config,
                                       self.now())
        if result.error != ErrorCode.NONE:
            return result
        batch = conversion.key_values(record_codec.encode) + record_codec.encode_all(records)
        error = await self.write(gid, batch)
        if error != ErrorCode.NONE:
            return _error(error)
        mg.complete_upgrade(self.classic, gid)     # the classic group leaves the map first
        self.apply_written(batch)
        for member_id in list(self.groups[gid].members):
            self.arm(gid, member_id)
        log.info("classic group %s upgraded to a consumer group", gid)
        return result

    async def _downgrade(self, group: ConsumerGroup, hb: gl.Heartbeat) -> gl.HeartbeatResult:
        error = await self._convert_to_classic(group, hb.member_id)
        if error != ErrorCode.NONE:
            return _error(error)
        return gl.HeartbeatResult(error=0, message=None, member_id=hb.member_id,
                                  member_epoch=hb.member_epoch, heartbeat_interval_ms=0,
                                  assignment=None)

    async def _convert_to_classic(self, group: ConsumerGroup, leaving_id: str) -> int:
        gid = group.group_id
        try:
            conversion = mg.downgrade(group, leaving_id, self.topics, self.now())
        except mg.MigrationError as e:
            log.warning("downgrade of %s failed: %s", gid, e)
            return e.error
        batch = conversion.key_values(record_codec.encode)
        error = await self.write(gid, batch)
        if error != ErrorCode.NONE:
            return error
        self.apply_written(batch)
        for member_id in list(group.members):
            self.disarm(gid, member_id)
        mg.install_downgraded(self.classic, conversion)
        return ErrorCode.NONE

    # -- classic requests for consumer group ids (classic_glue.py) ------------------------

    def classic_join(self, req: JoinRequest, respond: JoinCallback) -> bool:
        """A classic JoinGroup: True when answered here (the id is a consumer group's).
        Kafka 4.0: a non-empty consumer group takes classic members (classic_glue);
        an empty one is deleted and the join goes on as a classic group's."""
        group = self.groups.get(req.group_id)
        if group is None:
            return False
        if group.members:
            classic_glue.join_group(self, group, req, respond)
            return True

        async def replace() -> None:
            from coordinator.group.classic.group_metadata import JoinResult
            current = self.groups.get(req.group_id)
            if current is not None and not current.members:
                error = await self.write_and_apply(req.group_id,
                                                   gl.delete_group_records(current))
                if error != ErrorCode.NONE:
                    respond(JoinResult(error, member_id=req.member_id))
                    return
            self.classic.handle_join(req, respond)
        self.runtime.spawn(self.locked(req.group_id, replace))
        return True

    # SyncGroup / Heartbeat / LeaveGroup of a classic member: answered here when the id is
    # a consumer group's (-> True / the answer), else None: the classic path answers

    def classic_sync(self, group_id: str, generation_id: int, member_id: str,
                     instance_id: str | None, protocol_type: str | None,
                     protocol_name: str | None, respond: SyncCallback) -> bool | None:
        group = self.groups.get(group_id)
        if group is None:
            return None
        return classic_glue.sync_group(self, group, generation_id, member_id, instance_id,
                                       protocol_type, protocol_name, respond)

    def classic_heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                          generation_id: int) -> int | None:
        group = self.groups.get(group_id)
        if group is None:
            return None
        return classic_glue.heartbeat(self, group, member_id, instance_id, generation_id)

    def classic_leave(self, group_id: str, members: list[LeaveMember]
                      ) -> tuple[int, list[LeaveMember]] | None:
        group = self.groups.get(group_id)
        if group is None:
            return None
        return classic_glue.leave_group(self, group, members)

    # -- loading, unloading, metadata --------------------------------------------------------

    def install(self, loaded: dict[str, ConsumerGroup]) -> None:
        """Adopt the groups a partition load replayed (no epoch bump), arm timers, and
        re-check them against the topics as they are now."""
        for gid, group in loaded.items():
            self.groups[gid] = group
            for member_id in list(group.members):
                self.arm(gid, member_id)
        # topics may have changed while nobody coordinated these groups; an empty view is
        # a broker that has had no UpdateMetadata yet: its first one refreshes everyone
        if loaded and any(True for _ in self.topics.names()):
            self.runtime.spawn(self._refresh(list(loaded)))

    def unload(self, partition: int) -> None:
        for gid in [g for g in self.groups if self.runtime.partition_for(g) == partition]:
            for member_id in list(self.groups[gid].members):
                self.disarm(gid, member_id)
            del self.groups[gid]

    def shutdown(self) -> None:
        for handle in self._sessions.values():
            handle.cancel()
        for _, handle in [*self._rebalance.values(), *self.classic_timers.values()]:
            handle.cancel()
        self._sessions.clear()
        self._rebalance.clear()
        self.classic_timers.clear()

    def on_metadata_update(self) -> None:
        """The broker's metadata changed: when what groups see changed, refresh them."""
        self.topics.mark_stale()
        if self.groups and self.topics.refresh():
            self.runtime.spawn(self._refresh(list(self.groups)))

    async def _refresh(self, group_ids: list[str]) -> None:
        for gid in group_ids:
            await self.locked(gid, partial(self._refresh_one, gid))

    async def _refresh_one(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or self.classic.status(group_id) is not None:
            return
        records = gl.refresh_metadata(group, self.topics, self.now())
        if records:
            error = await self.write_and_apply(group_id, records)
            if error != ErrorCode.NONE:
                log.warning("metadata refresh of consumer group %s: write failed (%d)",
                            group_id, error)

    # -- views -------------------------------------------------------------------------------

    def assignor_of(self, group: ConsumerGroup) -> str:
        """The assignor the group uses: the most common one its members ask for, else
        the first configured (Kafka's preferredServerAssignor)."""
        return preferred_assignor(group.members.values(), tuple(self.config.assignors))
