"""The topic-creation core: Kafka's ZkAdminManager.createTopics with
AdminZkClient's checks, shared by CreateTopics, Metadata auto-creation,
FindCoordinator (the internal topics) and CreatePartitions (the waits).

Per topic, in order (first failure wins, as ZkAdminManager + AdminZkClient):
  1. duplicate entry in the request          -> INVALID_REQUEST (the handler)
  2. already in the metadata cache           -> TOPIC_ALREADY_EXISTS
  3. a config with a null value              -> INVALID_CONFIG
  4. counts and an explicit assignment both  -> INVALID_REQUEST
  5. bad name / '.'-'_' collision            -> INVALID_TOPIC_EXCEPTION
  6. -1 counts -> num.partitions / default.replication.factor; replicas placed
     by controller.assign_replicas over the live brokers (racks honoured):
     count < 1 -> INVALID_PARTITIONS, RF < 1 or > live brokers -> INVALID_REPLICATION_FACTOR,
     count > MAX_PARTITIONS_PER_REQUEST -> POLICY_VIOLATION (KRaft Kafka's bound: a
     hostile count of 2^31-1 would otherwise be planned and written)
  7. explicit assignment: equal sizes, no duplicates, partitions 0..n-1
                                             -> INVALID_REPLICA_ASSIGNMENT
  8. configs: unknown key or bad value       -> INVALID_CONFIG
  9. validate_only: answer now; else ClusterStore.create_topic writes
     /config/topics/<t> then /brokers/topics/<t> (TopicAlreadyExists -> 36).

Its own module (not a handler's): handler modules never import each other.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from broker import topic_config
from protocol import topic_names
from controller import InvalidPartitions, InvalidReplicationFactor, TopicAlreadyExists, \
    assign_replicas
from protocol.errors import ErrorCode
from protocol.schema import ZERO_UUID

if TYPE_CHECKING:
    from broker.config import BrokerConfig
    from broker.metadata_cache import MetadataCache
    from broker.context import BrokerServices

log = logging.getLogger(__name__)

NO_LEADER = -1
LEADER_DURING_DELETE = -2
POLL_INTERVAL_S = 0.01   # how often a waiting admin request re-reads the metadata cache


@dataclass
class TopicRequest:
    name: str
    num_partitions: int = -1             # -1: num.partitions
    replication_factor: int = -1         # -1: default.replication.factor
    assignment: dict[int, list[int]] = field(default_factory=dict)
    configs: dict[str, str | None] = field(default_factory=dict)


@dataclass
class TopicOutcome:
    name: str
    error: int = ErrorCode.NONE
    message: str | None = None
    assignment: dict[int, list[int]] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)
    topic_id: uuid.UUID = ZERO_UUID

    @property
    def ok(self) -> bool:
        return self.error == ErrorCode.NONE


class TopicError(Exception):
    def __init__(self, error: int, message: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def live_racks(metadata: MetadataCache) -> dict[int, str | None]:
    """Live broker id -> rack, from the metadata cache."""
    return {b.id: b.rack for b in metadata.brokers()}


def check_assignment(assignment: dict[int, list[int]]) -> None:
    """AdminZkClient.validateTopicCreate's replica checks."""
    if len({len(r) for r in assignment.values()}) != 1:
        raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "All partitions should have the same number of replicas")
    for p, replicas in sorted(assignment.items()):
        if not replicas:
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Cannot have replication factor of 0 for partition id {p}.")
        if len(set(replicas)) != len(replicas):
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Duplicate replica assignment found: {assignment}")
    if sorted(assignment) != list(range(len(assignment))):
        raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "partitions should be a consecutive 0-based integer sequence")


MAX_PARTITIONS_PER_REQUEST = 10_000    # KRaft Kafka's MAX_PARTITIONS_PER_BATCH


def check_partition_count(count: int) -> None:
    """POLICY_VIOLATION for a partition count no request may ask for."""
    if count > MAX_PARTITIONS_PER_REQUEST:
        raise TopicError(ErrorCode.POLICY_VIOLATION,
                         "Excessively large number of partitions per request.")


def _plan(broker: BrokerServices, req: TopicRequest) -> dict[int, list[int]]:
    """Steps 2-8: -> the assignment to write; raises TopicError."""
    metadata, config = broker.metadata, broker.config
    if metadata.has_topic(req.name):
        raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{req.name}' already exists.")
    nulls = [k for k, v in req.configs.items() if v is None]
    if nulls:
        raise TopicError(ErrorCode.INVALID_CONFIG,
                         f"Null value not supported for topic configs: {','.join(nulls)}")
    if (req.num_partitions != -1 or req.replication_factor != -1) and req.assignment:
        raise TopicError(ErrorCode.INVALID_REQUEST,
                         "Both numPartitions or replicationFactor and replicasAssignments "
                         "were set. Both cannot be used at the same time.")
    try:
        topic_names.validate(req.name)
    except topic_names.InvalidTopicName as e:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, str(e)) from None
    clash = topic_names.colliding(req.name, set(metadata.topics()))
    if clash:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"Topic '{req.name}' collides with existing topics: {', '.join(clash)}")
    if req.assignment:
        assignment = {p: list(r) for p, r in req.assignment.items()}
        check_assignment(assignment)
    else:
        n = config.num_partitions if req.num_partitions == -1 else req.num_partitions
        check_partition_count(n)
        rf = (config.default_replication_factor if req.replication_factor == -1
              else req.replication_factor)
        try:
            assignment = assign_replicas(live_racks(metadata), n, rf)
        except InvalidPartitions as e:
            raise TopicError(ErrorCode.INVALID_PARTITIONS, str(e)) from None
        except InvalidReplicationFactor as e:
            raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, str(e)) from None
    try:
        topic_config.validate(req.configs)
    except topic_config.InvalidConfig as e:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(e)) from None
    return assignment


async def create_topic(broker: BrokerServices, req: TopicRequest,
                       validate_only: bool = False) -> TopicOutcome:
    """Validate and (unless validate_only) write one topic. Never raises for a
    client error: the TopicOutcome carries the error code and message."""
    out = TopicOutcome(req.name)
    try:
        out.assignment = _plan(broker, req)
        out.configs = {k: v for k, v in req.configs.items() if v is not None}
        if validate_only:
            return out
        if topic_names.has_collision_chars(req.name):
            log.warning("topic %r contains '.' or '_': it could collide with another topic's "
                        "metric names", req.name)
        out.topic_id = await broker.cluster.create_topic(req.name, out.assignment, out.configs)
        log.info("created topic %s (id %s) with %d partitions, replication factor %d",
                 req.name, out.topic_id, len(out.assignment),
                 len(next(iter(out.assignment.values()))))
    except TopicError as e:
        out.error, out.message = e.error, e.message
    except TopicAlreadyExists as e:
        out.error, out.message = ErrorCode.TOPIC_ALREADY_EXISTS, str(e)
    return out


# ---- waiting on the metadata cache (DelayedCreatePartitions / DelayedDeleteTopics) -------

def has_leaders(metadata: MetadataCache, topic: str, partitions: Iterable[int]) -> bool:
    """True once the metadata cache names a live leader for every partition listed."""
    if not metadata.has_topic(topic):
        return False
    leaders = {p.partition: p.leader for p in metadata.partitions(topic)}
    return all(leaders.get(p, NO_LEADER) not in (NO_LEADER, LEADER_DURING_DELETE)
               for p in partitions)


async def wait_until(done: Callable[[], bool], timeout_ms: int) -> bool:
    """Poll ``done`` until it holds or ``timeout_ms`` passes; -> whether it held.

    The metadata cache changes only when the controller's UpdateMetadata lands, so
    a short poll is cheap and needs no hook into the cache."""
    deadline = time.monotonic() + max(timeout_ms, 0) / 1000
    while not done():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(POLL_INTERVAL_S, remaining))
    return True


async def await_leaders(broker: BrokerServices, outcomes: list[TopicOutcome],
                        timeout_ms: int) -> None:
    """Wait for leaders of every created topic; the ones without -> REQUEST_TIMED_OUT."""
    created = [o for o in outcomes if o.ok]
    if not created:
        return
    if timeout_ms > 0:
        await wait_until(lambda: all(has_leaders(broker.metadata, o.name, o.assignment)
                                     for o in created), timeout_ms)
    for o in created:
        if timeout_ms <= 0 or not has_leaders(broker.metadata, o.name, o.assignment):
            o.error, o.message = ErrorCode.REQUEST_TIMED_OUT, None


# ---- auto-creation (Metadata, FindCoordinator) --------------------------------------------

# Kafka's settings for the internal topics it creates on demand
# (GroupCoordinator.groupMetadataTopicConfigs, TransactionStateManager).
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "compression.type": "producer",
                         "segment.bytes": "104857600"}
TXN_TOPIC_CONFIGS = {"cleanup.policy": "compact", "compression.type": "uncompressed",
                     "segment.bytes": "104857600", "unclean.leader.election.enable": "false",
                     "min.insync.replicas": "2"}


def auto_create_request(config: BrokerConfig, name: str) -> TopicRequest:
    """What Kafka's AutoTopicCreationManager asks for, per topic name."""
    if name == topic_names.GROUP_METADATA_TOPIC:
        return TopicRequest(name, config.offsets_topic_num_partitions,
                            config.offsets_topic_replication_factor,
                            configs=dict(OFFSETS_TOPIC_CONFIGS))
    if name == topic_names.TRANSACTION_STATE_TOPIC:
        configs: dict[str, str | None] = dict(TXN_TOPIC_CONFIGS)
        configs["min.insync.replicas"] = str(config.transaction_state_log_min_isr)
        return TopicRequest(name, config.transaction_state_log_num_partitions,
                            config.transaction_state_log_replication_factor,
                            configs=configs)
    return TopicRequest(name, config.num_partitions, config.default_replication_factor)
