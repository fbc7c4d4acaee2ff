"""Committed offsets and group administration for KIP-848 consumer groups (Kafka 4.0's
ConsumerGroup.validateOffsetCommit / validateOffsetFetch / validateDeleteGroup and
OffsetMetadataManager's consumer-group rules), called by the handlers and the classic
coordinator's hooks when a group id names a consumer group.

Offsets live where every group keeps its own: the coordinator's ``committed``,
keyed by group id (committed_offsets.py), written by offset_ops' ``store`` and
``remove`` (acks=-1 / tombstones) for both kinds; loading, expiry and transactional
commits are shared too. What differs is validation:

* OffsetCommit: a member epoch < 0 commits only into an empty group (admin
  commits); otherwise the member id must name a member (UNKNOWN_MEMBER_ID), a
  consumer-protocol member must use OffsetCommit v9+ (UNSUPPORTED_VERSION), and the
  epoch must be the member's (STALE_MEMBER_EPOCH; ILLEGAL_GENERATION for a
  classic-protocol member). TxnOffsetCommit checks the same, without the version.
* OffsetFetch v9: a null member id with epoch < 0 reads freely; otherwise the
  member must exist and the epoch match, as for commits.
* OffsetDelete: partitions of topics the group subscribes to answer
  GROUP_SUBSCRIBED_TO_TOPIC; the others are deleted.
* DeleteGroups: a group with members is NON_EMPTY_GROUP; an empty one is deleted
  with tombstones of all its records (group_logic.delete_group_records) and of its
  offsets.
* Expiry: after each offsets-retention pass, a consumer group without members
  and without committed offsets is deleted (its records' tombstones), as Kafka's
  cleanupGroupMetadata deletes an empty group whose offsets all expired.
* ListGroups / DescribeGroups: consumer groups are listed with type "consumer",
  protocol type "consumer" and their state string; DescribeGroups (the classic API,
  v0-5) describes a consumer group as Dead, as Kafka 4.0 does for versions < 6.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from coordinator.group.consumer import group_logic as gl
from coordinator.group.consumer.model import ConsumerGroup
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from coordinator.group.classic.port import ClassicGroups

GROUP_TYPE_CONSUMER = "consumer"
CONSUMER_PROTOCOL_TYPE = "consumer"
TopicPartition = tuple[str, int]


def _epoch_error(member_epoch: int, expected: int, classic_member: bool) -> int | None:
    if member_epoch == expected:
        return None
    return ErrorCode.ILLEGAL_GENERATION if classic_member else ErrorCode.STALE_MEMBER_EPOCH


def validate_commit(group: ConsumerGroup, member_id: str, member_epoch: int, *,
                    transactional: bool = False, api_version: int = 9) -> int | None:
    """Kafka's ConsumerGroup.validateOffsetCommit -> error code or None."""
    if member_epoch < 0 and not group.members:
        return None
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if not transactional and member.classic is None and api_version < 9:
        return ErrorCode.UNSUPPORTED_VERSION
    return _epoch_error(member_epoch, member.member_epoch, member.classic is not None)


def validate_fetch(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> int | None:
    """Kafka's ConsumerGroup.validateOffsetFetch -> error code or None."""
    if member_id is None and member_epoch < 0:
        return None
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return _epoch_error(member_epoch, member.member_epoch, member.classic is not None)


def subscribed_topics(group: ConsumerGroup) -> set[str]:
    """Every topic a member subscribes to, by name or through a resolved regex."""
    names: set[str] = set()
    for m in group.members.values():
        names.update(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            resolved = group.resolved_regexes.get(m.subscribed_topic_regex)
            if resolved is not None:
                names.update(resolved.topics)
    return names


async def commit_offsets(classic: ClassicGroups, group_id: str, member_id: str,
                         member_epoch: int, offsets: dict[TopicPartition, Any],
                         api_version: int) -> dict[TopicPartition, int]:
    """OffsetCommit into a consumer group (the caller checked it is one)."""
    consumer = classic.consumer
    error = classic.status(group_id, allow_empty_id=True)
    group = consumer.groups.get(group_id)
    if error is None and group is None:
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE      # deleted meanwhile: retry
    if error is None:
        assert group is not None
        error = validate_commit(group, member_id, member_epoch, api_version=api_version)
    if error is not None:
        return dict.fromkeys(offsets, int(error))
    return await classic.offsets.store(group_id, offsets)


def fetch_error(classic: ClassicGroups, group_id: str, member_id: str | None,
                member_epoch: int) -> int | None:
    """OffsetFetch v9's member checks for a consumer group id; None: go on (also when
    the id is not a consumer group's: the classic path answers)."""
    group = classic.consumer.groups.get(group_id)
    if group is None or classic.status(group_id, allow_empty_id=True) is not None:
        return None
    return validate_fetch(group, member_id, member_epoch)


def offsets_not_deletable(classic: ClassicGroups, group_id: str,
                          partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    """OffsetDelete of a consumer group: GROUP_SUBSCRIBED_TO_TOPIC for partitions of
    subscribed topics (the rest go to the classic path, which deletes them)."""
    group = classic.consumer.groups.get(group_id)
    if group is None:
        return {}
    subscribed = subscribed_topics(group)
    return {tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC for tp in partitions if tp[0] in subscribed}


async def delete_groups(classic: ClassicGroups, group_ids: list[str]) -> dict[str, int]:
    """DeleteGroups for the consumer group ids among ``group_ids``: group id -> error.
    Ids that are not consumer groups are left out (the classic path answers them)."""
    consumer = classic.consumer
    out: dict[str, int] = {}
    for group_id in group_ids:
        if group_id not in consumer.groups:
            continue
        out[group_id] = await consumer.locked(group_id, partial(_delete, classic, group_id))
    return out


async def _delete(classic: ClassicGroups, group_id: str) -> int:
    consumer = classic.consumer
    error = classic.status(group_id, allow_empty_id=True)
    if error is not None:
        return error
    group = consumer.groups.get(group_id)
    if group is None:
        return ErrorCode.GROUP_ID_NOT_FOUND
    if group.members:
        return ErrorCode.NON_EMPTY_GROUP
    committed = list(classic.committed.committed(group_id))
    if committed:
        # the offsets' tombstones first (Kafka's order)
        error, _ = await classic.offsets.remove(group_id, committed)
        if error != ErrorCode.NONE:
            return error
    error = await consumer.write_and_apply(group_id, gl.delete_group_records(group))
    if error == ErrorCode.NONE:
        classic.committed.drop(group_id)     # open transactions' offsets go with it
    return error


async def delete_expired_groups(classic: ClassicGroups) -> list[str]:
    """Delete the empty consumer groups served here that hold no committed offsets
    (called after an offset-expiry pass); -> the ids deleted."""
    deleted = []
    runtime = classic.runtime
    for group_id, group in list(classic.consumer.groups.items()):
        if group.members or runtime.partition_for(group_id) not in runtime.partitions.owned:
            continue
        if classic.committed.committed(group_id):
            continue
        if await classic.consumer.locked(
                group_id, partial(_delete_if_idle, classic, group_id)) == ErrorCode.NONE:
            deleted.append(group_id)
    return deleted


async def _delete_if_idle(classic: ClassicGroups, group_id: str) -> int:
    group = classic.consumer.groups.get(group_id)          # re-checked under the lock
    if group is None or group.members or classic.committed.committed(group_id):
        return ErrorCode.NON_EMPTY_GROUP
    return await _delete(classic, group_id)


def list_groups(classic: ClassicGroups, states: set[str], types: set[str]
                ) -> list[tuple[str, str, str, str]]:
    """(group id, protocol type, state, group type) of the consumer groups served here,
    filtered as ListGroups v4/v5 ask (case-insensitive; empty filters match all)."""
    if types and GROUP_TYPE_CONSUMER not in {t.lower() for t in types}:
        return []
    wanted = {s.lower() for s in states}
    out = []
    for group_id, group in classic.consumer.groups.items():
        if classic.runtime.partition_for(group_id) not in classic.runtime.partitions.owned:
            continue
        state = gl.state_of(group).value
        if wanted and state.lower() not in wanted:
            continue
        out.append((group_id, CONSUMER_PROTOCOL_TYPE, state, GROUP_TYPE_CONSUMER))
    return out
