"""DescribeProducers (API key 61), version 0: the active producers of partitions
this broker leads (KIP-664; ``pybroker transactions describe-producers`` and
Kafka's admin ``describeProducers``).

Per partition, from its producer state (``broker/replication/producer_state.py``):
producer id, epoch, last sequence, last timestamp, the coordinator epoch of its last
marker, and the first offset of its open transaction (-1: none) — what finds a
hanging transaction. Errors per partition: TOPIC_AUTHORIZATION_FAILED without READ
on the topic, NOT_LEADER_OR_FOLLOWER on a follower or a broker that does not host a
partition the cluster knows, UNKNOWN_TOPIC_OR_PARTITION otherwise.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.context import RequestContext
from broker.dispatch import handler
from broker.handler_support import refine_unknown
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.DESCRIBE_PRODUCERS).response
TOPIC = SPEC.structs["TopicResponse"]
PARTITION = SPEC.structs["PartitionResponse"]
PRODUCER = SPEC.structs["ProducerState"]


@handler(ApiKey.DESCRIBE_PRODUCERS)
async def handle_describe_producers(ctx: RequestContext, request: Struct) -> Struct:
    topics = []
    for t in request.topics:
        readable = allowed(ctx, AclOperation.READ, ResourceType.TOPIC, t.name)
        topics.append(TOPIC.new(name=t.name, partitions=[
            _partition(ctx, t.name, int(i), readable) for i in t.partition_indexes]))
    return SPEC.new(throttle_time_ms=0, topics=topics)


def _partition(ctx: RequestContext, topic: str, index: int, readable: bool) -> Struct:
    if not readable:
        return PARTITION.new(partition_index=index,
                             error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    p = ctx.broker.replicas.partition(topic, index)
    if p is None or not p.is_leader:
        error = ErrorCode.NOT_LEADER_OR_FOLLOWER if p is not None else refine_unknown(
            ctx, topic, index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return PARTITION.new(partition_index=index, error_code=error)
    state = p.producers
    return PARTITION.new(partition_index=index, error_code=ErrorCode.NONE, active_producers=[
        PRODUCER.new(producer_id=pid, producer_epoch=e.epoch, last_sequence=e.last_seq,
                     last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                     current_txn_start_offset=state.ongoing.get(pid, -1))
        for pid, e in sorted(state.producers.items())])
