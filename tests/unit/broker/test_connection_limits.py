"""Connection limits as Kafka (broker/network/): the quotas' arithmetic with a
fake clock, and the listener on real loopback sockets with only the ApiVersions
handler (and fake Produce appends) behind a fake broker: max.connections,
per-IP limits and overrides, creation rate, request timeout, back-pressure,
the request memory pool and queue, KIP-219 muting, the protected listener."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from types import SimpleNamespace
from typing import Any

import pytest

import broker.network.connection as connection_module
import broker.network.request_memory as request_memory_module
from broker.config import BrokerConfig, ConfigError
from broker.dispatch import load_handlers
from broker.listeners import Endpoint
from broker.network.connection_quotas import ConnectionQuotas, Rate, parse_overrides
from broker.network.limits import NetworkLimits
from broker.network.request_memory import PARKED_S, RequestMemoryPool, RequestQueue, Slot
from broker.server import KafkaServer
from protocol.headers import RequestHeader, decode_response, encode_request
from protocol.spec import api
from tests.unit.polling import until

load_handlers()


# -- helpers -------------------------------------------------------------------------------

def run(coro: Any, limit: float = 30) -> Any:
    return asyncio.run(asyncio.wait_for(coro, limit))


def _framed(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def _api_versions(correlation_id: int) -> bytes:
    body = api(18).request.new(client_software_name="t", client_software_version="1")
    return _framed(encode_request(RequestHeader(18, 3, correlation_id, "c"), body))


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


async def _ask(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
               correlation_id: int) -> int:
    writer.write(_api_versions(correlation_id))
    return decode_response(18, 3, await _read_frame(reader))[0]


async def _start(broker: Any = None, **cfg: Any) -> KafkaServer:
    broker = broker or SimpleNamespace(config=BrokerConfig(**cfg), quotas=None, metrics=None)
    server = KafkaServer(broker, Endpoint("PLAINTEXT", "127.0.0.1", 0))
    await server.start()
    return server


def _produce(correlation_id: int, value_size: int = 10) -> bytes:
    from protocol import records
    s = api(0).request.structs
    body = api(0).request.new(acks=1, timeout_ms=5000, topic_data=[s["TopicProduceData"].new(
        name="t", partition_data=[s["PartitionProduceData"].new(
            index=0, records=records.build_batch([(None, bytes(value_size), 1)]))])])
    return _framed(encode_request(RequestHeader(0, 9, correlation_id, "c"), body))


def _blocking_produce_broker(**cfg: Any) -> tuple[Any, asyncio.Event, list[int]]:
    """A fake broker whose appends wait for ``release`` before they append."""
    from broker.replication.replica_manager import ProduceResult
    release = asyncio.Event()
    entered: list[int] = []

    async def append_records(acks: int, timeout_ms: int, entries: dict, *,  # type: ignore[type-arg]
                             transactional_id: str | None = None, single_batch: bool = False,
                             appended: Any = None) -> dict:  # type: ignore[type-arg]
        (tp,) = entries
        entered.append(1)
        await release.wait()
        if appended is not None:
            appended()
        return {tp: ProduceResult(0, 0)}
    broker = SimpleNamespace(config=BrokerConfig(**cfg), authorizer=None, quotas=None, metrics=None,
                             replicas=SimpleNamespace(
                                 appends=SimpleNamespace(append_records=append_records)))
    return broker, release, entered


# -- configuration and arithmetic ----------------------------------------------------------

def test_overrides_parse_and_a_bad_value_names_the_key_and_value() -> None:
    assert parse_overrides("127.0.0.1:5, ::1:3 ,host-a:0") == {
        "127.0.0.1": 5, "::1": 3, "host-a": 0}
    assert parse_overrides("") == {}
    for bad in ("127.0.0.1", "127.0.0.1:x", ":4", "a:-1"):
        with pytest.raises(ConfigError, match="max.connections.per.ip.overrides"):
            parse_overrides(bad)
        with pytest.raises(ConfigError) as e:
            BrokerConfig.from_properties({"max.connections.per.ip.overrides": bad})
        assert "max.connections.per.ip.overrides" in str(e.value) and repr(bad) in str(e.value)


def test_rate_spans_at_least_samples_minus_one_windows() -> None:
    rate = Rate(samples=11, window_s=1.0)
    for i in range(50):
        rate.record(1.0, 100.0 + i * 0.01)
    assert rate.window_size(100.5) == pytest.approx(10.5)
    assert rate.measure(100.5) == pytest.approx(50 / 10.5)
    assert rate.measure(200.0) == 0.0            # every sample aged out


def test_creation_rate_throttle_is_kafkas_formula_capped_at_one_window() -> None:
    quotas = ConnectionQuotas(max_creation_rate=10, window_num=11, window_s=1.0)
    quotas.add_listener("PLAINTEXT")
    delays = [quotas.record_connection("PLAINTEXT", 0.0) for _ in range(100)]
    assert delays == [0.0] * 100                 # 100 / 10 s: at the bound, not above
    delay = quotas.record_connection("PLAINTEXT", 0.0)
    assert delay == pytest.approx((101 / 10 - 10) / 10 * 10)      # (O - T) / T * W = 0.1 s
    for _ in range(200):
        delay = quotas.record_connection("PLAINTEXT", 0.0)
    assert delay == 1.0                          # capped at quota.window.size.seconds


def test_protected_listener_is_never_throttled_nor_blocked() -> None:
    quotas = ConnectionQuotas(max_connections=1, max_creation_rate=1, window_num=2,
                              protected_listener="INTERNAL")
    quotas.add_listener("PLAINTEXT")
    quotas.add_listener("INTERNAL")
    quotas.inc("PLAINTEXT", "10.0.0.1")
    assert not quotas.slot_available("PLAINTEXT") and quotas.slot_available("INTERNAL")
    assert all(quotas.record_connection("INTERNAL", 0.0) == 0 for _ in range(10))
    quotas.remove_listener("PLAINTEXT")      # alone, the inter-broker listener is not protected
    assert not quotas.is_protected("INTERNAL")


def test_request_queue_hands_slots_over_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # no slot held here is parked, however slow the machine: each goes by leave only
    monkeypatch.setattr(request_memory_module, "PARKED_S", 3600.0)

    async def go() -> None:
        queue = RequestQueue(1)
        first = queue.try_enter()
        assert first is not None and queue.try_enter() is None
        order: list[int] = []
        slots: list[Slot] = [first]

        async def waiter(i: int) -> None:
            slots.append(await queue.enter())
            order.append(i)
        tasks = [asyncio.create_task(waiter(i)) for i in range(3)]
        await asyncio.sleep(0.01)
        assert order == []
        for expected in ([0], [0, 1], [0, 1, 2]):
            queue.leave(slots[len(expected) - 1])
            await asyncio.sleep(0.01)
            assert order == expected
        queue.leave(slots[-1])
        queue.leave(slots[-1])                 # twice (a Produce's two callbacks): once
        assert queue.in_flight == 0 and queue.try_enter()
        await asyncio.gather(*tasks)
    run(go())


def test_request_queue_parks_a_slot_held_by_a_waiting_handler() -> None:
    """A handler holding its slot PARKED_S (a long-poll) stops counting: the next
    request gets a slot then, not when the long-poll ends; the parked slot's late
    leave changes nothing."""
    async def go() -> None:
        queue = RequestQueue(1)
        long_poll = queue.try_enter()
        assert long_poll is not None
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        slot = await asyncio.wait_for(queue.enter(), 2)
        waited = loop.time() - t0
        assert PARKED_S * 0.9 <= waited < PARKED_S + 0.5, waited
        assert queue.in_flight == 1
        queue.leave(long_poll)                 # the long-poll answered: counted no more
        assert queue.in_flight == 1 and queue.try_enter() is None
        queue.leave(slot)
        assert queue.in_flight == 0
    run(go())


def test_request_queue_forgets_left_slots_behind_a_long_held_one() -> None:
    """Issue 17 (found by the fuzzer): a slot held long at the front (a JoinGroup
    waiting out a rebalance) must not keep every later, long-left slot: the queue's
    bookkeeping stays within a few times queued.max.requests."""
    async def go() -> None:
        queue = RequestQueue(10)
        join_group = queue.try_enter()
        assert join_group is not None
        for _ in range(100_000):
            slot = queue.try_enter()
            assert slot is not None
            queue.leave(slot)
        assert len(queue._held) <= 2 * queue.limit + 64
        assert queue.in_flight == 1 and join_group.held
        queue.leave(join_group)
        assert queue.in_flight == 0
    run(go())


def test_memory_pool_is_non_strict_and_wakes_every_reader() -> None:
    async def go() -> None:
        pool = RequestMemoryPool(100)
        pool.take(150)                         # a frame above what is left: allowed
        assert pool.available == -50 and pool.used == 150
        woken = asyncio.gather(pool.wait_available(), pool.wait_available())
        await asyncio.sleep(0.01)
        assert not woken.done()
        pool.release(40)
        await asyncio.sleep(0.01)
        assert not woken.done()                # still exhausted
        pool.release(20)
        await asyncio.wait_for(woken, 1)
        assert RequestMemoryPool(-1).available > 2**60     # -1: unbounded
    run(go())


# -- the listener ---------------------------------------------------------------------------

def test_max_connections_blocks_the_acceptor_and_resumes_when_one_closes() -> None:
    async def go() -> None:
        server = await _start(max_connections=2)
        first = await asyncio.open_connection("127.0.0.1", server.port)
        second = await asyncio.open_connection("127.0.0.1", server.port)
        assert await _ask(*first, 1) == 1 and await _ask(*second, 2) == 2
        third_r, third_w = await asyncio.open_connection("127.0.0.1", server.port)  # backlog
        third_w.write(_api_versions(3))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(_read_frame(third_r), 0.5)     # not accepted: no answer
        assert await _ask(*first, 4) == 4          # the open ones are undisturbed
        second[1].close()
        cid, _ = decode_response(18, 3, await asyncio.wait_for(_read_frame(third_r), 5))
        assert cid == 3
        assert server.limits is not None and server.limits.quotas.total == 2
        first[1].close()
        third_w.close()
        await server.stop()
    run(go())


def test_listener_max_connections_bounds_one_listener() -> None:
    """listener.name.plaintext.max.connections=1: the second waits on that
    listener (the broker-wide limit is far away)."""
    async def go() -> None:
        config = BrokerConfig.from_properties({"listener.name.plaintext.max.connections": "1"})
        server = await _start(SimpleNamespace(config=config, quotas=None, metrics=None))
        first = await asyncio.open_connection("127.0.0.1", server.port)
        assert await _ask(*first, 1) == 1
        second_r, second_w = await asyncio.open_connection("127.0.0.1", server.port)
        second_w.write(_api_versions(2))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(_read_frame(second_r), 0.4)
        first[1].close()
        assert decode_response(18, 3, await asyncio.wait_for(_read_frame(second_r), 5))[0] == 2
        second_w.close()
        await server.stop()
    run(go())


def test_per_ip_limit_closes_at_once_with_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> None:
        server = await _start(max_connections_per_ip=1)
        kept = await asyncio.open_connection("127.0.0.1", server.port)
        extra_r, _extra_w = await asyncio.open_connection("127.0.0.1", server.port)
        assert await asyncio.wait_for(extra_r.read(), 5) == b""        # closed at once
        assert await _ask(*kept, 1) == 1
        kept[1].close()
        assert server.limits is not None
        quotas = server.limits.quotas
        await until(lambda: quotas.at_ip_limit("127.0.0.1") is None, "the first one's close seen")
        again = await asyncio.open_connection("127.0.0.1", server.port)
        assert await _ask(*again, 2) == 2        # a slot again once the first closed
        again[1].close()
        await server.stop()
    with caplog.at_level("INFO", logger="broker.server"):
        run(go())
    assert ("Rejected connection from 127.0.0.1, address already has the configured "
            "maximum of 1 connections.") in caplog.text


def test_per_ip_override_raises_the_limit_for_that_address() -> None:
    async def go() -> None:
        server = await _start(max_connections_per_ip=1,
                              max_connections_per_ip_overrides="127.0.0.1:3")
        conns = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(3)]
        for i, (r, w) in enumerate(conns):
            assert await _ask(r, w, i) == i
        fourth_r, _ = await asyncio.open_connection("127.0.0.1", server.port)
        assert await asyncio.wait_for(fourth_r.read(), 5) == b""
        for _, w in conns:
            w.close()
        await server.stop()
    run(go())


def test_creation_rate_delays_accepting() -> None:
    """2 samples of 1 s and 20 connections/s: 20 are taken at once, then each
    further one waits; 40 in a burst take about a second, and all are served."""
    async def go() -> None:
        server = await _start(max_connection_creation_rate=20, quota_window_num=2)
        loop = asyncio.get_running_loop()
        started = loop.time()
        conns = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(40)]
        answered = await asyncio.gather(*(_ask(r, w, i) for i, (r, w) in enumerate(conns)))
        took = loop.time() - started
        assert answered == list(range(40))
        assert 0.6 <= took < 5, took
        for _, w in conns:
            w.close()
        await server.stop()
    run(go())


def test_a_trickled_request_is_closed_by_the_request_timeout(
        caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> None:
        server = await _start(request_timeout_ms=400)
        slow_r, slow_w = await asyncio.open_connection("127.0.0.1", server.port)
        good = await asyncio.open_connection("127.0.0.1", server.port)
        frame = _api_versions(7)
        loop = asyncio.get_running_loop()
        started = loop.time()
        closed_after = None
        for byte in frame:
            slow_w.write(bytes([byte]))
            try:
                if await asyncio.wait_for(slow_r.read(), 0.1) == b"":
                    closed_after = loop.time() - started
                    break
            except ConnectionResetError:
                # closed with a trickled byte still unread: the kernel resets instead
                closed_after = loop.time() - started
                break
            except asyncio.TimeoutError:
                pass
            assert await _ask(*good, byte) == byte       # others are served meanwhile
        assert closed_after is not None and 0.35 <= closed_after < 1.5, closed_after
        # a request that arrives whole, but slowly at first, within the timeout is answered
        r, w = await asyncio.open_connection("127.0.0.1", server.port)
        w.write(frame[:3])
        await asyncio.sleep(0.2)
        w.write(frame[3:])
        assert decode_response(18, 3, await _read_frame(r))[0] == 7
        await asyncio.sleep(0.5)                # idle between requests is not a timeout
        assert await _ask(r, w, 8) == 8
        for wr in (w, good[1], slow_w):
            wr.close()
        await server.stop()
    with caplog.at_level("INFO"):
        run(go())
    assert "still incomplete" in caplog.text and "request.timeout.ms=400" in caplog.text


def test_a_client_that_never_reads_stops_being_read() -> None:
    """Thousands of pipelined requests, no reads: the broker stops reading (its
    write buffer is full, the connection is muted), so the bytes it holds for the
    connection stay small while the client's sends stall; another client is served."""
    async def go() -> None:
        server = await _start(queued_max_request_bytes=1 << 30)
        assert server.limits is not None
        pool = server.limits.memory
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        request = _api_versions(1) * 100
        sent = 0
        stalled_since = time.monotonic()
        while time.monotonic() - stalled_since < 1.0 and sent < 200_000_000:
            try:
                sent += sock.send(request)
                stalled_since = time.monotonic()
            except BlockingIOError:
                await asyncio.sleep(0.02)
        assert sent < 50_000_000, sent                 # the broker stopped reading
        assert pool.used < 2_000_000, pool.used        # and holds little of it
        good = await asyncio.open_connection("127.0.0.1", server.port)
        assert await _ask(*good, 5) == 5
        good[1].close()
        sock.close()
        await server.stop()
    run(go(), 60)


def test_memory_pool_exhausted_stops_reading_new_frames() -> None:
    async def go() -> None:
        broker, release, entered = _blocking_produce_broker(queued_max_request_bytes=1000)
        server = await _start(broker)
        assert server.limits is not None
        r1, w1 = await asyncio.open_connection("127.0.0.1", server.port)
        w1.write(_produce(1, value_size=5000))      # held until its append: pool exhausted
        while not entered:
            await asyncio.sleep(0.01)
        assert server.limits.memory.available < 0
        r2, w2 = await asyncio.open_connection("127.0.0.1", server.port)
        w2.write(_api_versions(2))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(_read_frame(r2), 0.4)
        release.set()
        assert decode_response(18, 3, await asyncio.wait_for(_read_frame(r2), 5))[0] == 2
        assert decode_response(0, 9, await _read_frame(r1))[0] == 1
        assert server.limits.memory.used == 0
        w1.close()
        w2.close()
        await server.stop()
    run(go())


def test_queued_max_requests_bounds_requests_in_their_handlers_until_parked() -> None:
    async def go() -> None:
        broker, release, entered = _blocking_produce_broker(queued_max_requests=1)
        server = await _start(broker)
        loop = asyncio.get_running_loop()
        r1, w1 = await asyncio.open_connection("127.0.0.1", server.port)
        sent = loop.time()                          # the produce takes the slot after this
        w1.write(_produce(1))
        while not entered:
            await asyncio.sleep(0.01)
        r2, w2 = await asyncio.open_connection("127.0.0.1", server.port)
        w2.write(_api_versions(2))
        # it waits for the only slot until the produce has held it PARKED_S: a handler
        # that waits is parked (a lower bound on the time, so no machine is too slow)
        assert decode_response(18, 3, await asyncio.wait_for(_read_frame(r2), 5))[0] == 2
        assert loop.time() - sent >= PARKED_S
        release.set()
        assert decode_response(0, 9, await _read_frame(r1))[0] == 1
        assert server.limits is not None and server.limits.queue.in_flight == 0
        w1.close()
        w2.close()
        await server.stop()
    run(go())


def test_throttled_response_mutes_the_channel(monkeypatch: pytest.MonkeyPatch) -> None:
    """KIP-219: a handler sets ctx.throttle_ms; the response comes at once, the
    next request (already sent) is handled only after the throttle time."""
    real_dispatch = connection_module.dispatch

    async def throttling_dispatch(ctx: Any, header: Any, body: Any) -> Any:
        response = await real_dispatch(ctx, header, body)
        if header.correlation_id == 1:
            ctx.throttle_ms = 500
        return response
    monkeypatch.setattr(connection_module, "dispatch", throttling_dispatch)

    async def go() -> None:
        server = await _start()
        loop = asyncio.get_running_loop()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        other = await asyncio.open_connection("127.0.0.1", server.port)
        started = loop.time()
        writer.write(_api_versions(1) + _api_versions(2))
        assert decode_response(18, 3, await _read_frame(reader))[0] == 1
        first = loop.time() - started
        assert await _ask(*other, 9) == 9            # other clients are not muted
        assert decode_response(18, 3, await _read_frame(reader))[0] == 2
        second = loop.time() - started
        assert first < 0.3 and 0.45 <= second < 2, (first, second)
        writer.close()
        other[1].close()
        await server.stop()
    run(go())


def test_protected_inter_broker_listener_closes_the_least_recently_active() -> None:
    async def go() -> None:
        config = BrokerConfig(
            max_connections=2, listeners="PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
            listener_security_protocol_map="PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
            inter_broker_listener_name="INTERNAL")
        broker = SimpleNamespace(config=config, quotas=None, metrics=None)
        limits = NetworkLimits.from_config(config)          # the broker's, for both
        client = KafkaServer(broker, Endpoint("PLAINTEXT", "127.0.0.1", 0), limits=limits)
        internal = KafkaServer(broker, Endpoint("INTERNAL", "127.0.0.1", 0), limits=limits)
        await client.start()
        await internal.start()
        old = await asyncio.open_connection("127.0.0.1", client.port)
        recent = await asyncio.open_connection("127.0.0.1", client.port)
        assert await _ask(*old, 1) == 1
        await asyncio.sleep(0.05)
        assert await _ask(*recent, 2) == 2
        replica = await asyncio.open_connection("127.0.0.1", internal.port)
        assert await _ask(*replica, 3) == 3                  # taken on above the limit
        assert await asyncio.wait_for(old[0].read(), 5) == b""   # the LRU one closed
        assert await _ask(*recent, 4) == 4
        for _, w in (recent, replica):
            w.close()
        await internal.stop()
        await client.stop()
    run(go())
