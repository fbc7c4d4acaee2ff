"""broker/quotas/throttle.py through broker.dispatch: what is recorded for Produce and
Fetch, the empty throttled Fetch (bytes un-recorded), exemptions (followers, cluster
actions, acks=0 from the request quota), ThrottleTimeMs and ctx.throttle_ms, and the
request percentage measured as the handler's own time on the loop."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest

from broker.context import RequestContext
from broker.dispatch import REGISTRY, Registration, dispatch
from broker.quotas.client_quota_manager import DEFAULT, QuotaEntity
from broker.quotas.client_quotas import ClientQuotas
from broker.quotas.throttle import LoopTime
from protocol.api_keys import ApiKey
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api

CONFIG = SimpleNamespace(quota_window_num=11, quota_window_size_seconds=1)
PRODUCE, FETCH = api(ApiKey.PRODUCE), api(ApiKey.FETCH)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def quotas_with(clock: Clock, **bounds: float) -> ClientQuotas:
    q = ClientQuotas(CONFIG, zk=None, clock_ms=clock)  # type: ignore[arg-type]
    q.apply(QuotaEntity(None, "slow"), bounds)
    return q


def ctx_for(quotas: ClientQuotas, api_key: int, version: int, client_id: str = "slow"
            ) -> RequestContext:
    header = RequestHeader(api_key, version, 1, client_id)
    conn = SimpleNamespace(principal="User:ANONYMOUS")
    return RequestContext(header=header, connection=conn,  # type: ignore[arg-type]
                          broker=SimpleNamespace(quotas=quotas))  # type: ignore[arg-type]


def produce_request(size: int, acks: int = 1) -> Struct:
    s = PRODUCE.request.structs
    return PRODUCE.request.new(acks=acks, timeout_ms=1000, topic_data=[s["TopicProduceData"].new(
        name="t", partition_data=[s["PartitionProduceData"].new(index=0, records=b"x" * size)])])


def fetch_request(replica_id: int = -1, epoch: int = 0) -> Struct:
    return FETCH.request.new(replica_id=replica_id, max_wait_ms=0, min_bytes=1,
                             max_bytes=50_000_000, session_id=7, session_epoch=epoch, topics=[])


def fetch_response(size: int) -> Struct:
    s = FETCH.response.structs
    return FETCH.response.new(throttle_time_ms=0, error_code=0, session_id=9, responses=[
        s["FetchableTopicResponse"].new(topic="t", partitions=[s["PartitionData"].new(
            partition_index=0, high_watermark=10, records=b"y" * size)])])


@pytest.fixture
def handlers(monkeypatch: pytest.MonkeyPatch) -> dict[int, list[Struct]]:
    """Fake Produce / Fetch handlers in the registry; they log the bodies they get."""
    seen: dict[int, list[Struct]] = {ApiKey.PRODUCE: [], ApiKey.FETCH: []}
    state = {"fetch_size": 0}

    async def produce(ctx: RequestContext, body: Struct) -> Struct:
        seen[ApiKey.PRODUCE].append(body)
        return PRODUCE.response.new(responses=[], throttle_time_ms=0)

    async def fetch(ctx: RequestContext, body: Struct) -> Struct:
        seen[ApiKey.FETCH].append(body)
        return fetch_response(state["fetch_size"])
    monkeypatch.setitem(REGISTRY, ApiKey.PRODUCE, Registration(ApiKey.PRODUCE, 0, 11, produce))
    monkeypatch.setitem(REGISTRY, ApiKey.FETCH, Registration(ApiKey.FETCH, 0, 17, fetch))
    seen["state"] = state  # type: ignore[assignment]
    return seen


def test_produce_over_quota_is_appended_and_throttled(handlers: Any) -> None:
    clock = Clock()
    quotas = quotas_with(clock, producer_byte_rate=1000.0)

    async def scenario() -> None:
        ctx = ctx_for(quotas, ApiKey.PRODUCE, 9)
        first = await dispatch(ctx, ctx.header, produce_request(800))
        assert first.throttle_time_ms == 0 and ctx.throttle_ms == 0
        ctx = ctx_for(quotas, ApiKey.PRODUCE, 9)
        second = await dispatch(ctx, ctx.header, produce_request(700))
        # 1500 bytes in a 1 s window at 1000/s: (1500 - 1000) / 1000 * 1000 ms
        assert second.throttle_time_ms == 500 and ctx.throttle_ms == 500
        other = ctx_for(quotas, ApiKey.PRODUCE, 9, client_id="fast")
        assert (await dispatch(other, other.header, produce_request(10**6))).throttle_time_ms == 0
    asyncio.run(scenario())
    assert len(handlers[ApiKey.PRODUCE]) == 3       # every record was appended


def test_fetch_over_quota_answers_empty_and_takes_the_bytes_back(handlers: Any) -> None:
    clock = Clock()
    quotas = quotas_with(clock, consumer_byte_rate=1000.0)
    handlers["state"]["fetch_size"] = 600

    async def scenario() -> None:
        ctx = ctx_for(quotas, ApiKey.FETCH, 12)
        body = fetch_request(epoch=3)
        first = await dispatch(ctx, ctx.header, body)
        assert body.max_bytes == 1000                   # lowered to the quota's window
        assert len(first.responses) == 1 and first.throttle_time_ms == 0
        ctx = ctx_for(quotas, ApiKey.FETCH, 12)
        second = await dispatch(ctx, ctx.header, fetch_request(epoch=4))
        assert second.responses == [] and second.throttle_time_ms == 200 == ctx.throttle_ms
        assert second.session_id == 9                   # incremental: session kept
        full = ctx_for(quotas, ApiKey.FETCH, 12)
        third = await dispatch(full, full.header, fetch_request(epoch=0))
        assert third.responses == [] and third.session_id == 0   # full fetch: no session
        # the taken-back bytes are not counted: after the window, 600 fit again
        assert quotas.fetch.rate(None, "slow", clock.now) == pytest.approx(600)
        clock.now += 1500
        ctx = ctx_for(quotas, ApiKey.FETCH, 12)
        assert len((await dispatch(ctx, ctx.header, fetch_request(epoch=5))).responses) == 1
    asyncio.run(scenario())


def test_one_response_over_the_whole_quota_still_goes_out(handlers: Any) -> None:
    """A consumer idle in the window gets even a response over its quota (one batch
    larger than the quota's window), throttled -- else it could never get past it."""
    clock = Clock()
    quotas = quotas_with(clock, consumer_byte_rate=1000.0)
    handlers["state"]["fetch_size"] = 5000

    async def scenario() -> None:
        ctx = ctx_for(quotas, ApiKey.FETCH, 12)
        response = await dispatch(ctx, ctx.header, fetch_request())
        assert len(response.responses) == 1 and response.throttle_time_ms == 4000
    asyncio.run(scenario())


def test_followers_are_exempt(handlers: Any) -> None:
    clock = Clock()
    quotas = quotas_with(clock, consumer_byte_rate=1.0, request_percentage=0.001)
    handlers["state"]["fetch_size"] = 10**6

    async def scenario() -> None:
        for _ in range(3):
            ctx = ctx_for(quotas, ApiKey.FETCH, 12)
            body = fetch_request(replica_id=2)
            response = await dispatch(ctx, ctx.header, body)
            assert len(response.responses) == 1 and ctx.throttle_ms == 0
            assert body.max_bytes == 50_000_000
    asyncio.run(scenario())


def test_request_percentage_quota(handlers: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    quotas = quotas_with(clock, request_percentage=1.0)     # 1% of the loop: 10 ms a second

    async def busy(ctx: RequestContext, body: Struct) -> Struct:
        deadline = time.perf_counter() + 0.03
        while time.perf_counter() < deadline:
            pass
        return api(ApiKey.METADATA).response.new()
    monkeypatch.setitem(REGISTRY, ApiKey.METADATA, Registration(ApiKey.METADATA, 0, 12, busy))

    async def scenario() -> None:
        ctx = ctx_for(quotas, ApiKey.METADATA, 12)
        response = await dispatch(ctx, ctx.header, api(ApiKey.METADATA).request.new())
        # ~30 ms = 3% in a 1 s window: throttled, at most one window
        assert 0 < response.throttle_time_ms <= 1000 and ctx.throttle_ms > 0
        fire_and_forget = ctx_for(quotas, ApiKey.PRODUCE, 9)
        await dispatch(fire_and_forget, fire_and_forget.header, produce_request(10, acks=0))
        assert fire_and_forget.throttle_ms == 0         # acks=0: no request quota
    asyncio.run(scenario())


def test_loop_time_counts_only_the_handlers_own_steps() -> None:
    """On a fake clock: the handler's two steps take 20 ms and 5 ms of loop time;
    while it waits, another task takes 100 ms. Only the handler's 25 ms count."""
    now = [0]

    def clock_ns() -> int:
        return now[0]

    async def handler() -> str:
        now[0] += 20_000_000                            # its first step
        await asyncio.sleep(0)                          # waiting costs nothing...
        now[0] += 5_000_000                             # its second step
        return "done"

    async def other() -> None:
        now[0] += 100_000_000                           # ...while others run meanwhile

    async def scenario() -> None:
        timed = LoopTime(handler(), clock_ns)
        results = await asyncio.gather(timed, other())
        assert results[0] == "done" and now[0] == 125_000_000
        assert timed.busy_ns == 25_000_000
    asyncio.run(scenario())


def test_loop_time_passes_cancellation_to_the_handler() -> None:
    cancelled = []

    async def handler() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def scenario() -> None:
        task = asyncio.ensure_future(LoopTime(handler()))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(scenario())
    assert cancelled == [True]


def test_without_quotas_dispatch_is_a_plain_call(handlers: Any) -> None:
    quotas = ClientQuotas(CONFIG, zk=None)  # type: ignore[arg-type]
    quotas.apply(QuotaEntity(DEFAULT, None), {})
    assert not quotas.enabled

    async def scenario() -> None:
        ctx = ctx_for(quotas, ApiKey.PRODUCE, 9)
        await dispatch(ctx, ctx.header, produce_request(10**7))
        assert ctx.throttle_ms == 0
    asyncio.run(scenario())
