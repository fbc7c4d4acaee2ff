"""ConsumerGroupDescribe (API key 69), versions 0-1: KIP-848 consumer groups as
their coordinator sees them.

Per group: its state (Empty / Assigning / Reconciling / Stable), group and
assignment epochs, the assignor in use, and per member its epoch, subscription,
current assignment (the partitions it may use now, not those pending
revocation) and target assignment, with topic names (topics no longer in the
metadata are left out, as Kafka). v1 adds each member's MemberType (0 a
classic-protocol member, 1 a consumer-protocol member).
* an empty group id: INVALID_GROUP_ID; a group served elsewhere: NOT_COORDINATOR
  / COORDINATOR_LOAD_IN_PROGRESS; an unknown id or a classic group's:
  GROUP_ID_NOT_FOUND with Kafka's message;
* ACLs (broker/acl): DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED
  for it; AuthorizedOperations when asked (no authorizer: READ, DELETE,
  DESCRIBE), else INT32_MIN;
* group.coordinator.rebalance.protocols without "consumer": UNSUPPORTED_VERSION
  for every group.
"""

from __future__ import annotations

import uuid

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed, authorized_operations
from coordinator.group.consumer.group_logic import state_of
from coordinator.group.consumer.model import Assignment, ConsumerGroup
from coordinator.group.consumer.topic_view import LiveTopicView
from broker.context import RequestContext
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.CONSUMER_GROUP_DESCRIBE).response
GROUP = SPEC.structs["DescribedGroup"]
MEMBER = SPEC.structs["Member"]
ASSIGNMENT = SPEC.structs["Assignment"]
TOPIC_PARTITIONS = SPEC.structs["TopicPartitions"]
OPERATIONS_NOT_REQUESTED = -2147483648
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)   # READ, DELETE, DESCRIBE
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1


def _error(group_id: str, code: int, message: str | None = None) -> Struct:
    return GROUP.new(error_code=int(code), error_message=message, group_id=group_id,
                     authorized_operations=OPERATIONS_NOT_REQUESTED)


def _assignment(assignment: Assignment | None, names: dict[uuid.UUID, str]) -> Struct:
    return ASSIGNMENT.new(topic_partitions=[
        TOPIC_PARTITIONS.new(topic_id=topic_id, topic_name=names[topic_id],
                             partitions=sorted(parts))
        for topic_id, parts in sorted((assignment or {}).items(), key=lambda kv: str(kv[0]))
        if parts and topic_id in names])


def describe(group: ConsumerGroup, names: dict[uuid.UUID, str], assignor: str,
             operations: int) -> Struct:
    return GROUP.new(
        error_code=0, group_id=group.group_id, group_state=state_of(group).value,
        group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
        assignor_name=assignor, authorized_operations=operations,
        members=[MEMBER.new(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
            member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=list(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=_assignment(m.assigned, names),
            target_assignment=_assignment(group.target.get(m.member_id), names),
            member_type=CLASSIC_MEMBER if m.classic is not None else CONSUMER_MEMBER)
            for m in group.members.values()])


@handler(ApiKey.CONSUMER_GROUP_DESCRIBE)
async def handle_consumer_group_describe(ctx: RequestContext, request: Struct) -> Struct:
    coordinator = coordinator_of(ctx.broker)
    consumer = coordinator.consumer
    with_ops = bool(request.include_authorized_operations)
    out: list[Struct] = []
    names: dict[uuid.UUID, str] | None = None
    for group_id in request.group_ids:
        if not consumer.enabled:
            out.append(_error(group_id, ErrorCode.UNSUPPORTED_VERSION))
            continue
        if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            out.append(_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        error = coordinator.status(group_id)
        if error is not None:
            out.append(_error(group_id, error))
            continue
        group = consumer.groups.get(group_id)
        if group is None:
            message = (f"Group {group_id} is not a consumer group."
                       if group_id in coordinator.groups and coordinator.groups[group_id].members
                       else f"Group {group_id} not found.")
            out.append(_error(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message))
            continue
        if names is None:
            names = topic_names(consumer.topics)
        ops = (authorized_operations(ctx, ResourceType.GROUP, group_id, GROUP_OPERATIONS)
               if with_ops else OPERATIONS_NOT_REQUESTED)
        out.append(describe(group, names, consumer.assignor_of(group), ops))
    return SPEC.new(throttle_time_ms=0, groups=out)


def topic_names(topics: LiveTopicView) -> dict[uuid.UUID, str]:
    """topic id -> name of every topic the consumer coordinator's view knows."""
    out: dict[uuid.UUID, str] = {}
    for name in topics.names():
        meta = topics.by_name(name)
        if meta is not None:
            out[meta.topic_id] = name
    return out
