"""The DescribeWhy verbs: why a partition's ISR / HW are what they are, why a group
rebalanced, and a broker's own status, decoded into ``protocol.why_model``.

DescribeWhy (API key 10000, version 0) is pybroker's own API
(protocol/spec/pybroker/describe_why.py, broker/why/): brokers serve it but never
list it in ApiVersions, so it is sent at v0 without version negotiation — to a
pybroker broker only (anything else closes the connection:
``KafkaConnectionError``).

Routing, over a ``KafkaAdmin`` (or anything with one as ``.admin``, e.g.
``GroupAdmin``), with its metadata and connection pool:

* ``describe_partition_why``: to the partition's leader from the admin's
  metadata; NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION /
  LEADER_NOT_AVAILABLE (a leader moving, stale metadata) refresh and resend; a
  partition the metadata names no leader for raises UNKNOWN_TOPIC_OR_PARTITION
  (unknown to the metadata) or LEADER_NOT_AVAILABLE.
* ``describe_group_why``: FindCoordinator, then the coordinator;
  NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS
  find it again and resend.
* ``describe_broker_status``: to that broker.

Retries stop after ``RETRIES`` attempts; any error left is raised as
``protocol.errors.KafkaError`` carrying the broker's error code and message.
"""

from __future__ import annotations

import asyncio
from typing import Any

from client.admin import KafkaAdmin
from client.connection import KafkaConnection
from client.errors import KafkaConnectionError
from client.groups import find_coordinator
from protocol.why_model import (BrokerStatus, GroupWhy, IsrChange, PartitionWhy, RebalanceEvent,
                              ReplicaProgress)
from protocol.api_keys import PybrokerApiKey
from protocol.errors import ErrorCode, KafkaError
from protocol.schema import Struct
from protocol.spec import api

__all__ = ["RESOURCE_BROKER", "RESOURCE_PARTITION", "RESOURCE_GROUP", "describe_why",
           "describe_partition_why", "describe_group_why", "describe_broker_status"]

RESOURCE_BROKER, RESOURCE_PARTITION, RESOURCE_GROUP = 1, 2, 3
VERSION = 0
RETRIES = 8
BACKOFF_S = 0.2
_REQUEST = api(PybrokerApiKey.DESCRIBE_WHY).request
_RESOURCE = _REQUEST.structs["WhyResource"]
_LEADER_MOVED = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                           ErrorCode.LEADER_NOT_AVAILABLE})
_COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})


async def describe_why(conn: KafkaConnection,
                       resources: list[tuple[int, str, int]]) -> list[Struct]:
    """One DescribeWhy at ``conn``: [(type, name, partition)] -> the WhyResult structs."""
    body = _REQUEST.new(resources=[_RESOURCE.new(resource_type=t, resource_name=n, partition=p)
                                   for t, n, p in resources])
    resp = await conn.request(PybrokerApiKey.DESCRIBE_WHY, body, VERSION)
    assert resp is not None
    return list(resp.results)


def _admin(admin_or_pool: Any) -> KafkaAdmin:
    if isinstance(admin_or_pool, KafkaAdmin):
        return admin_or_pool
    inner = getattr(admin_or_pool, "admin", None)
    if isinstance(inner, KafkaAdmin):
        return inner
    raise TypeError(f"need a KafkaAdmin (or an object with one as .admin), "
                    f"not {type(admin_or_pool).__name__}")


def _no_leader_error(admin: KafkaAdmin, topic: str, partition: int) -> int:
    """UNKNOWN_TOPIC_OR_PARTITION when the metadata does not know the partition
    (or says so), else LEADER_NOT_AVAILABLE."""
    t = admin.cluster.topics.get(topic) if admin.cluster is not None else None
    if t is None or t.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION \
            or partition not in t.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.LEADER_NOT_AVAILABLE


def _raise(result: Struct) -> None:
    if result.error_code:
        raise KafkaError(result.error_code, result.error_message)


async def describe_partition_why(admin_or_pool: Any, topic: str, partition: int) -> PartitionWhy:
    """The partition's leader's account of its ISR and high watermark."""
    admin = _admin(admin_or_pool)
    result: Struct | None = None
    for attempt in range(RETRIES):
        try:
            conn = await admin.leader_connection(topic, partition, refresh=attempt > 0)
        except KafkaConnectionError:   # the metadata names no leader
            if attempt + 1 == RETRIES:
                raise KafkaError(_no_leader_error(admin, topic, partition),
                                 f"{topic}-{partition} has no leader") from None
            await asyncio.sleep(BACKOFF_S)
            continue
        [result] = await describe_why(conn, [(RESOURCE_PARTITION, topic, partition)])
        if result.error_code not in _LEADER_MOVED:
            break
        await asyncio.sleep(BACKOFF_S)
    if result is None:
        raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition} has no leader")
    _raise(result)
    return partition_why_of(topic, partition, result.partition_why)


async def describe_group_why(admin_or_pool: Any, group_id: str) -> GroupWhy:
    """The group's coordinator's account of its rebalances."""
    admin = _admin(admin_or_pool)
    result: Struct | None = None
    for _ in range(RETRIES):
        c = await find_coordinator(await admin.any_connection(), group_id)
        if c.error:
            if c.error not in _COORDINATOR_MOVED:
                raise KafkaError(c.error, c.message)
            await asyncio.sleep(BACKOFF_S)
            continue
        conn = await admin.pool.get(c.host, c.port)
        [result] = await describe_why(conn, [(RESOURCE_GROUP, group_id, -1)])
        if result.error_code not in _COORDINATOR_MOVED:
            break
        await asyncio.sleep(BACKOFF_S)
    if result is None:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                         f"no coordinator found for group {group_id!r}")
    _raise(result)
    return group_why_of(group_id, result.group_why)


async def describe_broker_status(admin_or_pool: Any, broker_id: int) -> BrokerStatus:
    """Broker ``broker_id``'s own status (ZooKeeper session, controller, uptime)."""
    conn = await _admin(admin_or_pool).broker_connection(broker_id)
    [result] = await describe_why(conn, [(RESOURCE_BROKER, str(broker_id), -1)])
    _raise(result)
    s = result.broker_status
    return BrokerStatus(broker_id=s.broker_id, zk_session_state=s.zk_session_state,
                        is_controller=s.is_controller, controller_id=s.controller_id,
                        uptime_ms=s.uptime_ms)


# ---- structs -> dataclasses ----------------------------------------------------------------

def partition_why_of(topic: str, partition: int, w: Struct) -> PartitionWhy:
    return PartitionWhy(
        topic=topic, partition=partition, leader=w.leader, leader_epoch=w.leader_epoch,
        isr=list(w.isr), high_watermark=w.high_watermark, log_end_offset=w.log_end_offset,
        hw_held_by=list(w.hw_held_by),
        replicas=[ReplicaProgress(r.broker_id, r.log_end_offset, r.last_caught_up_ms,
                                  r.last_fetch_ms, r.in_isr) for r in w.replicas],
        isr_changes=[IsrChange(c.time_ms, c.kind, c.replica, c.reason, c.lag_ms,
                               c.lag_messages, list(c.isr_after)) for c in w.isr_changes])


def group_why_of(group_id: str, g: Struct) -> GroupWhy:
    return GroupWhy(group_id=group_id, state=g.state, generation=g.generation,
                    rebalances=[RebalanceEvent(e.time_ms, e.generation, e.kind, e.member_id,
                                               e.client_id, e.host, e.reason)
                                for e in g.rebalances])
