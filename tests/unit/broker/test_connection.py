"""The network layer on a real loopback socket, with only the ApiVersions handler
and a fake broker (config only): ordering, the version quirk, hostile input."""

from __future__ import annotations

import asyncio
import struct
import time
from types import SimpleNamespace

import pytest

from broker.config import BrokerConfig
from broker.dispatch import load_handlers
from broker.listeners import Endpoint
from broker.server import KafkaServer
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader, decode_response, encode_request
from protocol.spec import api

load_handlers()


async def _start(**cfg: int) -> KafkaServer:
    broker = SimpleNamespace(config=BrokerConfig(**cfg), quotas=None, metrics=None)
    server = KafkaServer(broker, Endpoint("PLAINTEXT", "127.0.0.1", 0))
    await server.start()
    return server


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


def _framed(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def _api_versions(version: int, correlation_id: int) -> bytes:
    body = api(18).request.new(client_software_name="t", client_software_version="1")
    return _framed(encode_request(RequestHeader(18, version, correlation_id, "c"), body))


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(asyncio.wait_for(coro, 20))


def test_pipelined_requests_are_answered_in_order() -> None:
    async def go() -> None:
        server = await _start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"".join(_api_versions(v, 100 + v) for v in (0, 1, 2, 3, 4, 3, 0)))
        for v in (0, 1, 2, 3, 4, 3, 0):
            cid, body = decode_response(18, v, await _read_frame(reader))
            assert cid == 100 + v
            assert body.error_code == 0
            keys = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
            assert keys[18] == (0, 4)
        writer.close()
        await server.stop()
    run(go())


@pytest.mark.parametrize(("setting", "zero_copy"), [("auto", False), ("true", True),
                                                  ("false", False)])
def test_a_loopback_client_gets_zero_copy_as_fetch_zero_copy_says(setting: str,
                                                                   zero_copy: bool) -> None:
    """fetch.zero.copy=auto sends a loopback peer copies (broker/network/frame_stream.py);
    true sends it file slices by sendfile, as every remote peer under auto."""
    async def go() -> None:
        broker = SimpleNamespace(config=BrokerConfig(fetch_zero_copy=setting), quotas=None,
                                 metrics=None)
        server = KafkaServer(broker, Endpoint("PLAINTEXT", "127.0.0.1", 0))
        await server.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(_api_versions(3, 7))
        cid, _body = decode_response(18, 3, await _read_frame(reader))   # it is served
        assert cid == 7
        conns = [c for live in server.limits.live.values() for c in live]
        assert len(conns) == 1 and conns[0].frame_stream is not None
        assert conns[0].frame_stream.zero_copy is zero_copy
        writer.close()
        await server.stop()
    run(go())


def test_too_new_api_versions_gets_unsupported_version_in_v0_layout() -> None:
    async def go() -> None:
        server = await _start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        raw = struct.pack(">hhih", 18, 7, 55, 1) + b"c" + b"\x00" + b"\x01\x02\x03"
        writer.write(_framed(raw))
        cid, body = decode_response(18, 0, await _read_frame(reader))
        assert cid == 55 and body.error_code == 35
        assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 4)]
        writer.write(_api_versions(4, 56))  # the connection stays usable
        assert decode_response(18, 4, await _read_frame(reader))[0] == 56
        writer.close()
        await server.stop()
    run(go())


@pytest.mark.parametrize("payload", [
    struct.pack(">i", 200_000_000),                       # absurd length
    _framed(b"\x00"),                                      # truncated header
    _framed(struct.pack(">hhih", 9999, 0, 1, -1)),         # unknown api key
    _framed(struct.pack(">hhih", 18, 3, 1, 1) + b"c"),     # truncated flexible body
    _framed(b"\xff" * 64),                                 # garbage
], ids=["absurd-length", "truncated-header", "unknown-key", "truncated-body", "garbage"])
def test_hostile_input_closes_only_that_connection(payload: bytes) -> None:
    async def go() -> None:
        server = await _start(socket_request_max_bytes=1024 * 1024)
        bad_r, bad_w = await asyncio.open_connection("127.0.0.1", server.port)
        good_r, good_w = await asyncio.open_connection("127.0.0.1", server.port)
        bad_w.write(payload)
        assert await bad_r.read() == b""  # closed by the broker
        good_w.write(_api_versions(3, 9))
        assert decode_response(18, 3, await _read_frame(good_r))[0] == 9
        good_w.close()
        await server.stop()
    run(go())


def test_idle_connection_is_closed() -> None:
    async def go() -> None:
        server = await _start(connections_max_idle_ms=200)
        reader, _ = await asyncio.open_connection("127.0.0.1", server.port)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        await server.stop()
    run(go())


def test_a_connection_in_use_outlives_the_idle_period() -> None:
    """On the loop's clock made virtual (it moves only when the test moves it, so
    the outcome does not depend on how busy the machine is): requests 80 ms apart
    for 640 ms on a 200 ms idle limit, never idle that long: still open; then 190 ms
    of silence: still open; 20 ms more: closed."""
    async def turns(reader: asyncio.StreamReader, until_eof: bool) -> bool:
        # run the loop (timers now due, socket events) without moving the clock;
        # -> whether the server closed the connection
        deadline = time.monotonic() + 5        # real time: a guard, not a measure
        for _ in range(20 if not until_eof else 1_000_000):
            await asyncio.sleep(0)
            if reader.at_eof() or (until_eof and time.monotonic() > deadline):
                break
        return reader.at_eof()

    async def go() -> None:
        loop = asyncio.get_running_loop()
        now = [loop.time()]
        loop.time = lambda: now[0]  # type: ignore[method-assign]
        server = await _start(connections_max_idle_ms=200)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        for corr in range(8):
            writer.write(_api_versions(3, corr))
            assert decode_response(18, 3, await _read_frame(reader))[0] == corr
            now[0] += 0.08
            assert not await turns(reader, until_eof=False)
        now[0] += 0.19 - 0.08                   # 190 ms since the last request
        assert not await turns(reader, until_eof=False)
        now[0] += 0.02
        assert await turns(reader, until_eof=True)
        writer.close()
        await server.stop()
    asyncio.run(go())


def _produce(correlation_id: int, partition: int, acks: int = -1, value: bytes = b"v") -> bytes:
    from protocol import records
    s = api(0).request.structs
    body = api(0).request.new(acks=acks, timeout_ms=5000, topic_data=[s["TopicProduceData"].new(
        name="t", partition_data=[s["PartitionProduceData"].new(
            index=partition, records=records.build_batch([(None, value, 1)]))])])
    return _framed(encode_request(RequestHeader(0, 9, correlation_id, "c"), body))


def test_produces_are_appended_in_order_and_wait_for_acks_together() -> None:
    """Six acks=all produces on one connection: each is appended as it arrives,
    without waiting for the earlier ones' replication; the sixth (past
    MAX_PIPELINED_PRODUCES) mutes the connection until it is answered. Acks that
    complete in reverse still answer in request order, and a request after them
    is answered after them."""
    from broker.replication.replica_manager import ProduceResult

    async def go() -> None:
        appended_order: list[int] = []
        acked: dict[int, asyncio.Event] = {}

        async def append_records(acks: int, timeout_ms: int, entries: dict, *,  # type: ignore[type-arg]
                                 transactional_id: str | None = None, single_batch: bool = False,
                                 appended: object = None) -> dict:  # type: ignore[type-arg]
            (tp,) = entries
            appended_order.append(tp[1])
            if appended is not None:   # None: the sixth, handled muted
                appended()  # type: ignore[operator]
            acked[tp[1]] = asyncio.Event()
            await acked[tp[1]].wait()
            return {tp: ProduceResult(0, tp[1] * 10)}
        broker = SimpleNamespace(config=BrokerConfig(), authorizer=None, quotas=None, metrics=None,
                                 replicas=SimpleNamespace(
                                     appends=SimpleNamespace(append_records=append_records)))
        server = KafkaServer(broker, Endpoint("PLAINTEXT", "127.0.0.1", 0))
        await server.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"".join(_produce(p, p) for p in range(6)) + _api_versions(3, 99))
        for _ in range(100):
            if len(appended_order) == 6:
                break
            await asyncio.sleep(0.01)
        assert appended_order == [0, 1, 2, 3, 4, 5]   # in order, none waiting for another
        for p in (5, 4, 3, 2):
            acked[p].set()
        await asyncio.sleep(0.05)
        acked[0].set()
        cid, body = decode_response(0, 9, await _read_frame(reader))
        assert (cid, body.responses[0].partition_responses[0].base_offset) == (0, 0)
        acked[1].set()
        for expected in (1, 2, 3, 4, 5):
            cid, body = decode_response(0, 9, await _read_frame(reader))
            assert (cid, body.responses[0].partition_responses[0].base_offset) == (
                expected, expected * 10)
        assert decode_response(18, 3, await _read_frame(reader))[0] == 99
        writer.close()
        await server.stop()
    run(go())


def test_a_small_acks1_produce_is_handled_in_line_a_large_one_pipelined() -> None:
    """acks=1 waits for no replication: under PIPELINE_MIN_BYTES it is handled in
    line (no ``appended`` hook: the next request is read once it is answered, which
    is after the responses before it), at or above it pipelined like acks=all.
    Responses keep the request order either way."""
    from broker.network.connection import PIPELINE_MIN_BYTES
    from broker.replication.replica_manager import ProduceResult
    async def go() -> None:
        hooked: list[tuple[int, bool]] = []
        first = asyncio.Event()

        async def append_records(acks: int, timeout_ms: int, entries: dict, *,  # type: ignore[type-arg]
                                 transactional_id: str | None = None, single_batch: bool = False,
                                 appended: object = None) -> dict:  # type: ignore[type-arg]
            (tp,) = entries
            hooked.append((tp[1], appended is not None))
            if appended is not None:
                appended()  # type: ignore[operator]
            if acks == -1:
                await first.wait()
            return {tp: ProduceResult(0, tp[1] * 10)}
        broker = SimpleNamespace(config=BrokerConfig(), authorizer=None, quotas=None, metrics=None,
                                 replicas=SimpleNamespace(
                                     appends=SimpleNamespace(append_records=append_records)))
        server = KafkaServer(broker, Endpoint("PLAINTEXT", "127.0.0.1", 0))
        await server.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(_produce(0, 0) + _produce(1, 1, acks=1)
                     + _produce(2, 2, acks=1, value=bytes(PIPELINE_MIN_BYTES)))
        for _ in range(100):
            if len(hooked) == 2:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        # acks=all pipelined; small acks=1 in line: answered after the first, and
        # nothing after it is read until then
        assert hooked == [(0, True), (1, False)]
        first.set()
        for _ in range(100):
            if len(hooked) == 3:
                break
            await asyncio.sleep(0.01)
        assert hooked[2] == (2, True)             # large acks=1: pipelined
        for expected in (0, 1, 2):
            cid, body = decode_response(0, 9, await _read_frame(reader))
            assert (cid, body.responses[0].partition_responses[0].base_offset) == (
                expected, expected * 10)
        writer.close()
        await server.stop()
    run(go())


def test_failed_acks0_produce_closes_after_the_earlier_responses() -> None:
    """An acks=0 produce that fails on a partition gets no response; its handler
    returns CLOSE_CONNECTION and the connection closes once the response before
    it (an acks=all produce still waiting for replication) is written. Nothing
    after it is answered."""
    from broker.replication.replica_manager import ProduceResult

    async def go() -> None:
        acked = asyncio.Event()

        async def append_records(acks: int, timeout_ms: int, entries: dict, *,  # type: ignore[type-arg]
                                 transactional_id: str | None = None, single_batch: bool = False,
                                 appended: object = None) -> dict:  # type: ignore[type-arg]
            (tp,) = entries
            if appended is not None:
                appended()  # type: ignore[operator]
            if acks == 0:      # the acks=0 produce: its partition fails
                return {tp: ProduceResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)}
            await acked.wait()
            return {tp: ProduceResult(0, 7)}
        broker = SimpleNamespace(config=BrokerConfig(), authorizer=None, quotas=None, metrics=None,
                                 replicas=SimpleNamespace(
                                     appends=SimpleNamespace(append_records=append_records)))
        server = KafkaServer(broker, Endpoint("PLAINTEXT", "127.0.0.1", 0))
        await server.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(_produce(1, 0) + _produce(2, 1, acks=0) + _api_versions(3, 3))
        await asyncio.sleep(0.05)
        acked.set()      # only now may the first response be written, then the close
        cid, body = decode_response(0, 9, await _read_frame(reader))
        assert (cid, body.responses[0].partition_responses[0].base_offset) == (1, 7)
        assert await reader.read() == b""   # closed; the ApiVersions after it unanswered
        writer.close()
        await server.stop()
    run(go())
