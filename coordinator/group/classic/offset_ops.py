"""Committed offsets (``GroupOffsets``, the group coordinator's ``offsets``
collaborator): OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups (a group's
deletion is its offsets' and metadata's tombstones) and the periodic offset expiry
(Kafka's GroupCoordinator + GroupMetadataManager.storeOffsets / getOffsets /
cleanupGroupMetadata).

Commit (numbered as Kafka's handleCommitOffsets):
  1. group status (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...);
  2. unknown group: generation < 0 creates an Empty group (standalone commit),
     otherwise ILLEGAL_GENERATION;
  3. fencing: Dead -> COORDINATOR_NOT_AVAILABLE; generation -1 into an Empty
     group is fine; a generation, member id or instance id must name the current
     member (UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID) and generation
     (ILLEGAL_GENERATION); anonymous commits into a live group -> UNKNOWN_MEMBER_ID;
  4. CompletingRebalance -> REBALANCE_IN_PROGRESS; Stable/PreparingRebalance
     count as a heartbeat;
  5. metadata over offset.metadata.max.bytes -> OFFSET_METADATA_TOO_LARGE;
     the rest is one batch written with acks=-1 and becomes visible only once
     written. Deletions write tombstones (acks=1: a lost tombstone is rewritten
     by the next expiry pass).

The offsets themselves are the coordinator's ``committed`` (committed_offsets.py:
keyed by group id, either kind of group); ``store`` and ``remove`` here are their
writers for both kinds (a consumer group's commits are validated by admin_ops, then
stored here).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from coordinator.group.consumer import admin_ops
from coordinator.group.classic import offset_records
from coordinator.group.classic import offsets_topic as ot
from coordinator.group.classic.group_metadata import GroupMetadata, TopicPartition
from coordinator.group.classic.group_state import GroupState
from coordinator.group.classic.port import ClassicGroups
from coordinator.group.committed_offsets import GroupOffsetState
from coordinator.group.why import group_facts
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

E, PR, CR, S, D = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                   GroupState.COMPLETING_REBALANCE, GroupState.STABLE, GroupState.DEAD)

# (offset, leader epoch, metadata, error) per partition, as OffsetFetch answers
FetchedOffset = tuple[int, int, str, int]
NO_OFFSET: FetchedOffset = (-1, -1, "", ErrorCode.NONE)


def commit_write_error(error: int) -> int:
    """Kafka's storeOffsets error mapping."""
    if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                 ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
                 ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return error


class OffsetsHost(ClassicGroups, Protocol):
    """What the offsets use of the group coordinator: the consumer side's view of it
    (port.ClassicGroups: the one group map, the committed offsets by group id;
    expiry reaches KIP-848 groups through admin_ops with it) and the classic
    member check."""

    def validate_member(self, group: GroupMetadata, member_id: str,
                        instance_id: str | None) -> int | None: ...


def _commit_time(o: ot.OffsetAndMetadata) -> int:
    return o.commit_timestamp


class GroupOffsets:
    def __init__(self, groups: OffsetsHost) -> None:
        self.gc = groups
        self._expiry_task: asyncio.Task[None] | None = None

    # -- OffsetCommit --------------------------------------------------------------------

    async def commit(self, group_id: str, member_id: str, instance_id: str | None,
                     generation_id: int, offsets: dict[TopicPartition, ot.OffsetAndMetadata]
                     ) -> dict[TopicPartition, int]:
        """OffsetCommit into a classic group (or a new simple one); a consumer group's
        commits are admin_ops.commit_offsets'."""
        error = self.gc.status(group_id, allow_empty_id=True)
        if error is not None:
            return dict.fromkeys(offsets, error)
        group = self.gc.groups.get(group_id)
        if group is None:
            if group_id in self.gc.group_map:      # a consumer group's id (the handler
                return dict.fromkeys(offsets, ErrorCode.COORDINATOR_NOT_AVAILABLE)  # routes)
            if generation_id >= 0:
                return dict.fromkeys(offsets, ErrorCode.ILLEGAL_GENERATION)
            group = self.gc.groups[group_id] = GroupMetadata(group_id, E, self.gc.runtime.clock())
        error = self._validate_commit(group, generation_id, member_id, instance_id)
        if error is None and group.is_(CR):
            error = ErrorCode.REBALANCE_IN_PROGRESS
        if error is not None:
            return dict.fromkeys(offsets, error)
        if group.state in (S, PR):
            self.gc.extend_session(group, group.members[member_id])
        return await self.store(group_id, offsets)

    def _validate_commit(self, group: GroupMetadata, generation_id: int, member_id: str,
                         instance_id: str | None) -> int | None:
        if group.is_(D):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_(E):
            return None          # admin client or a consumer without group management
        if generation_id >= 0 or member_id != "" or instance_id is not None:
            error = self.gc.validate_member(group, member_id, instance_id)
            if error is not None:
                return error
            return ErrorCode.ILLEGAL_GENERATION if generation_id != group.generation_id else None
        if not group.is_(E):
            return ErrorCode.UNKNOWN_MEMBER_ID   # only members commit into a live group
        return None

    def _live(self, group_id: str, state: GroupOffsetState) -> bool:
        """``state`` is still the id's offsets and the id still names a live group (a
        deletion or an unload during a write drops both)."""
        group = self.gc.group_map.get(group_id)
        return (self.gc.committed.get(group_id) is state and group is not None
                and not (isinstance(group, GroupMetadata) and group.is_(D)))

    async def store(self, group_id: str,
                    offsets: dict[TopicPartition, ot.OffsetAndMetadata],
                    producer: tuple[int, int] | None = None
                    ) -> dict[TopicPartition, int]:
        """Write ``offsets`` of ``group_id`` (either kind; one batch, acks=all); once
        written they are its committed offsets, or, for a transactional ``producer``
        (id, epoch), its pending offsets until its marker (``txn_offset_ops``)."""
        limit = self.gc.config.offset_metadata_max_bytes
        results: dict[TopicPartition, int] = {}
        valid: dict[TopicPartition, ot.OffsetAndMetadata] = {}
        for tp, o in offsets.items():
            if len(o.metadata.encode("utf-8")) > limit:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                valid[tp] = o
        if not valid:
            return results
        records = offset_records.commit_records(group_id, valid)
        state = self.gc.committed.of(group_id)
        state.writing.update(valid.keys())
        try:
            error = await self.gc.runtime.log.append(
                self.gc.partition_for(group_id), records, acks=-1,
                timeout_ms=self.gc.config.offsets_commit_timeout_ms,
                timestamp=self.gc.runtime.clock(), producer=producer)
        except Exception:
            log.exception("writing offsets of group %s failed", group_id)
            error = ErrorCode.UNKNOWN_SERVER_ERROR
        finally:
            state.writing.subtract(valid.keys())
            state.writing = +state.writing
        error = commit_write_error(error)
        if error == ErrorCode.NONE and self._live(group_id, state):
            offset_records.replay_written(
                state.committed if producer is None
                else state.pending_txn.setdefault(producer[0], {}),
                group_id, records)
        elif self.gc.committed.get(group_id) is state:
            self.gc.committed.drop_if_empty(group_id)
        results.update(dict.fromkeys(valid, error))
        return results

    # -- OffsetFetch ---------------------------------------------------------------------

    def fetch(self, group_id: str, partitions: list[TopicPartition] | None,
              require_stable: bool = False) -> tuple[int, dict[TopicPartition, FetchedOffset]]:
        """-> (group error, partition -> (offset, leader epoch, metadata, error));
        ``partitions`` None = every committed partition. Answered whatever the
        group's kind and state (a group may use Kafka only to store offsets).
        ``require_stable``: a partition with offsets in an open transaction answers
        UNSTABLE_OFFSET_COMMIT (the client retries once the transaction ended)."""
        error = self.gc.status(group_id, allow_empty_id=True)
        if error is not None:
            return error, {}
        group = self.gc.group_map.get(group_id)
        state = self.gc.committed.get(group_id)
        if state is None or (isinstance(group, GroupMetadata) and group.is_(D)):
            return ErrorCode.NONE, {tp: NO_OFFSET for tp in partitions or ()}
        out: dict[TopicPartition, FetchedOffset] = {}
        unstable = state.unstable_partitions() if require_stable else set()
        for tp in (partitions if partitions is not None else list(state.committed)):
            o = state.committed.get(tp)
            if tp in unstable:
                out[tp] = (-1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
            else:
                out[tp] = NO_OFFSET if o is None else (o.offset, o.leader_epoch, o.metadata,
                                                       ErrorCode.NONE)
        return ErrorCode.NONE, out

    # -- OffsetDelete --------------------------------------------------------------------

    async def delete(self, group_id: str, partitions: list[TopicPartition]
                     ) -> tuple[int, dict[TopicPartition, int]]:
        """OffsetDelete; a consumer group's subscribed partitions were answered by
        admin_ops.offsets_not_deletable before: the rest are removed here."""
        error = self.gc.status(group_id)
        if error is not None:
            return error, {}
        group = self.gc.group_map.get(group_id)
        if (group is None and group_id not in self.gc.committed) \
                or (isinstance(group, GroupMetadata) and group.is_(D)):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        errors: dict[TopicPartition, int] = {}
        if not isinstance(group, GroupMetadata) or group.is_(E):   # also a consumer group,
            eligible = list(partitions)                              # or offsets alone
        elif group.protocol_type == "consumer":
            eligible = [tp for tp in partitions if not group.is_subscribed_to(tp[0])]
            errors = {tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC for tp in partitions
                      if group.is_subscribed_to(tp[0])}
        else:
            return ErrorCode.NON_EMPTY_GROUP, {}
        if eligible:
            error, _ = (await self._cleanup(group, eligible) if isinstance(group, GroupMetadata)
                        else await self.remove(group_id, eligible))
            errors.update(dict.fromkeys(eligible, error))
        return ErrorCode.NONE, errors

    # -- DeleteGroups --------------------------------------------------------------------

    async def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        """DeleteGroups of classic groups (consumer groups are admin_ops.delete_groups')."""
        errors: dict[str, int] = {}
        doomed: list[GroupMetadata] = []
        for group_id in group_ids:
            error = self.gc.status(group_id, allow_empty_id=True)
            group = self.gc.groups.get(group_id)
            if error is not None:
                errors[group_id] = error
            elif group is None or group.is_(D):
                errors[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.is_(E):
                group_facts.group_deleted(self.gc, group)   # broker/why
                group.transition_to(D, self.gc.runtime.clock())
                doomed.append(group)
            else:
                errors[group_id] = ErrorCode.NON_EMPTY_GROUP
        for group in doomed:
            errors[group.group_id], _ = await self._cleanup(
                group, list(self.gc.committed.committed(group.group_id)))
        return errors

    # -- expiry and tombstones -----------------------------------------------------------

    async def expire(self) -> int:
        """One pass of offsets.retention.minutes expiry; -> offsets removed. Every
        classic group is visited (an Empty one left without offsets dies), and every
        id with committed offsets."""
        now, retention = self.gc.runtime.clock(), self.gc.config.offsets_retention_ms
        owned = self.gc.runtime.partitions.owned
        removed = 0
        ids = dict.fromkeys([*self.gc.groups, *(gid for gid, _ in self.gc.committed.items())])
        for group_id in ids:
            if self.gc.partition_for(group_id) not in owned:
                continue
            group = self.gc.group_map.get(group_id)
            state = self.gc.committed.get(group_id)
            if isinstance(group, GroupMetadata):
                rule = group.retention_rule()
                expired = ([] if rule is None or state is None
                           else state.expired(now, retention, rule[0], rule[1]))
                removed += (await self._cleanup(group, expired))[1]
            elif state is not None:
                # a consumer group's subscribed topics stay (KIP-848); offsets of an id
                # without a group (none should be) expire from their commits
                keep = admin_ops.subscribed_topics(group) if group is not None else set()
                expired = state.expired(now, retention, _commit_time, keep)
                removed += (await self.remove(group_id, expired))[1]
        if removed:
            log.info("removed %d expired offsets", removed)
        for group_id in await admin_ops.delete_expired_groups(self.gc):
            log.info("deleted consumer group %s: no members, no offsets", group_id)
        return removed

    async def remove(self, group_id: str, partitions: list[TopicPartition], *,
                     group_tombstone: bool = False) -> tuple[int, int]:
        """Remove the committed offsets of ``partitions`` (those that are committed):
        their tombstones are written (acks=1: a lost one is written again by the next
        expiry pass), then replayed (offset_records); ``group_tombstone`` adds the
        group's metadata tombstone to the same batch. A write that fails removes
        nothing. -> (error, offsets removed)."""
        state = self.gc.committed.get(group_id)
        gone = [tp for tp in partitions if state is not None and tp in state.committed]
        records = offset_records.tombstones(group_id, gone)
        if group_tombstone:
            records.append((ot.group_metadata_key(group_id), None))
        if not records:
            return ErrorCode.NONE, 0
        try:
            error = commit_write_error(await self.gc.runtime.log.append(
                self.gc.partition_for(group_id), records, acks=1,
                timeout_ms=self.gc.config.offsets_commit_timeout_ms,
                timestamp=self.gc.runtime.clock()))
        except Exception:
            log.exception("writing tombstones for group %s failed", group_id)
            error = ErrorCode.UNKNOWN_SERVER_ERROR
        if error != ErrorCode.NONE:
            log.warning("tombstones for group %s not written (error %d)", group_id, error)
            return error, 0
        if state is not None and self.gc.committed.get(group_id) is state:
            offset_records.replay_written(state.committed, group_id, records)
            self.gc.committed.drop_if_empty(group_id)
        return ErrorCode.NONE, len(gone)

    async def _cleanup(self, group: GroupMetadata, partitions: list[TopicPartition]
                       ) -> tuple[int, int]:
        """Remove a classic group's committed offsets of ``partitions`` (``remove``).
        A group left Empty without offsets dies, and a Dead one (DeleteGroups made it
        so) leaves the coordinator with its offsets; its metadata tombstone goes in the
        same batch when it ever had a generation (offset-only groups never wrote
        metadata). A write that fails removes nothing but a Dead group (as Kafka's
        classic coordinator: its offsets come back with the next load).
        -> (error, offsets removed)."""
        gid = group.group_id
        state = self.gc.committed.get(gid)
        left = state is not None and (set(state.committed) - set(partitions)
                                      or +state.writing or state.pending_txn)
        dies = group.is_(D) or (group.is_(E) and not left)
        error, removed = await self.remove(gid, partitions,
                                           group_tombstone=dies and group.generation_id > 0)
        # a commit may have landed while the tombstones were written: then it lives
        if error == ErrorCode.NONE and group.is_(E) and not self.gc.committed.has_offsets(gid):
            group.transition_to(D, self.gc.runtime.clock())
        if group.is_(D) and self.gc.groups.get(gid) is group:
            del self.gc.groups[gid]
            self.gc.committed.drop(gid)
        return error, removed
    def start(self) -> None:
        """Run offset expiry every offsets.retention.check.interval.ms (on the loop)."""
        async def loop() -> None:
            while True:
                await asyncio.sleep(self.gc.config.offsets_retention_check_interval_ms / 1000)
                try:
                    await self.expire()
                except Exception:
                    log.exception("offset expiry failed")
        self._expiry_task = asyncio.get_running_loop().create_task(loop())

    def stop(self) -> None:
        if self._expiry_task is not None:
            self._expiry_task.cancel()
