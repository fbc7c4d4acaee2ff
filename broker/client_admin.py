"""Cluster-level client helpers over ``broker.client.KafkaConnection``.

* ``BrokerPool``: one connection per (host, port), opened on first use and
  reopened after it drops. Its ``send(broker_id, host, port, header, body)``
  has the shape of ``controller.BrokerTransport.send``.
* ``bootstrap``: the first reachable server of a ``host:port,host:port`` list.
* ``ClusterMetadata``: a Metadata response as plain dataclasses (brokers,
  topics, partitions with leaders), with ``leader(topic, partition)``.
* ``KafkaAdmin``: Metadata, CreateTopics, DeleteTopics, CreatePartitions,
  DescribeConfigs and IncrementalAlterConfigs for the tools. Admin requests go
  to the controller named in Metadata (a ZooKeeper-mode broker that is not
  the controller answers NOT_CONTROLLER), refreshing and retrying on that.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

from broker.client import (DEFAULT_CLIENT_ID, DEFAULT_TIMEOUT, KafkaConnection,
                           KafkaConnectionError)
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
CONFIG_SOURCE_DEFAULT = 5  # DescribeConfigs ConfigSource DEFAULT_CONFIG
_ADMIN_RETRIES = 3


def parse_servers(servers: str | list[str] | tuple[str, ...]) -> list[tuple[str, int]]:
    """'h1:9092,[::1]:9093' (or a list of such) -> [(host, port), ...]."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out: list[tuple[str, int]] = []
    for item in (s.strip() for s in items):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"bad server address {item!r}: expected HOST:PORT")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("no bootstrap server given")
    return out


class BrokerPool:
    """One KafkaConnection per (host, port); reconnects when one has dropped.

    A request that fails because its connection dropped is not resent (it may
    have been applied); the next call opens a fresh connection."""

    def __init__(self, *, client_id: str | None = DEFAULT_CLIENT_ID,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.client_id = client_id
        self.timeout = timeout
        self._conns: dict[tuple[str, int], KafkaConnection] = {}
        self._locks: dict[tuple[str, int], asyncio.Lock] = {}

    async def get(self, host: str, port: int) -> KafkaConnection:
        key = (host, port)
        conn = self._conns.get(key)
        if conn is not None and not conn.closed:
            return conn
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:  # one connect at a time per address
            conn = self._conns.get(key)
            if conn is None or conn.closed:
                conn = await KafkaConnection.open(host, port, client_id=self.client_id,
                                                  timeout=self.timeout)
                self._conns[key] = conn
            return conn

    async def request(self, host: str, port: int, api_key: int, body: Struct,
                      version: int | None = None, *, expect_response: bool = True,
                      timeout: float | None = None) -> Struct | None:
        conn = await self.get(host, port)
        return await conn.request(api_key, body, version, expect_response=expect_response,
                                  timeout=timeout)

    async def send(self, broker_id: int, host: str, port: int, header: RequestHeader,
                   body: Struct) -> Struct:
        """``controller.BrokerTransport.send``: api key and version from ``header``."""
        conn = await self.get(host, port)
        resp = await conn.request_with_header(header, body)
        assert resp is not None
        return resp

    async def close_connection(self, host: str, port: int) -> None:
        conn = self._conns.pop((host, port), None)
        if conn is not None:
            await conn.close()

    async def close(self) -> None:
        conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            await conn.close()


async def bootstrap(servers: str | list[str], *, client_id: str | None = DEFAULT_CLIENT_ID,
                    timeout: float = DEFAULT_TIMEOUT,
                    pool: BrokerPool | None = None) -> KafkaConnection:
    """A handshaken connection to the first reachable server in ``servers``."""
    errors: list[str] = []
    for host, port in parse_servers(servers):
        try:
            if pool is not None:
                return await pool.get(host, port)
            return await KafkaConnection.open(host, port, client_id=client_id, timeout=timeout)
        except KafkaConnectionError as e:
            errors.append(str(e))
    raise KafkaConnectionError("no bootstrap server reachable: " + "; ".join(errors))


# -- metadata ----------------------------------------------------------------------------

@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error: int = 0


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    error: int
    is_internal: bool
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)


@dataclass
class ClusterMetadata:
    brokers: dict[int, BrokerInfo]
    topics: dict[str, TopicInfo]
    controller_id: int = -1
    cluster_id: str | None = None

    @classmethod
    def from_response(cls, resp: Struct) -> ClusterMetadata:
        brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack)
                   for b in resp.brokers}
        topics: dict[str, TopicInfo] = {}
        for t in resp.topics:
            parts = {p.partition_index: PartitionInfo(
                p.partition_index, p.leader_id, p.leader_epoch, tuple(p.replica_nodes),
                tuple(p.isr_nodes), tuple(p.offline_replicas), p.error_code)
                for p in t.partitions}
            topics[t.name or ""] = TopicInfo(t.name or "", t.topic_id, t.error_code,
                                             t.is_internal, parts)
        return cls(brokers, topics, resp.controller_id, resp.cluster_id)

    def leader(self, topic: str, partition: int) -> BrokerInfo | None:
        t = self.topics.get(topic)
        p = t.partitions.get(partition) if t else None
        if p is None or p.leader < 0:
            return None
        return self.brokers.get(p.leader)

    def topic_names(self) -> dict[uuid.UUID, str]:
        return {t.topic_id: name for name, t in self.topics.items()}


def metadata_request(version: int, topics: list[str] | None,
                     allow_auto_create: bool = False) -> Struct:
    spec = api(ApiKey.METADATA).request
    if topics is None:
        wanted: list[Struct] | None = None if version >= 1 else []
    else:
        wanted = [spec.structs["MetadataRequestTopic"].new(name=t) for t in topics]
    return spec.new(topics=wanted, allow_auto_topic_creation=allow_auto_create)


# -- admin ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class NewTopic:
    name: str
    partitions: int = -1              # -1: the broker's num.partitions
    replication_factor: int = -1      # -1: the broker's default.replication.factor
    assignment: dict[int, list[int]] | None = None
    configs: dict[str, str] = field(default_factory=dict)


Result = tuple[int, str | None]  # (error code, error message)


class KafkaAdmin:
    """Admin operations over a bootstrap list; see the module docstring."""

    def __init__(self, servers: str | list[str], *, client_id: str | None = DEFAULT_CLIENT_ID,
                 timeout: float = DEFAULT_TIMEOUT, pool: BrokerPool | None = None) -> None:
        self.servers = servers
        self.timeout = timeout
        self.pool = pool or BrokerPool(client_id=client_id, timeout=timeout)
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
                             errors_of: Any) -> Struct:
        """Send to the controller; on NOT_CONTROLLER refresh and retry."""
        for attempt in range(_ADMIN_RETRIES):
            conn = await self.controller_connection()
            resp = await conn.request(api_key, body)
            assert resp is not None
            if attempt + 1 < _ADMIN_RETRIES and any(
                    code == ErrorCode.NOT_CONTROLLER for code in errors_of(resp)):
                await asyncio.sleep(0.1 * (attempt + 1))
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
        """-> name -> (error code, message, [DescribeConfigsResourceResult])."""
        spec = api(ApiKey.DESCRIBE_CONFIGS).request
        res = spec.structs["DescribeConfigsResource"]
        body = spec.new(resources=[res.new(resource_type=resource_type, resource_name=n,
                                           configuration_keys=keys) for n in names],
                        include_synonyms=include_synonyms)
        conn = await self.any_connection()
        resp = await conn.request(ApiKey.DESCRIBE_CONFIGS, body)
        assert resp is not None
        return {r.resource_name: (r.error_code, r.error_message, list(r.configs))
                for r in resp.results}

    async def incremental_alter_configs(self, name: str, ops: list[tuple[str, int, str | None]],
                                        *, resource_type: int = RESOURCE_TOPIC,
                                        validate_only: bool = False) -> Result:
        """Apply (config name, OP_SET/OP_DELETE/OP_APPEND/OP_SUBTRACT, value) ops."""
        spec = api(ApiKey.INCREMENTAL_ALTER_CONFIGS).request
        s = spec.structs
        configs = [s["AlterableConfig"].new(name=k, config_operation=op, value=v)
                   for k, op, v in ops]
        body = spec.new(resources=[s["AlterConfigsResource"].new(
            resource_type=resource_type, resource_name=name, configs=configs)],
            validate_only=validate_only)
        resp = await self._to_controller(ApiKey.INCREMENTAL_ALTER_CONFIGS, body,
                                         lambda r: [x.error_code for x in r.responses])
        for r in resp.responses:
            if r.resource_name == name:
                return r.error_code, r.error_message
        return ErrorCode.UNKNOWN_SERVER_ERROR, "no result for the resource in the response"

    async def close(self) -> None:
        if self._own_pool:
            await self.pool.close()

    async def __aenter__(self) -> KafkaAdmin:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
