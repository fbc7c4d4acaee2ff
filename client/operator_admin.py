"""The verbs the operators' tools route per broker: DescribeLogDirs at each
broker, DeleteRecords at each partition's leader (``pybroker log-dirs``,
``pybroker delete-records``; the console may use them too).

* ``describe_log_dirs(conn, topics)`` is one DescribeLogDirs (API 35) at one
  broker: ``topics`` None asks for every partition the broker holds, else only
  those listed (topic -> partitions). -> one ``LogDirInfo`` per log dir, in the
  broker's order; an offline dir carries its error (KAFKA_STORAGE_ERROR) and no
  replicas. v3+ also has a request-level error code (cluster authorization):
  it is raised as ``KafkaError``, since no dir result comes with it.
* ``log_dirs_of_brokers(admin, broker_ids, topics)`` asks each broker
  concurrently -> broker id -> [LogDirInfo].
* ``delete_records_at_leaders(admin, offsets)`` groups (topic, partition) ->
  offset by leader (fresh metadata), sends one DeleteRecords per leader
  (``verbs.delete_records``) and answers every partition asked: one without a
  leader or whose topic is unknown gets that error, one whose leader moved
  meanwhile (NOT_LEADER_OR_FOLLOWER) is resent once after a metadata refresh,
  as Kafka's admin client retries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field

from client.admin import KafkaAdmin
from client.connection import KafkaConnection
from client.verbs import TP, DeletedRecords, delete_records
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from protocol.spec import api


@dataclass(frozen=True)
class ReplicaInfo:
    """One partition's replica in a log dir (Kafka's ``ReplicaInfo``)."""
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirInfo:
    """One log dir of a broker (Kafka's ``LogDirDescription``)."""
    path: str
    error: int
    replicas: dict[TP, ReplicaInfo] = field(default_factory=dict)
    total_bytes: int = -1            # v4+; -1 when the broker does not say
    usable_bytes: int = -1


async def describe_log_dirs(conn: KafkaConnection,
                            topics: Mapping[str, list[int]] | None = None) -> list[LogDirInfo]:
    """One DescribeLogDirs at the broker behind ``conn``; see the module docstring."""
    version = conn.version_for(ApiKey.DESCRIBE_LOG_DIRS)
    spec = api(ApiKey.DESCRIBE_LOG_DIRS).request
    wanted = None if topics is None else [
        spec.structs["DescribableLogDirTopic"].new(topic=t, partitions=list(ps))
        for t, ps in topics.items()]
    resp = await conn.request(ApiKey.DESCRIBE_LOG_DIRS, spec.new(topics=wanted), version)
    assert resp is not None
    if version >= 3 and resp.error_code:
        raise KafkaError(resp.error_code)
    out: list[LogDirInfo] = []
    for r in resp.results:
        replicas = {(t.name, p.partition_index): ReplicaInfo(p.partition_size, p.offset_lag,
                                                             bool(p.is_future_key))
                    for t in r.topics for p in t.partitions}
        out.append(LogDirInfo(r.log_dir, r.error_code, replicas,
                              r.total_bytes if version >= 4 else -1,
                              r.usable_bytes if version >= 4 else -1))
    return out


async def log_dirs_of_brokers(admin: KafkaAdmin, broker_ids: list[int],
                              topics: Mapping[str, list[int]] | None = None
                              ) -> dict[int, list[LogDirInfo]]:
    """DescribeLogDirs at each broker, concurrently -> broker id -> its log dirs."""
    async def one(node: int) -> list[LogDirInfo]:
        return await describe_log_dirs(await admin.broker_connection(node), topics)
    answers = await asyncio.gather(*(one(b) for b in broker_ids))
    return dict(zip(broker_ids, answers))


async def delete_records_at_leaders(admin: KafkaAdmin, offsets: Mapping[TP, int], *,
                                    timeout_ms: int = 30000) -> dict[TP, DeletedRecords]:
    """DeleteRecords for every (topic, partition) at its leader; see the docstring."""
    out: dict[TP, DeletedRecords] = {}
    pending = dict(offsets)
    for attempt in range(2):
        cluster = await admin.metadata(sorted({t for t, _ in pending}))
        by_leader: dict[int, dict[TP, int]] = {}
        for tp, offset in pending.items():
            topic = cluster.topics.get(tp[0])
            if topic is None or topic.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION \
                    or tp[1] not in topic.partitions:
                out[tp] = DeletedRecords(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            leader = cluster.leader(*tp)
            if leader is None:
                out[tp] = DeletedRecords(ErrorCode.LEADER_NOT_AVAILABLE)
            else:
                by_leader.setdefault(leader.node_id, {})[tp] = offset
        for node, asked in by_leader.items():
            answers = await delete_records(await admin.broker_connection(node), asked,
                                           timeout_ms=timeout_ms)
            for tp in asked:
                out[tp] = answers.get(tp, DeletedRecords(ErrorCode.UNKNOWN_SERVER_ERROR))
        pending = {tp: o for tp, o in pending.items()
                   if out[tp].error == ErrorCode.NOT_LEADER_OR_FOLLOWER}
        if not pending:
            break
        await asyncio.sleep(0.2 * (attempt + 1))
    return out
