"""Classic requests for consumer group ids, on the coordinators (the asyncio side of
classic_members.py). ConsumerGroupCoordinator routes a classic JoinGroup /
SyncGroup / Heartbeat / LeaveGroup here when the group id is a (non-empty)
consumer group's; each function takes that coordinator and the group.

* JoinGroup runs under the group's lock (one writer): classic_members.join on the
  group as it is, the records written and replayed, then the answer (Kafka answers
  once its records are appended). The member's session timer follows its classic
  session timeout (ConsumerGroupCoordinator.arm); a sync timer starts: no
  SyncGroup within its rebalance timeout fences it.
  A static member taking the instance id of the group's last consumer-protocol
  member downgrades the group to a classic one in the same batch, without a
  rebalance (migration.can_downgrade_replacing; Kafka 4.0 does the same).
* SyncGroup and Heartbeat write nothing: answered at once from the group's
  state; both re-arm the session timer. When the member must rejoin
  (REBALANCE_IN_PROGRESS) a join timer starts unless one runs: not rejoining
  within its rebalance timeout fences it (Kafka's consumerGroupJoinKey /
  consumerGroupSyncKey timers). A timer fences only if, when it fires, the member
  is still there at the epoch it was armed at and still owes the join / sync.
* LeaveGroup answers at once (the classic path's call is synchronous) and removes
  the members in a task under the group's lock, recomputed on the group as it
  is then; a failed write leaves the member to its session timeout.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from coordinator.group.consumer import classic_members as cm
from coordinator.group.consumer import migration as mg
from coordinator.group.consumer import record_codec
from coordinator.group.consumer.replay import replay
from coordinator.group.classic.coordinator_types import JoinRequest, LeaveMember
from coordinator.group.classic.group_metadata import JoinCallback, JoinResult, SyncCallback
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from coordinator.group.classic.port import ClassicGroups
    from coordinator.group.group_map import KindView
    from coordinator.group.consumer import group_logic as gl
    from coordinator.group.consumer.model import ConsumerGroup
    from coordinator.group.consumer.records import Record
    from coordinator.group.consumer.topic_view import LiveTopicView
    from coordinator.runtime.runtime import CoordinatorRuntime

T = TypeVar("T")
KeyValue = tuple[bytes, bytes | None]


class GlueHost(Protocol):
    """What the classic-member glue uses of ConsumerGroupCoordinator (coordinator.py,
    which imports this module): the shared state, its lock, writes and timers."""

    classic: ClassicGroups
    runtime: CoordinatorRuntime
    config: gl.GroupConfig
    topics: LiveTopicView
    groups: KindView[ConsumerGroup]
    classic_timers: dict[tuple[str, str, str], tuple[int, asyncio.TimerHandle]]

    @property
    def policy(self) -> mg.MigrationPolicy: ...

    def now(self) -> int: ...

    async def locked(self, group_id: str, fn: Callable[[], Awaitable[T]]) -> T: ...

    async def write(self, group_id: str, key_values: list[KeyValue]) -> int: ...

    def apply(self, records: Iterable[Record]) -> None: ...

    async def write_and_apply(self, group_id: str, records: list[Record],
                              extra: list[KeyValue] | None = None, *,
                              fenced: str | None = None) -> int: ...

    def arm(self, group_id: str, member_id: str) -> None: ...

    def disarm(self, group_id: str, member_id: str) -> None: ...

    async def fence_member(self, group_id: str, member_id: str, revoking_epoch: int | None,
                           reason: str) -> None: ...

log = logging.getLogger(__name__)

JOIN, SYNC = "join", "sync"
# the join / sync timers live in the coordinator's ``classic_timers``:
# (group, member, kind) -> (member epoch when armed, timer)


# -- timers --------------------------------------------------------------------------------

def _arm(coord: GlueHost, group_id: str, member_id: str, kind: str,
         timeout_ms: int, *, if_absent: bool = False) -> None:
    timers = coord.classic_timers
    key = (group_id, member_id, kind)
    old = timers.get(key)
    if old is not None:
        if if_absent:
            return
        old[1].cancel()
    group = coord.groups.get(group_id)
    member = group.members.get(member_id) if group is not None else None
    if member is None:
        timers.pop(key, None)
        return
    epoch = member.member_epoch
    timeout = timeout_ms if timeout_ms > 0 else coord.config.session_timeout_ms
    handle = asyncio.get_running_loop().call_later(
        timeout / 1000, _expired, coord, group_id, member_id, kind, epoch)
    timers[key] = (epoch, handle)


def _cancel(coord: GlueHost, group_id: str, member_id: str,
            *kinds: str) -> None:
    for kind in kinds or (JOIN, SYNC):
        timer = coord.classic_timers.pop((group_id, member_id, kind), None)
        if timer is not None:
            timer[1].cancel()


def _expired(coord: GlueHost, group_id: str, member_id: str, kind: str,
             epoch: int) -> None:
    key = (group_id, member_id, kind)
    timer = coord.classic_timers.get(key)
    if timer is None or timer[0] != epoch:
        return
    del coord.classic_timers[key]

    async def fence() -> None:
        group = coord.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None or member.member_epoch != epoch:
            return
        if kind == JOIN and not cm.must_rejoin(group, member):
            return
        reason = ("the classic member failed to join within the rebalance timeout"
                  if kind == JOIN else "the member failed to sync within the rebalance timeout")
        await coord.fence_member(group_id, member_id, None, reason)
        _cancel(coord, group_id, member_id)
    coord.runtime.spawn(coord.locked(group_id, fence))


def _forget_removed(coord: GlueHost, group_id: str, records: list[Any]) -> None:
    """Timers of members whose subscription a batch deleted."""
    from coordinator.group.consumer.records import MemberSubscription
    for record in records:
        if isinstance(record, MemberSubscription) and record.tombstone:
            coord.disarm(group_id, record.member_id)
            _cancel(coord, group_id, record.member_id)


# -- JoinGroup -----------------------------------------------------------------------------

def join_group(coord: GlueHost, group: ConsumerGroup, req: JoinRequest,
               respond: JoinCallback) -> None:
    async def answered() -> None:
        try:
            await _join(coord, req, respond)
        except Exception:
            # never leave a JoinGroup unanswered (the client would wait for its timeout)
            log.exception("classic JoinGroup of %s to consumer group %s failed",
                          req.member_id or "a new member", req.group_id)
            respond(JoinResult(ErrorCode.UNKNOWN_SERVER_ERROR, member_id=req.member_id))
    coord.runtime.spawn(coord.locked(req.group_id, answered))


async def _join(coord: GlueHost, req: JoinRequest,
                respond: JoinCallback) -> None:
    gid = req.group_id
    status = coord.classic.status(gid)
    if status is not None:
        respond(JoinResult(status, member_id=req.member_id))
        return
    group = coord.groups.get(gid)
    if group is None or not group.members:
        # converted or emptied while this join waited for the lock: start over
        coord.classic.handle_join(req, respond)
        return
    replaced = (group.static_members.get(req.group_instance_id)
                if req.group_instance_id is not None and req.member_id == "" else None)
    out = cm.join(group, req, coord.topics, coord.config, coord.now(), replay)
    if out.result.error != ErrorCode.NONE:
        respond(out.result)
        return
    if replaced is not None and mg.can_downgrade_replacing(
            group, replaced, coord.policy, coord.classic.config.group_max_size):
        if await _join_and_downgrade(coord, group, out, respond):
            return
    error = await coord.write_and_apply(gid, out.records)
    if error != ErrorCode.NONE:
        respond(JoinResult(error, member_id=req.member_id))
        return
    member_id = out.result.member_id
    _forget_removed(coord, gid, out.records)
    _cancel(coord, gid, member_id, JOIN)
    coord.arm(gid, member_id)
    _arm(coord, gid, member_id, SYNC, out.rebalance_timeout_ms)
    respond(out.result)


async def _join_and_downgrade(coord: GlueHost, group: ConsumerGroup,
                              out: cm.JoinOutcome, respond: JoinCallback) -> bool:
    """The join replaced the last consumer-protocol member: write it together with the
    conversion to a classic group (no rebalance) and answer as that group's member.
    False when the conversion cannot be done (the join goes on in the consumer group)."""
    gid = group.group_id
    after = cm.replayed(group, out.records, replay)
    try:
        conversion = mg.downgrade(after, None, coord.topics, coord.now())
    except mg.MigrationError as e:
        log.warning("downgrade of %s on a static member's join failed: %s", gid, e)
        return False
    error = await coord.write(gid, record_codec.encode_all(out.records)
                              + conversion.key_values(record_codec.encode))
    if error != ErrorCode.NONE:
        respond(JoinResult(error, member_id=""))
        return True
    coord.apply(out.records)
    coord.apply(conversion.records)
    for member_id in set(group.members) | set(after.members):
        coord.disarm(gid, member_id)
        _cancel(coord, gid, member_id)
    classic = mg.install_downgraded(coord.classic, conversion, rebalance=False)
    respond(JoinResult(ErrorCode.NONE, member_id=out.result.member_id,
                       generation_id=classic.generation_id,
                       protocol_type=classic.protocol_type, protocol_name=classic.protocol_name,
                       leader_id="", members=[]))
    return True


# -- SyncGroup / Heartbeat -----------------------------------------------------------------

def sync_group(coord: GlueHost, group: ConsumerGroup, generation_id: int,
               member_id: str, instance_id: str | None, protocol_type: str | None,
               protocol_name: str | None, respond: SyncCallback) -> bool:
    result, member = cm.sync(group, member_id, instance_id, generation_id, protocol_type,
                             protocol_name, coord.topics)
    if member is not None:
        coord.arm(group.group_id, member.member_id)
        if result.error == ErrorCode.NONE:
            _cancel(coord, group.group_id, member.member_id, SYNC)
        elif result.error == ErrorCode.REBALANCE_IN_PROGRESS:
            _arm(coord, group.group_id, member.member_id, JOIN, member.rebalance_timeout_ms,
                 if_absent=True)
    respond(result)
    return True


def heartbeat(coord: GlueHost, group: ConsumerGroup, member_id: str,
              instance_id: str | None, generation_id: int) -> int:
    error, member = cm.heartbeat(group, member_id, instance_id, generation_id)
    if member is not None:
        coord.arm(group.group_id, member.member_id)
        if error == ErrorCode.REBALANCE_IN_PROGRESS:
            _arm(coord, group.group_id, member.member_id, JOIN, member.rebalance_timeout_ms,
                 if_absent=True)
    return int(error)


# -- LeaveGroup ----------------------------------------------------------------------------

def leave_group(coord: GlueHost, group: ConsumerGroup,
                members: list[LeaveMember]) -> tuple[int, list[LeaveMember]]:
    cm.leave(group, members, coord.topics, coord.config, coord.now(), replay)
    leaving = [LeaveMember(m.member_id, m.group_instance_id, m.reason)
               for m in members if m.error == ErrorCode.NONE]
    if leaving:
        coord.runtime.spawn(coord.locked(group.group_id,
                                         lambda: _leave(coord, group.group_id, leaving)))
    return ErrorCode.NONE, members


async def _leave(coord: GlueHost, group_id: str,
                 leaving: list[LeaveMember]) -> None:
    group = coord.groups.get(group_id)
    if group is None or coord.classic.status(group_id) is not None:
        return
    records, removed = cm.leave(group, leaving, coord.topics, coord.config, coord.now(), replay)
    if not records:
        return
    error = await coord.write_and_apply(group_id, records)
    if error != ErrorCode.NONE:
        log.warning("classic members %s leaving consumer group %s: write failed (%d); their "
                    "sessions will expire", removed, group_id, error)
        return
    for member_id in removed:
        coord.disarm(group_id, member_id)
        _cancel(coord, group_id, member_id)
    log.info("classic members %s left consumer group %s", removed, group_id)
