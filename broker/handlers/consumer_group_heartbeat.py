"""ConsumerGroupHeartbeat (API key 68), versions 0-1: the KIP-848 consumer group
protocol's one request (join with epoch 0, heartbeat, leave with -1 / -2).

The group state machine is coordinator/group/consumer/group_logic.py; the coordinator
glue (writes, timers, ownership) is coordinator/group/consumer/coordinator.py. Here:
* group.coordinator.rebalance.protocols without "consumer": UNSUPPORTED_VERSION
  (Kafka answers so when the protocol is off);
* ACLs (broker/acl): READ on the group, else GROUP_AUTHORIZATION_FAILED; a
  SubscribedTopicNames list needs DESCRIBE on every topic in it, else
  TOPIC_AUTHORIZATION_FAILED (Kafka 4.0);
* NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS from the classic coordinator's
  ownership of __consumer_offsets (``status``);
* the response's Assignment is null unless the member's assignment changed
  (or it joined, or reported owning something else).
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.acl.checks import authorized_names
from coordinator.group.consumer.group_logic import Heartbeat, HeartbeatResult
from coordinator.group.consumer.model import Assignment
from broker.context import RequestContext
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from broker.handlers.join_group import client_host
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.CONSUMER_GROUP_HEARTBEAT).response
ASSIGNMENT = SPEC.structs["Assignment"]
TOPIC_PARTITIONS = SPEC.structs["TopicPartitions"]


def _error(code: int, message: str | None = None) -> Struct:
    return SPEC.new(throttle_time_ms=0, error_code=int(code), error_message=message)


def owned_of(topic_partitions: list[Struct] | None) -> Assignment | None:
    if topic_partitions is None:
        return None
    out: Assignment = {}
    for tp in topic_partitions:
        if tp.partitions:
            out[tp.topic_id] = out.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return out


def response_of(result: HeartbeatResult) -> Struct:
    assignment = None
    if result.assignment is not None:
        assignment = ASSIGNMENT.new(topic_partitions=[
            TOPIC_PARTITIONS.new(topic_id=topic_id, partitions=sorted(parts))
            for topic_id, parts in sorted(result.assignment.items(), key=lambda kv: str(kv[0]))
            if parts])
    return SPEC.new(throttle_time_ms=0, error_code=int(result.error),
                    error_message=result.message, member_id=result.member_id,
                    member_epoch=result.member_epoch,
                    heartbeat_interval_ms=result.heartbeat_interval_ms, assignment=assignment)


@handler(ApiKey.CONSUMER_GROUP_HEARTBEAT)
async def handle_consumer_group_heartbeat(ctx: RequestContext, request: Struct) -> Struct:
    coordinator = coordinator_of(ctx.broker)
    if not coordinator.consumer.enabled:
        return _error(ErrorCode.UNSUPPORTED_VERSION,
                      "The consumer group protocol is disabled "
                      "(group.coordinator.rebalance.protocols).")
    if not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    names = request.subscribed_topic_names
    if names:
        described = authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
        if any(n not in described for n in names):
            return _error(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    hb = Heartbeat(
        group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch, instance_id=request.instance_id,
        rack_id=request.rack_id, rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=None if names is None else list(names),
        subscribed_topic_regex=request.subscribed_topic_regex if ctx.version >= 1 else None,
        server_assignor=request.server_assignor,
        owned=owned_of(request.topic_partitions),
        client_id=ctx.header.client_id or "", client_host=client_host(ctx),
        api_version=ctx.version)
    return response_of(await coordinator.consumer.heartbeat(hb))
