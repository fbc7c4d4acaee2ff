"""DescribeWhy (API key 10000), version 0: pybroker's own admin API (not Kafka's;
never advertised in ApiVersions), flexible.

Serves the facts broker/why/ keeps: per resource in the request, one result in
the same order (the layout is in protocol/spec/pybroker/describe_why.py and
broker/why/__init__.py):

* BROKER (1), name "" or this broker's id: ``BrokerStatus`` (ZooKeeper session
  state, is_controller, controller id, uptime). Another id -> INVALID_REQUEST
  (every broker answers for itself; ask the one you mean).
* PARTITION (2), name topic, partition index: ``PartitionWhy`` from the leader:
  ISR, HW, LEO, the replicas holding the HW back, the leader's view of each
  replica, the last ISR changes with reasons. Not the leader ->
  NOT_LEADER_OR_FOLLOWER (a partition this broker does not host but the cluster
  knows, too); unknown -> UNKNOWN_TOPIC_OR_PARTITION.
* GROUP (3), name the group id: ``GroupWhy`` from the coordinator: state,
  generation, the last rebalances with what started each. Not the coordinator
  -> NOT_COORDINATOR; loading -> COORDINATOR_LOAD_IN_PROGRESS. A group the
  coordinator does not know answers "Dead" with whatever history is left.
* any other type -> INVALID_REQUEST. More than ``MAX_RESOURCES`` resources ->
  one INVALID_REQUEST result (type 0) instead of an answer per resource.

ACLs (broker/acl), as DescribeConfigs asks: DESCRIBE on the topic
(TOPIC_AUTHORIZATION_FAILED), on the group (GROUP_AUTHORIZATION_FAILED), on the
cluster for BROKER (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed, allowed_cluster
from broker.context import RequestContext
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from broker.handler_support import refine_unknown
from broker.why.broker_status import broker_status
from coordinator.group.why.group_facts import group_why
from broker.why.isr_facts import partition_why
from protocol.why_model import BrokerStatus, GroupWhy, PartitionWhy
from protocol.api_keys import PybrokerApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

BROKER, PARTITION, GROUP = 1, 2, 3
MAX_RESOURCES = 1000

SPEC = api(PybrokerApiKey.DESCRIBE_WHY).response
RESULT = SPEC.structs["WhyResult"]
BROKER_STATUS = SPEC.structs["WhyBrokerStatus"]
PARTITION_WHY = SPEC.structs["WhyPartition"]
REPLICA = SPEC.structs["WhyReplica"]
ISR_CHANGE = SPEC.structs["WhyIsrChange"]
GROUP_WHY = SPEC.structs["WhyGroup"]
REBALANCE = SPEC.structs["WhyRebalance"]


@handler(PybrokerApiKey.DESCRIBE_WHY)
async def handle_describe_why(ctx: RequestContext, request: Struct) -> Struct:
    if len(request.resources) > MAX_RESOURCES:
        return SPEC.new(throttle_time_ms=0, results=[RESULT.new(
            error_code=ErrorCode.INVALID_REQUEST, resource_type=0, resource_name="",
            error_message=f"{len(request.resources)} resources in one DescribeWhy; "
                          f"at most {MAX_RESOURCES}")])
    return SPEC.new(throttle_time_ms=0, results=[_answer(ctx, r) for r in request.resources])


def _answer(ctx: RequestContext, res: Struct) -> Struct:
    kind, name, index = res.resource_type, res.resource_name, res.partition
    out = RESULT.new(error_code=0, resource_type=kind, resource_name=name, partition=index)
    if kind == BROKER:
        if not allowed_cluster(ctx, AclOperation.DESCRIBE):
            return _fail(out, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        if name not in ("", str(ctx.broker.broker_id)):
            return _fail(out, ErrorCode.INVALID_REQUEST,
                         f"this is broker {ctx.broker.broker_id}, not {name!r}")
        b = ctx.broker
        out.broker_status = _broker_struct(broker_status(
            b.broker_id, b.zk_session, b.controller, b.metadata.controller_id))
    elif kind == PARTITION:
        if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            return _fail(out, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        replicas = ctx.broker.replicas
        p = replicas.partition(name, index) if replicas is not None else None
        if p is None:
            error = refine_unknown(ctx, name, index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return _fail(out, error, f"{name}-{index} is not hosted by broker "
                                     f"{ctx.broker.broker_id}")
        if not p.is_leader:
            return _fail(out, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                         f"broker {ctx.broker.broker_id} is not the leader of {name}-{index} "
                         f"(leader {p.leader_id})")
        out.partition_why = _partition_struct(partition_why(p))
    elif kind == GROUP:
        if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, name):
            return _fail(out, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        coordinator = coordinator_of(ctx.broker)
        status = coordinator.status(name)
        if status is not None:
            return _fail(out, status, f"broker {ctx.broker.broker_id} does not coordinate "
                                     f"group {name!r} now")
        out.group_why = _group_struct(group_why(coordinator, name))
    else:
        return _fail(out, ErrorCode.INVALID_REQUEST,
                     f"unknown resource type {kind} (BROKER=1, PARTITION=2, GROUP=3)")
    return out


def _fail(out: Struct, error: int, message: str | None = None) -> Struct:
    out.error_code = int(error)
    out.error_message = message if message is not None else ErrorCode.from_code(error).message
    return out


def _broker_struct(s: BrokerStatus) -> Struct:
    return BROKER_STATUS.new(broker_id=s.broker_id, zk_session_state=s.zk_session_state,
                             is_controller=s.is_controller, controller_id=s.controller_id,
                             uptime_ms=s.uptime_ms)


def _partition_struct(w: PartitionWhy) -> Struct:
    return PARTITION_WHY.new(
        leader=w.leader, leader_epoch=w.leader_epoch, isr=list(w.isr),
        high_watermark=w.high_watermark, log_end_offset=w.log_end_offset,
        hw_held_by=list(w.hw_held_by),
        replicas=[REPLICA.new(broker_id=r.broker_id, log_end_offset=r.log_end_offset,
                              last_caught_up_ms=r.last_caught_up_ms,
                              last_fetch_ms=r.last_fetch_ms, in_isr=r.in_isr)
                  for r in w.replicas],
        isr_changes=[ISR_CHANGE.new(time_ms=c.time_ms, kind=c.kind, replica=c.replica,
                                    reason=c.reason, lag_ms=c.lag_ms,
                                    lag_messages=c.lag_messages, isr_after=list(c.isr_after))
                     for c in w.isr_changes])


def _group_struct(g: GroupWhy) -> Struct:
    return GROUP_WHY.new(
        state=g.state, generation=g.generation,
        rebalances=[REBALANCE.new(time_ms=e.time_ms, generation=e.generation, kind=e.kind,
                                  member_id=e.member_id, client_id=e.client_id, host=e.host,
                                  reason=e.reason)
                    for e in g.rebalances])
