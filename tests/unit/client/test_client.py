"""The client package (client/) against a small in-test broker on 127.0.0.1.

``FakeKafka`` speaks our protocol codec and answers ApiVersions, Metadata,
Produce, ListOffsets, Fetch and the admin APIs from memory. It handles each
request in its own task, so a delayed request is answered *after* later ones:
that checks the client matches responses by correlation id, not by order.
test_tools.py reuses it.
"""

from __future__ import annotations

import asyncio
import os
import random
import struct
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from client import (KafkaConnection, KafkaConnectionError, NoCommonVersion, RequestTimedOut)
from client.connection import common_version, our_versions
from client import (BrokerPool, ClusterMetadata, KafkaAdmin, NewTopic,
                                 bootstrap, parse_servers)
from client.partitioner import StickyPartitioner, murmur2, partition_for_key
from protocol import records
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.framing import FrameBuffer, size_prefixed
from protocol.headers import RequestHeader, decode_request, encode_response
from protocol.schema import Struct
from protocol.spec import api
from tests.unit.polling import until


# -- the fake broker ------------------------------------------------------------------------

@dataclass
class FakeTopic:
    topic_id: uuid.UUID
    logs: list[list[bytes]]                     # per partition: stored batches
    configs: dict[str, str] = field(default_factory=dict)
    replicas: list[list[int]] | None = None

    def next_offset(self, p: int) -> int:
        log = self.logs[p]
        return records.read_header(log[-1]).next_offset if log else 0


class FakeKafka:
    """An in-memory single broker (node ``node_id``) on 127.0.0.1."""

    def __init__(self, *, node_id: int = 1, api_versions_max: int = 4,
                 versions: dict[int, tuple[int, int]] | None = None) -> None:
        self.node_id = node_id
        self.api_versions_max = api_versions_max
        self.versions = versions if versions is not None else dict(our_versions())
        self.topics: dict[str, FakeTopic] = {}
        self.seen: list[RequestHeader] = []
        self.delays: dict[int, float] = {}       # api key -> seconds before answering
        self.silent: set[int] = set()            # api keys never answered
        self.hook: Callable[[RequestHeader, Struct], Struct | None] | None = None
        self.auto_create = True
        self.port = 0
        self._server: asyncio.base_events.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> FakeKafka:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        self.drop_connections()
        await self._server.wait_closed()

    def drop_connections(self) -> None:
        for w in self._writers:
            w.close()
        self._writers.clear()

    def add_topic(self, name: str, partitions: int = 1, *,
                  topic_id: uuid.UUID | None = None) -> FakeTopic:
        t = FakeTopic(topic_id or uuid.uuid4(), [[] for _ in range(partitions)])
        self.topics[name] = t
        return t

    def records(self, name: str, p: int) -> list[records.Record]:
        return [r for b in self.topics[name].logs[p] for r in records.iter_records(b)]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        frames = FrameBuffer()
        tasks: set[asyncio.Task[None]] = set()
        try:
            while data := await reader.read(65536):
                for frame in frames.feed(data):
                    task = asyncio.create_task(self._answer(frame, writer))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _answer(self, frame: bytes, writer: asyncio.StreamWriter) -> None:
        header = _peek_header(frame)
        self.seen.append(header)
        if header.api_key == ApiKey.API_VERSIONS and header.api_version > self.api_versions_max:
            body = api(18).response.new(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[
                api(18).response.structs["ApiVersion"].new(
                    api_key=18, min_version=0, max_version=self.api_versions_max)])
            self._write(writer, 18, 0, header.correlation_id, body)
            return
        header, req = decode_request(frame)
        if header.api_key in self.silent:
            return
        if header.api_key in self.delays:
            await asyncio.sleep(self.delays[header.api_key])
        resp = self.hook(header, req) if self.hook else None
        if resp is None:
            handler = getattr(self, f"_h{header.api_key}")
            resp = handler(header.api_version, req)
        if resp is not None:
            self._write(writer, header.api_key, header.api_version, header.correlation_id, resp)

    @staticmethod
    def _write(writer: asyncio.StreamWriter, key: int, version: int, cid: int,
               body: Struct) -> None:
        if writer.is_closing():
            return
        for chunk in size_prefixed(encode_response(key, version, cid, body)):
            writer.write(bytes(chunk))

    # -- handlers: _h<api key>(version, request) -> response | None -------------------------

    def _h18(self, version: int, req: Struct) -> Struct:
        spec = api(18).response
        keys = [spec.structs["ApiVersion"].new(api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in sorted(self.versions.items())]
        return spec.new(api_keys=keys)

    def _h3(self, version: int, req: Struct) -> Struct:
        spec = api(3).response
        s = spec.structs
        names = list(self.topics) if not req.topics else [t.name for t in req.topics]
        out = []
        for name in names:
            if name not in self.topics:
                if self.auto_create and req.allow_auto_topic_creation:
                    self.add_topic(name, 2)
                    out.append(s["MetadataResponseTopic"].new(
                        name=name, error_code=ErrorCode.LEADER_NOT_AVAILABLE))
                else:
                    out.append(s["MetadataResponseTopic"].new(
                        name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            t = self.topics[name]
            parts = [s["MetadataResponsePartition"].new(
                partition_index=p, leader_id=self.node_id, leader_epoch=0,
                replica_nodes=(t.replicas[p] if t.replicas else [self.node_id]),
                isr_nodes=[self.node_id]) for p in range(len(t.logs))]
            out.append(s["MetadataResponseTopic"].new(name=name, topic_id=t.topic_id,
                                                      is_internal=name.startswith("__"),
                                                      partitions=parts))
        return spec.new(brokers=[s["MetadataResponseBroker"].new(
            node_id=self.node_id, host="127.0.0.1", port=self.port)],
            cluster_id="fake-cluster", controller_id=self.node_id, topics=out)

    def _h0(self, version: int, req: Struct) -> Struct | None:
        spec = api(0).response
        s = spec.structs
        out = []
        for td in req.topic_data:
            parts = []
            t = self.topics.get(td.name)
            for pd in td.partition_data:
                if t is None or pd.index >= len(t.logs):
                    parts.append(s["PartitionProduceResponse"].new(
                        index=pd.index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                base = t.next_offset(pd.index)
                data = bytearray(pd.records)
                for at, _h in records.iter_batches(data):
                    records.patch_base_offset(data, at, t.next_offset(pd.index))
                    t.logs[pd.index].append(bytes(data[at:at + _h.size]))
                parts.append(s["PartitionProduceResponse"].new(index=pd.index, base_offset=base))
            out.append(s["TopicProduceResponse"].new(name=td.name, partition_responses=parts))
        return None if req.acks == 0 else spec.new(responses=out)

    def _h2(self, version: int, req: Struct) -> Struct:
        spec = api(2).response
        s = spec.structs
        out = []
        for tr in req.topics:
            t = self.topics[tr.name]
            parts = []
            for pr in tr.partitions:
                off = 0 if pr.timestamp == -2 else t.next_offset(pr.partition_index)
                parts.append(s["ListOffsetsPartitionResponse"].new(
                    partition_index=pr.partition_index, offset=off,
                    old_style_offsets=[off] if version == 0 else []))
            out.append(s["ListOffsetsTopicResponse"].new(name=tr.name, partitions=parts))
        return spec.new(topics=out)

    def _h1(self, version: int, req: Struct) -> Struct:
        spec = api(1).response
        s = spec.structs
        by_id = {t.topic_id: n for n, t in self.topics.items()}
        out = []
        for ft in req.topics:
            name = by_id.get(ft.topic_id, "") if version >= 13 else ft.topic
            t = self.topics[name]
            parts = []
            for fp in ft.partitions:
                log = t.logs[fp.partition]
                data = b"".join(b for b in log
                                if records.read_header(b).last_offset >= fp.fetch_offset)
                parts.append(s["PartitionData"].new(
                    partition_index=fp.partition, high_watermark=t.next_offset(fp.partition),
                    records=data[:max(fp.partition_max_bytes, 0)]))
            out.append(s["FetchableTopicResponse"].new(topic=name, topic_id=t.topic_id,
                                                       partitions=parts))
        return spec.new(responses=out)

    def _h19(self, version: int, req: Struct) -> Struct:
        spec = api(19).response
        out = []
        for ct in req.topics:
            code = ErrorCode.TOPIC_ALREADY_EXISTS if ct.name in self.topics else ErrorCode.NONE
            if not code and not req.validate_only:
                n = len(ct.assignments) if ct.assignments else (
                    ct.num_partitions if ct.num_partitions > 0 else 1)
                t = self.add_topic(ct.name, n)
                t.configs = {c.name: c.value for c in ct.configs}
                if ct.assignments:
                    t.replicas = [a.broker_ids for a in ct.assignments]
            out.append(spec.structs["CreatableTopicResult"].new(
                name=ct.name, error_code=code,
                error_message="Topic already exists." if code else None))
        return spec.new(topics=out)

    def _h20(self, version: int, req: Struct) -> Struct:
        spec = api(20).response
        names = [t.name for t in req.topics] if version >= 6 else req.topic_names
        out = []
        for n in names:
            code = ErrorCode.NONE if self.topics.pop(n, None) else \
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            out.append(spec.structs["DeletableTopicResult"].new(name=n, error_code=code))
        return spec.new(responses=out)

    def _h37(self, version: int, req: Struct) -> Struct:
        spec = api(37).response
        out = []
        for ct in req.topics:
            t = self.topics[ct.name]
            code = ErrorCode.INVALID_PARTITIONS if ct.count <= len(t.logs) else ErrorCode.NONE
            if not code:
                t.logs.extend([] for _ in range(ct.count - len(t.logs)))
            out.append(spec.structs["CreatePartitionsTopicResult"].new(
                name=ct.name, error_code=code))
        return spec.new(results=out)

    def _h32(self, version: int, req: Struct) -> Struct:
        spec = api(32).response
        s = spec.structs
        out = []
        for r in req.resources:
            t = self.topics.get(r.resource_name)
            if t is None:
                out.append(s["DescribeConfigsResult"].new(
                    resource_type=2, resource_name=r.resource_name,
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message="no such topic"))
                continue
            configs = [s["DescribeConfigsResourceResult"].new(
                name=k, value=v, config_source=1, synonyms=[s["DescribeConfigsSynonym"].new(
                    name=k, value=v, source=1)]) for k, v in sorted(t.configs.items())]
            configs.append(s["DescribeConfigsResourceResult"].new(
                name="segment.bytes", value="1073741824", config_source=4))
            configs.append(s["DescribeConfigsResourceResult"].new(
                name="retention.ms", value="604800000", config_source=5, is_default=True))
            out.append(s["DescribeConfigsResult"].new(resource_type=2,
                                                      resource_name=r.resource_name,
                                                      configs=configs))
        return spec.new(results=out)

    def _h44(self, version: int, req: Struct) -> Struct:
        spec = api(44).response
        out = []
        for r in req.resources:
            t = self.topics[r.resource_name]
            for c in r.configs:
                if c.config_operation == 0:
                    t.configs[c.name] = c.value
                elif c.config_operation == 1:
                    t.configs.pop(c.name, None)
            out.append(spec.structs["AlterConfigsResourceResponse"].new(
                resource_type=2, resource_name=r.resource_name))
        return spec.new(responses=out)


def _peek_header(frame: bytes) -> RequestHeader:
    key, version, cid = struct.unpack_from(">hhi", frame)
    return RequestHeader(key, version, cid)


def run(fn: Callable[[FakeKafka], Awaitable[Any]], **kwargs: Any) -> Any:
    """Start a FakeKafka, run ``fn(fake)``, stop it."""
    async def main() -> Any:
        fake = await FakeKafka(**kwargs).start()
        try:
            return await asyncio.wait_for(fn(fake), 20)
        finally:
            await fake.stop()
    return asyncio.run(main())


def metadata_body(topics: list[str] | None = None) -> Struct:
    s = api(3).request
    return s.new(topics=None if topics is None else [
        s.structs["MetadataRequestTopic"].new(name=t) for t in topics])


# -- handshake and versions -----------------------------------------------------------------

def test_common_version() -> None:
    assert common_version((0, 12), (1, 9)) == 9
    assert common_version((3, 5), (0, 2)) is None
    assert common_version((0, 4), (4, 7)) == 4


def test_handshake_records_broker_ranges_and_picks_highest_common() -> None:
    versions = dict(our_versions())
    versions[ApiKey.METADATA] = (0, 7)
    versions[ApiKey.FETCH] = (4, 30)          # broker newer than us: capped at ours
    del versions[ApiKey.DELETE_TOPICS]

    async def body(fake: FakeKafka) -> None:
        async with await KafkaConnection.open("127.0.0.1", fake.port) as conn:
            assert conn.api_versions[ApiKey.METADATA] == (0, 7)
            assert conn.version_for(ApiKey.METADATA) == 7
            assert conn.version_for(ApiKey.FETCH) == our_versions()[ApiKey.FETCH][1]
            assert conn.version_for(ApiKey.FETCH, max_version=12) == 12
            with pytest.raises(NoCommonVersion):
                conn.version_for(ApiKey.DELETE_TOPICS)
            resp = await conn.request(ApiKey.METADATA, metadata_body())
            assert resp is not None and resp.cluster_id == "fake-cluster"
            assert fake.seen[-1].api_version == 7
        assert fake.seen[0].api_key == ApiKey.API_VERSIONS
        assert fake.seen[0].api_version == our_versions()[ApiKey.API_VERSIONS][1]
    run(body, versions=versions)


def test_unsupported_api_versions_version_is_retried_at_the_brokers_max() -> None:
    async def body(fake: FakeKafka) -> None:
        conn = await KafkaConnection.open("127.0.0.1", fake.port)
        assert [h.api_version for h in fake.seen if h.api_key == 18] == [4, 2]
        assert conn.version_for(ApiKey.METADATA) == our_versions()[ApiKey.METADATA][1]
        await conn.close()
    run(body, api_versions_max=2)


def test_api_versions_v0_only_broker() -> None:
    async def body(fake: FakeKafka) -> None:
        conn = await KafkaConnection.open("127.0.0.1", fake.port)
        assert [h.api_version for h in fake.seen if h.api_key == 18] == [4, 0]
        assert ApiKey.PRODUCE in conn.api_versions
        await conn.close()
    run(body, api_versions_max=0)


def test_handshake_against_the_real_broker_connection_layer() -> None:
    from types import SimpleNamespace

    from broker.config import BrokerConfig
    from broker.dispatch import REGISTRY, load_handlers
    from broker.listeners import Endpoint
    from broker.server import KafkaServer
    load_handlers()

    async def main() -> None:
        server = KafkaServer(SimpleNamespace(config=BrokerConfig(), quotas=None, metrics=None),
                             Endpoint("PLAINTEXT", "127.0.0.1", 0))
        await server.start()
        try:
            conn = await KafkaConnection.open("127.0.0.1", server.port)
            assert conn.api_versions[18] == (REGISTRY[18].min_version, REGISTRY[18].max_version)
            await conn.close()
        finally:
            await server.stop()
    asyncio.run(asyncio.wait_for(main(), 10))


# -- pipelining, correlation, timeouts, acks=0, connection loss --------------------------------

def test_pipelined_requests_are_matched_by_correlation_id() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.add_topic("a", 1)
        fake.add_topic("b", 1)
        fake.delays[ApiKey.DESCRIBE_CONFIGS] = 0.2   # answered after the later requests
        conn = await KafkaConnection.open("127.0.0.1", fake.port)
        slow = asyncio.create_task(conn.request(ApiKey.DESCRIBE_CONFIGS, api(32).request.new(
            resources=[api(32).request.structs["DescribeConfigsResource"].new(
                resource_type=2, resource_name="a")])))
        await asyncio.sleep(0)
        fast = [asyncio.create_task(conn.request(ApiKey.METADATA, metadata_body([n])))
                for n in ["a", "b", "a", "b"] * 5]
        results = await asyncio.gather(*fast)
        assert not slow.done()
        assert [r.topics[0].name for r in results] == ["a", "b", "a", "b"] * 5
        desc = await slow
        assert desc.results[0].resource_name == "a"
        cids = [h.correlation_id for h in fake.seen]
        assert cids == sorted(cids) and len(set(cids)) == len(cids)
        await conn.close()
    run(body)


def test_timeout_keeps_the_connection_usable_and_drops_the_late_answer() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.delays[ApiKey.METADATA] = 0.3
        conn = await KafkaConnection.open("127.0.0.1", fake.port)
        with pytest.raises(RequestTimedOut) as info:
            await conn.request(ApiKey.METADATA, metadata_body(), timeout=0.05)
        assert isinstance(info.value, TimeoutError) and isinstance(info.value, ConnectionError)
        del fake.delays[ApiKey.METADATA]
        await asyncio.sleep(0.4)   # the late answer arrives and is dropped
        assert not conn.closed
        resp = await conn.request(ApiKey.METADATA, metadata_body())
        assert resp is not None and resp.brokers[0].node_id == 1
        await conn.close()
    run(body)


def test_a_cancelled_caller_leaves_the_answer_to_pair_and_be_dropped() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.delays[ApiKey.METADATA] = 0.2
        conn = await KafkaConnection.open("127.0.0.1", fake.port)
        task = asyncio.ensure_future(conn.request(ApiKey.METADATA, metadata_body()))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert conn.in_flight == 1           # still pending: its answer pairs by id
        del fake.delays[ApiKey.METADATA]
        await until(lambda: conn.in_flight == 0, "the late answer arrives and is dropped")
        assert not conn.closed
        resp = await conn.request(ApiKey.METADATA, metadata_body())
        assert resp is not None and resp.brokers[0].node_id == 1
        await conn.close()
    run(body)


def test_silent_broker_times_out() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.silent.add(ApiKey.METADATA)
        # the connection's timeout (opening and the handshake) as usual; the request's short
        conn = await KafkaConnection.open("127.0.0.1", fake.port)
        with pytest.raises(RequestTimedOut, match="Metadata"):
            await conn.request(ApiKey.METADATA, metadata_body(), timeout=0.1)
        assert conn.in_flight == 0
        await conn.close()
    run(body)


def test_acks_zero_produce_gets_no_response_and_pipelines_with_others() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.add_topic("t", 1)
        conn = await KafkaConnection.open("127.0.0.1", fake.port)
        spec = api(0).request
        s = spec.structs
        for i in range(3):
            batch = records.build_batch([(None, f"v{i}".encode(), 1000)])
            req = spec.new(acks=0, timeout_ms=1000, topic_data=[s["TopicProduceData"].new(
                name="t", partition_data=[s["PartitionProduceData"].new(index=0,
                                                                      records=batch)])])
            assert await conn.request(ApiKey.PRODUCE, req, expect_response=False) is None
        assert conn.in_flight == 0
        # a request after them is answered (the fake got all three frames first)
        resp = await conn.request(ApiKey.LIST_OFFSETS, api(2).request.new(topics=[
            api(2).request.structs["ListOffsetsTopic"].new(name="t", partitions=[
                api(2).request.structs["ListOffsetsPartition"].new(partition_index=0,
                                                                   timestamp=-1)])]))
        assert resp.topics[0].partitions[0].offset == 3
        assert [r.value for r in fake.records("t", 0)] == [b"v0", b"v1", b"v2"]
        await conn.close()
    run(body)


def test_connection_loss_fails_pending_requests_with_connection_error() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.silent.add(ApiKey.METADATA)
        conn = await KafkaConnection.open("127.0.0.1", fake.port)
        pending = [asyncio.create_task(conn.request(ApiKey.METADATA, metadata_body()))
                   for _ in range(3)]
        # all three read by the fake first: a close with bytes unread resets the connection
        await until(lambda: sum(h.api_key == ApiKey.METADATA for h in fake.seen) == 3,
                    "the fake got the three requests")
        fake.drop_connections()
        for task in pending:
            with pytest.raises(KafkaConnectionError, match="closed by the broker"):
                await task
        assert conn.closed
        with pytest.raises(KafkaConnectionError):
            await conn.request(ApiKey.METADATA, metadata_body())
        await conn.close()
    run(body)


def test_connect_refused_is_a_connection_error() -> None:
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        with pytest.raises(KafkaConnectionError, match=f"127.0.0.1:{port}"):
            await KafkaConnection.open("127.0.0.1", port, timeout=2)
        with pytest.raises(KafkaConnectionError, match="no bootstrap server reachable"):
            await bootstrap(f"127.0.0.1:{port}", timeout=2)
    asyncio.run(main())


def test_close_fails_pending_and_is_idempotent() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.silent.add(ApiKey.METADATA)
        conn = await KafkaConnection.open("127.0.0.1", fake.port)
        task = asyncio.create_task(conn.request(ApiKey.METADATA, metadata_body()))
        await asyncio.sleep(0.02)
        await conn.close()
        await conn.close()
        with pytest.raises(KafkaConnectionError, match="closed"):
            await task
    run(body)


def test_record_payload_is_written_without_copy() -> None:
    """The records chunk handed to the transport is the caller's own buffer, and
    the whole frame goes in one writelines (one writev on uvloop)."""
    async def body(fake: FakeKafka) -> None:
        fake.add_topic("t", 1)
        conn = await KafkaConnection.open("127.0.0.1", fake.port)
        written: list[Any] = []
        calls: list[int] = []
        real_writelines = conn._writer.writelines

        def writelines(chunks: Any) -> None:
            chunks = list(chunks)
            calls.append(len(chunks))
            written.extend(chunks)
            real_writelines(chunks)
        conn._writer.writelines = writelines  # type: ignore[method-assign]
        conn._writer.write = lambda data: calls.append(-1)  # type: ignore
        batch = records.build_batch([(b"k", b"x" * 5000, 1)])
        s = api(0).request.structs
        req = api(0).request.new(acks=1, timeout_ms=1000, topic_data=[s["TopicProduceData"].new(
            name="t", partition_data=[s["PartitionProduceData"].new(index=0, records=batch)])])
        resp = await conn.request(ApiKey.PRODUCE, req)
        assert resp.responses[0].partition_responses[0].base_offset == 0
        assert any(chunk is batch for chunk in written)
        assert len(calls) == 1 and calls[0] >= 3     # size, header, body..., records
        await conn.close()
    run(body)


# -- pool, bootstrap, admin ---------------------------------------------------------------------

def test_parse_servers() -> None:
    assert parse_servers("a:1, b:2") == [("a", 1), ("b", 2)]
    assert parse_servers(["[::1]:9092"]) == [("::1", 9092)]
    for bad in ("a", "a:b", ":1", ""):
        with pytest.raises(ValueError):
            parse_servers(bad)


def test_pool_reuses_and_reconnects_and_serves_as_transport() -> None:
    async def body(fake: FakeKafka) -> None:
        pool = BrokerPool(timeout=2)
        c1 = await pool.get("127.0.0.1", fake.port)
        assert await pool.get("127.0.0.1", fake.port) is c1
        fake.drop_connections()
        await until(lambda: c1.closed, "the pool's connection sees the broker close it")
        header = RequestHeader(ApiKey.METADATA, 5, 12345, "controller")
        resp = await pool.send(1, "127.0.0.1", fake.port, header, metadata_body())
        assert resp.controller_id == 1
        assert fake.seen[-1].api_version == 5
        c2 = await pool.get("127.0.0.1", fake.port)
        assert c2 is not c1 and not c2.closed
        await pool.close()
        assert c2.closed
    run(body)


def test_bootstrap_skips_unreachable_servers() -> None:
    async def body(fake: FakeKafka) -> None:
        conn = await bootstrap(f"127.0.0.1:1,{fake.address}", timeout=2)
        assert conn.port == fake.port
        await conn.close()
    run(body)


def test_admin_metadata_and_topic_operations() -> None:
    async def body(fake: FakeKafka) -> None:
        fake.add_topic("existing", 3)
        async with KafkaAdmin(fake.address, timeout=2) as admin:
            cluster = await admin.metadata()
            assert isinstance(cluster, ClusterMetadata)
            assert cluster.controller_id == 1 and cluster.cluster_id == "fake-cluster"
            assert sorted(cluster.topics["existing"].partitions) == [0, 1, 2]
            leader = cluster.leader("existing", 2)
            assert leader is not None and (leader.host, leader.port) == ("127.0.0.1", fake.port)
            assert cluster.leader("nope", 0) is None
            res = await admin.create_topics([NewTopic("new", 4, 1, configs={"a": "b"}),
                                             NewTopic("existing", 1, 1)])
            assert res["new"][0] == 0
            assert res["existing"][0] == ErrorCode.TOPIC_ALREADY_EXISTS
            assert len(fake.topics["new"].logs) == 4 and fake.topics["new"].configs == {"a": "b"}
            assert (await admin.create_partitions({"new": 6}))["new"][0] == 0
            assert len(fake.topics["new"].logs) == 6
            code, _ = await admin.incremental_alter_configs("new", [("x", 0, "1"), ("a", 1, None)])
            assert code == 0
            assert fake.topics["new"].configs == {"x": "1"}
            described = await admin.describe_configs(["new"])
            assert [c.name for c in described["new"][2]][:1] == ["x"]
            res = await admin.delete_topics(["new", "ghost"])
            assert res["new"][0] == 0 and res["ghost"][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    run(body)


def test_admin_works_with_old_versions() -> None:
    """The same admin calls at each API's lowest version the codec knows."""
    lowest = {k: (lo, lo if k != ApiKey.API_VERSIONS else hi)
              for k, (lo, hi) in our_versions().items()}

    async def body(fake: FakeKafka) -> None:
        async with KafkaAdmin(fake.address, timeout=2) as admin:
            assert (await admin.create_topics([NewTopic("t", 2, 1)]))["t"][0] == 0
            cluster = await admin.metadata()
            assert sorted(cluster.topics["t"].partitions) == [0, 1]
            assert (await admin.delete_topics(["t"]))["t"][0] == 0
    run(body, versions=lowest)


# -- murmur2 and partitioning -----------------------------------------------------------------

def test_murmur2_known_vectors() -> None:
    # Kafka's UtilsTest.testMurmur2 vectors
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
             bytes([ord("a"), ord("b"), ord("c")]): 479470107}
    for key, expected in cases.items():
        assert murmur2(key) == expected, key


def test_murmur2_matches_kafka_python_on_random_keys() -> None:
    km = pytest.importorskip("kafka.partitioner.default").murmur2
    rng = random.Random(7)
    for n in range(600):
        key = rng.randbytes(n % 70)
        assert murmur2(key) & 0xFFFFFFFF == km(key)
    for _ in range(200):
        key = os.urandom(16)
        assert partition_for_key(key, 12) == (km(key) & 0x7FFFFFFF) % 12


def test_sticky_partitioner() -> None:
    sp = StickyPartitioner(random.Random(1))
    first = sp.partition("t", None, 6)
    assert all(sp.partition("t", None, 6) == first for _ in range(10))
    sp.new_batch("t", 6)
    assert sp.partition("t", None, 6) != first
    assert sp.partition("t", b"key", 6) == partition_for_key(b"key", 6)
    assert sp.partition("u", None, 1) == 0


def test_broker_that_stops_reading_fails_the_send_within_the_timeout() -> None:
    async def main() -> None:
        hold: list[asyncio.StreamWriter] = []

        async def never_read(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            hold.append(writer)
            await asyncio.sleep(30)

        server = await asyncio.start_server(never_read, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        conn = await KafkaConnection.open("127.0.0.1", port, handshake=False, timeout=0.3)
        s = api(0).request.structs
        req = api(0).request.new(acks=0, timeout_ms=1, topic_data=[s["TopicProduceData"].new(
            name="t", partition_data=[s["PartitionProduceData"].new(
                index=0, records=bytes(64 * 1024 * 1024))])])
        with pytest.raises(RequestTimedOut, match="did not take a request"):
            await conn.request(ApiKey.PRODUCE, req, 3, expect_response=False)
        assert conn.closed
        await conn.close()
        for w in hold:
            w.close()
        server.close()
    asyncio.run(asyncio.wait_for(main(), 10))
