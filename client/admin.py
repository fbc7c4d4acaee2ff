"""``KafkaAdmin``: the admin verbs over a bootstrap list.

Metadata, CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
IncrementalAlterConfigs, AlterPartitionReassignments, ListPartitionReassignments
and ElectLeaders for the tools and tests. Admin requests go to the
controller named in Metadata (a ZooKeeper-mode broker that is not the controller
answers NOT_CONTROLLER), refreshing and retrying on that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from client.connection import DEFAULT_CLIENT_ID, DEFAULT_TIMEOUT, KafkaConnection
from client.errors import KafkaConnectionError, NoCommonVersion
from client.metadata import ClusterMetadata, metadata_request
from client.pool import BrokerPool, bootstrap
from client.security import ClientSecurity
from client.verbs import ListedOffset, list_offsets, partitions_by_topic
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8      # issue 18: log levels at run time (asked of that broker)
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
CONFIG_SOURCE_DEFAULT = 5  # DescribeConfigs ConfigSource DEFAULT_CONFIG
_ADMIN_RETRIES = 5               # NOT_CONTROLLER answers survived (a controller moving)


@dataclass(frozen=True)
class NewTopic:
    name: str
    partitions: int = -1              # -1: the broker's num.partitions
    replication_factor: int = -1      # -1: the broker's default.replication.factor
    assignment: dict[int, list[int]] | None = None
    configs: dict[str, str] = field(default_factory=dict)


Result = tuple[int, str | None]  # (error code, error message)
TP = tuple[str, int]             # (topic, partition)
PREFERRED_ELECTION, UNCLEAN_ELECTION = 0, 1   # ElectLeaders ElectionType


@dataclass(frozen=True)
class Reassignment:
    """An ongoing reassignment: the full replica set, and which are coming and going."""
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


class KafkaAdmin:
    """Admin operations over a bootstrap list; see the module docstring."""

    def __init__(self, servers: str | list[str], *, client_id: str | None = DEFAULT_CLIENT_ID,
                 timeout: float = DEFAULT_TIMEOUT, pool: BrokerPool | None = None,
                 security: ClientSecurity | None = None) -> None:
        """``security`` (TLS, SASL; None: PLAINTEXT) is for the pool made here; a
        given ``pool`` brings its own, so passing both is a ValueError."""
        if pool is not None and security is not None:
            raise ValueError("KafkaAdmin: give security to the BrokerPool, not beside it")
        self.servers = servers
        self.timeout = timeout
        self.pool = pool or BrokerPool(client_id=client_id, timeout=timeout, security=security)
        self._own_pool = pool is None
        self.cluster: ClusterMetadata | None = None

    async def any_connection(self) -> KafkaConnection:
        if self.cluster is not None:
            for b in self.cluster.brokers.values():
                try:
                    return await self.pool.get(b.host, b.port)
                except KafkaConnectionError:
                    continue
        return await bootstrap(self.servers, pool=self.pool)

    async def broker_connection(self, node_id: int) -> KafkaConnection:
        if self.cluster is None or node_id not in self.cluster.brokers:
            await self.metadata([])
        assert self.cluster is not None
        b = self.cluster.brokers.get(node_id)
        if b is None:
            raise KafkaConnectionError(f"broker {node_id} is not in the cluster metadata")
        return await self.pool.get(b.host, b.port)

    async def leader_connection(self, topic: str, partition: int, *,
                                refresh: bool = False) -> KafkaConnection:
        """A connection to the partition's leader, from the cached metadata (refreshed
        first when ``refresh`` or when no leader is known). KafkaConnectionError when
        the partition has no leader even then."""
        if refresh or self.cluster is None or self.cluster.leader(topic, partition) is None:
            await self.metadata([topic])
        assert self.cluster is not None
        leader = self.cluster.leader(topic, partition)
        if leader is None:
            raise KafkaConnectionError(f"{topic}-{partition} has no leader")
        return await self.pool.get(leader.host, leader.port)

    async def list_offsets(self, timestamps: Mapping[TP, int], *, isolation_level: int = 0,
                           min_version: int = 0) -> dict[TP, ListedOffset]:
        """ListOffsets at each partition's leader, from fresh metadata of those topics;
        a partition without a leader answers LEADER_NOT_AVAILABLE."""
        if not timestamps:
            return {}
        cluster = await self.metadata(sorted({t for t, _ in timestamps}))
        out: dict[TP, ListedOffset] = {}
        by_leader: dict[int, dict[TP, int]] = {}
        for tp, ts in timestamps.items():
            leader = cluster.leader(*tp)
            if leader is None:
                out[tp] = ListedOffset(ErrorCode.LEADER_NOT_AVAILABLE)
            else:
                by_leader.setdefault(leader.node_id, {})[tp] = ts
        for node, asked in by_leader.items():
            out.update(await list_offsets(await self.broker_connection(node), asked,
                                          isolation_level=isolation_level,
                                          min_version=min_version))
        return out

    async def metadata(self, topics: list[str] | None = None, *,
                       allow_auto_create: bool = False) -> ClusterMetadata:
        """Metadata for ``topics`` (None = all); also refreshes ``self.cluster``."""
        conn = await self.any_connection()
        version = conn.version_for(ApiKey.METADATA)
        resp = await conn.request(ApiKey.METADATA,
                                  metadata_request(version, topics, allow_auto_create), version)
        assert resp is not None
        self.cluster = ClusterMetadata.from_response(resp)
        return self.cluster

    async def controller_connection(self) -> KafkaConnection:
        cluster = await self.metadata([])
        if cluster.controller_id in cluster.brokers:
            return await self.broker_connection(cluster.controller_id)
        return await self.any_connection()

    async def _to_controller(self, api_key: int, body: Struct,
                             errors_of: Any, *, min_version: int = 0) -> Struct:
        """Send to the controller; on NOT_CONTROLLER refresh and retry. A controller
        speaking the API only below ``min_version`` (where a field the request needs
        does not exist) raises NoCommonVersion instead of sending."""
        for attempt in range(_ADMIN_RETRIES):
            conn = await self.controller_connection()
            version = conn.version_for(api_key)
            if version < min_version:
                raise NoCommonVersion(
                    f"{conn.host}:{conn.port} speaks {api(api_key).name} only up to "
                    f"v{version}; v{min_version}+ is needed", conn.host, conn.port,
                    api_key=api_key)
            resp = await conn.request(api_key, body, version)
            assert resp is not None
            if attempt + 1 < _ADMIN_RETRIES and any(
                    code == ErrorCode.NOT_CONTROLLER for code in errors_of(resp)):
                await asyncio.sleep(0.2 * (attempt + 1))
                continue
            return resp
        raise AssertionError("unreachable")

    async def create_topics(self, topics: list[NewTopic], *, validate_only: bool = False,
                            timeout_ms: int = 30000) -> dict[str, Result]:
        spec = api(ApiKey.CREATE_TOPICS).request
        s = spec.structs
        wire = []
        for t in topics:
            assignment = [s["CreatableReplicaAssignment"].new(partition_index=p, broker_ids=ids)
                          for p, ids in sorted((t.assignment or {}).items())]
            configs = [s["CreatableTopicConfig"].new(name=k, value=v)
                       for k, v in t.configs.items()]
            wire.append(s["CreatableTopic"].new(
                name=t.name, num_partitions=-1 if assignment else t.partitions,
                replication_factor=-1 if assignment else t.replication_factor,
                assignments=assignment, configs=configs))
        body = spec.new(topics=wire, timeout_ms=timeout_ms, validate_only=validate_only)
        resp = await self._to_controller(ApiKey.CREATE_TOPICS, body,
                                         lambda r: [t.error_code for t in r.topics])
        return {t.name: (t.error_code, t.error_message) for t in resp.topics}

    async def delete_topics(self, names: list[str], *, timeout_ms: int = 30000
                            ) -> dict[str, Result]:
        spec = api(ApiKey.DELETE_TOPICS).request
        state = spec.structs["DeleteTopicState"]
        body = spec.new(topics=[state.new(name=n) for n in names], topic_names=list(names),
                        timeout_ms=timeout_ms)
        resp = await self._to_controller(ApiKey.DELETE_TOPICS, body,
                                         lambda r: [t.error_code for t in r.responses])
        return {t.name or "": (t.error_code, t.error_message) for t in resp.responses}

    async def create_partitions(self, counts: dict[str, int], *,
                                assignments: dict[str, list[list[int]]] | None = None,
                                validate_only: bool = False,
                                timeout_ms: int = 30000) -> dict[str, Result]:
        """Grow each topic to ``counts[topic]`` partitions (optionally placing
        the new ones: one replica list per new partition)."""
        spec = api(ApiKey.CREATE_PARTITIONS).request
        s = spec.structs
        topics = []
        for name, count in counts.items():
            placed = (assignments or {}).get(name)
            topics.append(s["CreatePartitionsTopic"].new(
                name=name, count=count,
                assignments=None if placed is None else
                [s["CreatePartitionsAssignment"].new(broker_ids=ids) for ids in placed]))
        body = spec.new(topics=topics, timeout_ms=timeout_ms, validate_only=validate_only)
        resp = await self._to_controller(ApiKey.CREATE_PARTITIONS, body,
                                         lambda r: [t.error_code for t in r.results])
        return {t.name: (t.error_code, t.error_message) for t in resp.results}

    async def describe_configs(self, names: list[str], *, resource_type: int = RESOURCE_TOPIC,
                               keys: list[str] | None = None, include_synonyms: bool = True
                               ) -> dict[str, tuple[int, str | None, list[Struct]]]:
        """-> name -> (error code, message, [DescribeConfigsResourceResult]). A
        BROKER resource is asked of that broker (one name per call then), as
        Kafka's admin client does."""
        spec = api(ApiKey.DESCRIBE_CONFIGS).request
        res = spec.structs["DescribeConfigsResource"]
        body = spec.new(resources=[res.new(resource_type=resource_type, resource_name=n,
                                           configuration_keys=keys) for n in names],
                        include_synonyms=include_synonyms)
        conn = await self._config_target(resource_type, names)
        resp = await conn.request(ApiKey.DESCRIBE_CONFIGS, body)
        assert resp is not None
        return {r.resource_name: (r.error_code, r.error_message, list(r.configs))
                for r in resp.results}

    async def incremental_alter_configs(self, name: str, ops: list[tuple[str, int, str | None]],
                                        *, resource_type: int = RESOURCE_TOPIC,
                                        validate_only: bool = False) -> Result:
        """Apply (config name, OP_SET/OP_DELETE/OP_APPEND/OP_SUBTRACT, value) ops; a
        BROKER resource goes to that broker (its dynamic configs are its own)."""
        spec = api(ApiKey.INCREMENTAL_ALTER_CONFIGS).request
        s = spec.structs
        configs = [s["AlterableConfig"].new(name=k, config_operation=op, value=v)
                   for k, op, v in ops]
        body = spec.new(resources=[s["AlterConfigsResource"].new(
            resource_type=resource_type, resource_name=name, configs=configs)],
            validate_only=validate_only)
        if resource_type in (RESOURCE_BROKER, RESOURCE_BROKER_LOGGER) and name:
            conn = await self._config_target(resource_type, [name])
            resp = await conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, body)
        else:
            resp = await self._to_controller(ApiKey.INCREMENTAL_ALTER_CONFIGS, body,
                                             lambda r: [x.error_code for x in r.responses])
        assert resp is not None            # None only answers an acks=0 Produce
        for r in resp.responses:
            if r.resource_name == name:
                return r.error_code, r.error_message
        return ErrorCode.UNKNOWN_SERVER_ERROR, "no result for the resource in the response"

    async def _config_target(self, resource_type: int, names: list[str]) -> KafkaConnection:
        """Where a configs request goes: the named broker for one BROKER resource with
        an id, any broker otherwise."""
        if resource_type in (RESOURCE_BROKER, RESOURCE_BROKER_LOGGER) and len(names) == 1 \
                and names[0].isdigit():
            return await self.broker_connection(int(names[0]))
        return await self.any_connection()

    async def alter_partition_reassignments(
            self, targets: dict[TP, list[int] | None], *, timeout_ms: int = 30000
    ) -> tuple[Result, dict[TP, Result]]:
        """Start (replicas) or cancel (None) reassignments, at the controller.
        -> (request-level result, per-partition results)."""
        spec = api(ApiKey.ALTER_PARTITION_REASSIGNMENTS).request
        s = spec.structs
        by_topic: dict[str, list[Struct]] = {}
        for (t, p), replicas in sorted(targets.items()):
            by_topic.setdefault(t, []).append(
                s["ReassignablePartition"].new(partition_index=p, replicas=replicas))
        body = spec.new(timeout_ms=timeout_ms, topics=[
            s["ReassignableTopic"].new(name=t, partitions=ps) for t, ps in by_topic.items()])
        resp = await self._to_controller(ApiKey.ALTER_PARTITION_REASSIGNMENTS, body,
                                         lambda r: [r.error_code])
        return (resp.error_code, resp.error_message), {
            (t.name, p.partition_index): (p.error_code, p.error_message)
            for t in resp.responses for p in t.partitions}

    async def list_partition_reassignments(
            self, partitions: list[TP] | None = None, *, timeout_ms: int = 30000
    ) -> tuple[Result, dict[TP, Reassignment]]:
        """The ongoing reassignments (of ``partitions``, or all), at the controller."""
        spec = api(ApiKey.LIST_PARTITION_REASSIGNMENTS).request
        topics = None if partitions is None else [
            spec.structs["ListPartitionReassignmentsTopics"].new(name=t, partition_indexes=ps)
            for t, ps in sorted(partitions_by_topic(partitions).items())]
        resp = await self._to_controller(ApiKey.LIST_PARTITION_REASSIGNMENTS,
                                         spec.new(timeout_ms=timeout_ms, topics=topics),
                                         lambda r: [r.error_code])
        return (resp.error_code, resp.error_message), {
            (t.name, p.partition_index): Reassignment(
                tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas))
            for t in resp.topics for p in t.partitions}

    async def elect_leaders(self, partitions: list[TP] | None = None, *,
                            election_type: int = PREFERRED_ELECTION, timeout_ms: int = 30000
                            ) -> tuple[int, dict[TP, Result]]:
        """Elect leaders (``partitions``, or every eligible one), at the controller.
        -> (request-level error, per-partition results; ELECTION_NOT_NEEDED where
        the preferred replica already leads)."""
        spec = api(ApiKey.ELECT_LEADERS).request
        topics = None if partitions is None else [
            spec.structs["TopicPartitions"].new(topic=t, partitions=ps)
            for t, ps in partitions_by_topic(partitions).items()]
        body = spec.new(election_type=election_type, topic_partitions=topics,
                        timeout_ms=timeout_ms)
        # ElectionType exists from v1: at v0 an unclean election would go out as a
        # preferred one, so (as Kafka's ElectLeadersRequest.Builder) it is refused.
        resp = await self._to_controller(
            ApiKey.ELECT_LEADERS, body,
            lambda r: [r.error_code] + [p.error_code for t in r.replica_election_results
                                        for p in t.partition_result],
            min_version=0 if election_type == PREFERRED_ELECTION else 1)
        return resp.error_code, {(t.topic, p.partition_id): (p.error_code, p.error_message)
                                 for t in resp.replica_election_results
                                 for p in t.partition_result}

    async def close(self) -> None:
        if self._own_pool:
            await self.pool.close()

    async def __aenter__(self) -> KafkaAdmin:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
