"""CreatePartitions (API key 37), versions 0-3 (as Kafka's ZkAdminManager.createPartitions).

Per topic, first failure wins:
  1. the topic twice in the request          -> INVALID_REQUEST
  2. queued for deletion                     -> INVALID_TOPIC_EXCEPTION
  3. no /brokers/topics/<t>                  -> UNKNOWN_TOPIC_OR_PARTITION
  4. a reassignment in progress              -> REASSIGNMENT_IN_PROGRESS
  5. Count not above the current count       -> INVALID_PARTITIONS; more than
     10,000 new partitions                   -> POLICY_VIOLATION (topic_creation)
  6. explicit Assignments (one replica list per new partition): brokers not
     registered, wrong number of lists, empty or duplicate lists, a size other
     than partition 0's                      -> INVALID_REPLICA_ASSIGNMENT;
     null Assignments: placed by controller.assign_replicas over the live
     brokers, starting after partition 0's leader, partition ids continuing
     from the current count (Kafka's AdminZkClient.createNewPartitionsAssignment).
Then, unless ValidateOnly, ClusterStore.add_partitions writes the grown
assignment (the controller picks it up) and the answer waits up to TimeoutMs for
leaders of every partition in the metadata cache; REQUEST_TIMED_OUT otherwise
(always when TimeoutMs <= 0, as Kafka).
"""

from __future__ import annotations

import logging
from collections import Counter

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.context import BrokerServices, RequestContext
from broker.dispatch import handler
from broker.topic_creation import TopicError, check_partition_count, has_leaders, wait_until
from controller import InvalidPartitions, InvalidReplicationFactor, TopicNotFound, \
    assign_replicas
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger(__name__)

SPEC = api(ApiKey.CREATE_PARTITIONS).response
RESULT = SPEC.structs["CreatePartitionsTopicResult"]


def _explicit(lists: list[list[int]], existing: dict[int, list[int]]) -> dict[int, list[int]]:
    """AdminZkClient.validateReplicaAssignment over the new partitions' lists."""
    rf = len(existing[0])
    new = {len(existing) + i: list(r) for i, r in enumerate(lists)}
    for p, replicas in new.items():
        if not replicas:
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Cannot have replication factor of 0 for partition id {p}.")
        if len(set(replicas)) != len(replicas):
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "Duplicate brokers not allowed in replica assignment: "
                             f"{', '.join(map(str, replicas))} for partition id {p}.")
    bad = sorted(p for p, r in new.items() if len(r) != rf)
    if bad:
        raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"Inconsistent replication factor between partitions, partition 0 has "
                         f"{rf} while partitions [{', '.join(map(str, bad))}] have replication "
                         f"factors [{', '.join(str(len(new[p])) for p in bad)}], respectively.")
    return new


def _placed(existing: dict[int, list[int]], count: int,
            live: dict[int, str | None]) -> dict[int, list[int]]:
    """Broker-chosen replicas for partitions len(existing)..count-1."""
    first = existing[0]
    ids = sorted(live)
    start = max(0, next((i for i, b in enumerate(ids) if b >= first[0]), -1))
    try:
        return assign_replicas(live, count - len(existing), len(first),
                               start_index=start, start_partition=len(existing))
    except InvalidPartitions as e:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, str(e)) from None
    except InvalidReplicationFactor as e:
        raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, str(e)) from None


async def _plan(broker: BrokerServices, t: Struct,
                live: dict[int, str | None]) -> dict[int, list[int]]:
    """-> every partition's replicas after the change; raises TopicError."""
    current = (await broker.cluster.read_topics([t.name])).get(t.name)
    if current is None or not current.partitions:
        raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         f"The topic '{t.name}' does not exist.")
    if current.adding or current.removing:
        raise TopicError(ErrorCode.REASSIGNMENT_IN_PROGRESS,
                         f"A partition reassignment is in progress for the topic '{t.name}'.")
    existing = {p: list(r) for p, r in current.partitions.items()}
    old = len(existing)
    if t.count < old:
        raise TopicError(ErrorCode.INVALID_PARTITIONS,
                         f"Topic currently has {old} partitions, which is higher than the "
                         f"requested {t.count}.")
    if t.count == old:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {old} partitions.")
    check_partition_count(t.count - old)
    if t.assignments is not None:
        lists = [list(a.broker_ids) for a in t.assignments]
        unknown = sorted({b for r in lists for b in r} - set(live))
        if unknown:
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "Unknown broker(s) in replica assignment: "
                             f"{', '.join(map(str, unknown))}.")
        if len(lists) != t.count - old:
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Increasing the number of partitions by {t.count - old} but "
                             f"{len(lists)} assignments provided.")
        new = _explicit(lists, existing)
    else:
        new = _placed(existing, t.count, live)
    return {**existing, **new}


@handler(ApiKey.CREATE_PARTITIONS)
async def handle_create_partitions(ctx: RequestContext, request: Struct) -> Struct:
    broker = ctx.broker
    counts = Counter(t.name for t in request.topics)
    deleting = set(await broker.cluster.topics_to_delete())
    live = {b.id: b.rack for b in await broker.cluster.live_brokers()}
    results: list[tuple[str, int, str | None, dict[int, list[int]]]] = []
    for t in request.topics:
        try:
            if counts[t.name] > 1:
                raise TopicError(ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
            if not allowed(ctx, AclOperation.ALTER, ResourceType.TOPIC, t.name):  # ACL
                raise TopicError(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                 "The topic authorization is failed.")
            if t.name in deleting:
                raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                 "The topic is queued for deletion.")
            full = await _plan(broker, t, live)
            if not request.validate_only:
                await broker.cluster.add_partitions(t.name, full)
                log.info("topic %s grown to %d partitions", t.name, len(full))
            results.append((t.name, ErrorCode.NONE, None, full))
        except TopicError as e:
            results.append((t.name, e.error, e.message, {}))
        except TopicNotFound:
            results.append((t.name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            f"The topic '{t.name}' does not exist.", {}))
    if not request.validate_only:
        results = await _await(broker, results, request.timeout_ms)
    return SPEC.new(throttle_time_ms=0, results=[
        RESULT.new(name=n, error_code=int(e), error_message=m) for n, e, m, _ in results])


async def _await(broker: BrokerServices,
                 results: list[tuple[str, int, str | None, dict[int, list[int]]]],
                 timeout_ms: int) -> list[tuple[str, int, str | None, dict[int, list[int]]]]:
    """DelayedCreatePartitions: leaders for every partition, or REQUEST_TIMED_OUT."""
    done = [(n, a) for n, e, _, a in results if e == ErrorCode.NONE]
    if done and timeout_ms > 0:
        await wait_until(lambda: all(has_leaders(broker.metadata, n, a) for n, a in done),
                         timeout_ms)
    out = []
    for n, e, m, a in results:
        if e == ErrorCode.NONE and (timeout_ms <= 0 or not has_leaders(broker.metadata, n, a)):
            e, m = ErrorCode.REQUEST_TIMED_OUT, None
        out.append((n, e, m, a))
    return out
