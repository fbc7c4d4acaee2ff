"""FindCoordinator (API key 10), versions 0-6.

v0-3 ask for one key, v4+ for a batch (``coordinator_keys``), answered one
entry each. Key type 0 = group, 1 = transactional id (v1+), 2 = share group
(v6+: no share coordinator here, COORDINATOR_NOT_AVAILABLE); others ->
INVALID_REQUEST for every key.

ACLs (broker/acl), per key before anything else: DESCRIBE on the group
(GROUP_AUTHORIZATION_FAILED), DESCRIBE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), CLUSTER_ACTION on the cluster for a
share key (CLUSTER_AUTHORIZATION_FAILED), as KafkaApis.getCoordinator.

A group's coordinator is the leader of __consumer_offsets partition
``abs(javaHashCode(group)) % partitions``. The topic is created on first use
with offsets.topic.num.partitions / offsets.topic.replication.factor and
cleanup.policy=compact, segment.bytes=100 MiB (whatever
auto.create.topics.enable says); while it is being created, when fewer brokers
are alive than the replication factor (Kafka does not shrink it), or while the
partition has no live leader, the answer is COORDINATOR_NOT_AVAILABLE.
A transactional id's coordinator is found the same way in __transaction_state
(transaction.state.log.num.partitions / replication.factor / min.isr), created on
first use likewise.

Beyond Kafka: a leader this broker's replica fetcher cannot reach (its last round
failed on the connection: reset, refused, timed out, and none went through since) is
not named either: COORDINATOR_NOT_AVAILABLE. After a kill -9 the metadata names the
dead broker until ZooKeeper expires its session and the controller elects (~session
timeout); a client told the dead broker caches it, and librdkafka then waits for a
broker state change before asking again (confluentinc/librdkafka#5511), often until
the dead broker is back. Told "not available", clients ask again within their back-off
and find the new leader as soon as it is elected.

Error messages as Kafka's ``Errors.message()``: "NONE" on success.
"""

from __future__ import annotations

import logging
from typing import Protocol

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed, allowed_cluster
from broker.context import BrokerServices, RequestContext
from coordinator.group.classic import OFFSETS_TOPIC
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from protocol.topic_names import TRANSACTION_STATE_TOPIC
from broker.topic_creation import auto_create_request, create_topic
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger(__name__)

SPEC = api(ApiKey.FIND_COORDINATOR).response
COORDINATOR = SPEC.structs["Coordinator"]

KEY_GROUP = 0
KEY_TRANSACTION = 1
KEY_SHARE = 2

Found = tuple[int, int, str, int]   # (error, node id, host, port)


class CreatesTopicOnce(Protocol):
    """A coordinator whose topic FindCoordinator creates (the group or the
    transaction coordinator): ``creating_topic`` marks an attempt in flight."""

    creating_topic: bool


def _message(error: int) -> str:
    return "NONE" if error == ErrorCode.NONE else ErrorCode.from_code(error).message or ""


async def _ensure_topic(broker: BrokerServices, topic: str, owner: CreatesTopicOnce) -> None:
    """Create the coordinator's topic once (concurrent finds share one attempt;
    ``owner.creating_topic`` marks the attempt in flight)."""
    if owner.creating_topic:
        return
    owner.creating_topic = True
    try:
        outcome = await create_topic(broker, auto_create_request(broker.config, topic))
        if outcome.ok:
            log.info("created %s", topic)
        elif outcome.error != ErrorCode.TOPIC_ALREADY_EXISTS:
            log.warning("could not create %s: %s %s", topic,
                        ErrorCode.from_code(outcome.error).name, outcome.message or "")
    finally:
        owner.creating_topic = False


async def _leader_of(broker: BrokerServices, topic: str, partition: int, owner: CreatesTopicOnce,
                     listener: str | None = None) -> Found:
    """The live leader of ``topic``-``partition``, creating the topic first if need be."""
    metadata = broker.metadata
    if not metadata.has_topic(topic):
        await _ensure_topic(broker, topic, owner)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    leader = next((p.leader for p in metadata.partitions(topic) if p.partition == partition), -1)
    node = (metadata.broker(leader) if listener is None else metadata.broker_on(leader, listener)
            ) if leader >= 0 else None
    if node is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    if leader != broker.broker_id and broker.replicas is not None \
            and broker.replicas.fetchers.unreachable(leader):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    return ErrorCode.NONE, node.id, node.host, node.port


async def find_group_coordinator(broker: BrokerServices, group_id: str, listener: str | None = None
                                 ) -> Found:
    """The group's coordinator, with its endpoint on ``listener`` (None: the
    inter-broker one)."""
    coordinator = coordinator_of(broker)
    return await _leader_of(broker, OFFSETS_TOPIC, coordinator.partition_for(group_id),
                            coordinator, listener)


async def find_transaction_coordinator(broker: BrokerServices, transactional_id: str,
                                       listener: str | None = None) -> Found:
    coordinator = broker.transaction_coordinator
    if coordinator is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    return await _leader_of(broker, TRANSACTION_STATE_TOPIC,
                            coordinator.state.partition_for(transactional_id), coordinator,
                            listener)


def _refused(ctx: RequestContext, key: str, key_type: int) -> int:
    """The key's authorization error (NONE when allowed)."""
    if key_type == KEY_GROUP:
        ok = allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key)
        return ErrorCode.NONE if ok else ErrorCode.GROUP_AUTHORIZATION_FAILED
    if key_type == KEY_TRANSACTION:
        ok = allowed(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key)
        return ErrorCode.NONE if ok else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    ok = allowed_cluster(ctx, AclOperation.CLUSTER_ACTION)
    return ErrorCode.NONE if ok else ErrorCode.CLUSTER_AUTHORIZATION_FAILED


async def _find(ctx: RequestContext, key: str, key_type: int) -> Found:
    if key_type not in (KEY_GROUP, KEY_TRANSACTION, KEY_SHARE) \
            or (key_type == KEY_SHARE and ctx.version < 6):
        return ErrorCode.INVALID_REQUEST, -1, "", -1
    refused = _refused(ctx, key, key_type)
    if refused != ErrorCode.NONE:
        return refused, -1, "", -1
    # not before the controller told a (re)started broker the cluster: with an empty
    # cache the internal topic looks missing (MetadataCache.wait_received)
    await ctx.broker.metadata.wait_received(ctx.broker.config.request_timeout_ms / 2000)
    if key_type == KEY_GROUP:
        return await find_group_coordinator(ctx.broker, key, ctx.connection.listener)
    if key_type == KEY_TRANSACTION:
        return await find_transaction_coordinator(ctx.broker, key, ctx.connection.listener)
    return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1


@handler(ApiKey.FIND_COORDINATOR)
async def handle_find_coordinator(ctx: RequestContext, request: Struct) -> Struct:
    keys = list(request.coordinator_keys) if ctx.version >= 4 else [request.key]
    key_type = request.key_type if ctx.version >= 1 else KEY_GROUP
    found = [await _find(ctx, key, key_type) for key in keys]
    if ctx.version >= 4:
        return SPEC.new(throttle_time_ms=0, coordinators=[
            COORDINATOR.new(key=key, node_id=node, host=host, port=port, error_code=int(error),
                            error_message=_message(error))
            for key, (error, node, host, port) in zip(keys, found)])
    error, node, host, port = found[0]
    return SPEC.new(throttle_time_ms=0, error_code=int(error), error_message=_message(error),
                    node_id=node, host=host, port=port)
