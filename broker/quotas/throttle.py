"""Applying client quotas around a handler: what Kafka's KafkaApis does per request
(handleProduceRequest, handleFetchRequest, sendResponseMaybeThrottle; KIP-219).

``throttled_call`` runs the handler and then, for the client (principal, client id):

1. Exempt: cluster actions (LeaderAndIsr, StopReplica, UpdateMetadata,
   ControlledShutdown, WriteTxnMarkers, AlterPartition, ...), SASL handshake and
   authenticate, and a Fetch from a follower (replica id >= 0): the handler runs
   untouched.
2. Fetch from a consumer, fetch quota set: MaxBytes is lowered to the most the quota
   allows at once (ClientQuotaManager.max_value_in_window, Kafka's
   getMaxValueInQuotaWindow) before the handler runs.
3. Request-percentage quota set: the handler's own time on the event loop is
   measured (``LoopTime`` times each step of its coroutine, so waits -- a long-poll
   Fetch, acks=all -- cost nothing) and recorded as a percentage
   (ClientRequestQuotaManager: 100 = the whole loop for the window); a Produce with
   acks=0 is not recorded (Kafka exempts it from the request quota).
4. Produce: the request's record bytes are recorded on the produce quota after the
   append -- the records are kept, whatever the throttle.
5. Fetch: the response's record bytes are recorded on the fetch quota; when the
   fetch or the request quota is exceeded, those bytes are un-recorded and the
   response is replaced by an empty one carrying the throttle time (no partitions;
   session id kept for an incremental fetch, 0 for a full one, as Kafka's
   getThrottledResponse) -- the client fetches the same offsets again later.
   Except when the client had used nothing of its quota in the window: then the
   response goes out with its throttle time and stays recorded. A response that
   alone is over the quota (one batch larger than the quota allows at once: the
   "at least one batch" rule) would otherwise be taken back on every try, and the
   consumer would never get past it.
6. The throttle is the larger of the byte-rate and the request throttles. It goes in
   the response's ThrottleTimeMs (every response that has the field) and in
   ``ctx.throttle_ms``: the connection answers at once and then reads nothing more
   from this client for that long (KIP-219 channel muting, broker/network/).

Sizes are the record bytes (a Produce request's, a Fetch response's), which is what
a byte-rate quota is about; Kafka counts the whole request / response, a few dozen
bytes more per partition.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Protocol, TypeVar

from broker.quotas.client_quota_manager import ClientQuotaManager, handler_time_as_percentage
from protocol.api_keys import ApiKey
from protocol.fetch_session import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID
from protocol.headers import RequestHeader
from protocol.schema import Struct

EXEMPT = frozenset({
    ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
    ApiKey.CONTROLLED_SHUTDOWN, ApiKey.WRITE_TXN_MARKERS, ApiKey.ALTER_PARTITION,
    ApiKey.ENVELOPE, ApiKey.BROKER_HEARTBEAT, ApiKey.SASL_HANDSHAKE,
    ApiKey.SASL_AUTHENTICATE,
})

class Principal(Protocol):
    principal: str | None          # User:...; None before SASL completes


class Throttled(Protocol):
    """A request's context as the quota layer sees it (the handlers'
    ``broker.context.RequestContext``): who sent it, and where its throttle goes."""

    @property
    def connection(self) -> Principal: ...

    throttle_ms: int


Ctx = TypeVar("Ctx", bound=Throttled)
Handler = Callable[[Ctx, Struct], Coroutine[Any, Any, Any]]


class LoopTime:
    """Awaits a coroutine, adding up the time each of its steps runs on the loop."""

    def __init__(self, coro: Coroutine[Any, Any, Any],
                 clock_ns: Callable[[], int] = time.perf_counter_ns) -> None:
        self.coro = coro
        self.clock_ns = clock_ns
        self.busy_ns = 0

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, send, error, clock_ns = self.coro, None, None, self.clock_ns
        while True:
            started = clock_ns()
            try:
                yielded = coro.send(send) if error is None else coro.throw(error)
            except StopIteration as done:
                return done.value
            finally:
                self.busy_ns += clock_ns() - started
            try:
                send, error = (yield yielded), None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as e:   # cancellation and the like: into the handler
                send, error = None, e


def replica_id(body: Struct, version: int) -> int:
    return int(body.replica_state.replica_id if version >= 15 else body.replica_id)


def _size(records: Any) -> int:
    if records is None:
        return 0
    wire_size = getattr(records, "wire_size", None)
    return int(wire_size) if wire_size is not None else len(records)


def produce_bytes(body: Struct) -> int:
    return sum(_size(p.records) for t in body.topic_data for p in t.partition_data)


def fetch_bytes(response: Struct) -> int:
    return sum(_size(p.records) for t in response.responses for p in t.partitions)


def throttled_fetch(response: Struct, request: Struct, version: int, throttle_ms: int) -> Struct:
    """Kafka's getThrottledResponse: no partitions, the throttle time, the session id
    of an incremental fetch (0 for a full one)."""
    response.responses = []
    response.throttle_time_ms = throttle_ms
    if version >= 7 and request.session_epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        response.session_id = INVALID_SESSION_ID
    if version >= 16:
        response.node_endpoints = []
    return response


class QuotaManagers(Protocol):
    """What a throttled call uses of ClientQuotas (client_quotas.py, which imports this
    module): the three managers and the clock their windows run on."""

    @property
    def produce(self) -> ClientQuotaManager: ...

    @property
    def fetch(self) -> ClientQuotaManager: ...

    @property
    def request(self) -> ClientQuotaManager: ...

    @property
    def clock_ms(self) -> Callable[[], int]: ...


async def throttled_call(quotas: QuotaManagers, ctx: Ctx, header: RequestHeader,
                         body: Struct, fn: Handler[Ctx]) -> Any:
    """Run ``fn`` under the client's quotas (the module docstring's steps)."""
    key, version = header.api_key, header.api_version
    if key in EXEMPT or (key == ApiKey.FETCH and replica_id(body, version) >= 0):
        return await fn(ctx, body)
    principal, client_id = ctx.connection.principal, header.client_id or ""
    fetch_quota = key == ApiKey.FETCH and quotas.fetch.enabled
    if fetch_quota and version >= 3:
        limit = quotas.fetch.max_value_in_window(principal, client_id)
        if limit is not None:
            body.max_bytes = max(1, min(int(body.max_bytes), int(limit)))
    timed = quotas.request.enabled and not (key == ApiKey.PRODUCE and body.acks == 0)
    if timed:
        call = LoopTime(fn(ctx, body))
        result = await call
    else:
        result = await fn(ctx, body)
    now = quotas.clock_ms()
    request_throttle = (quotas.request.record_and_throttle_ms(
        principal, client_id, handler_time_as_percentage(call.busy_ns), now) if timed else 0)
    bandwidth_throttle = 0
    if key == ApiKey.PRODUCE and quotas.produce.enabled:
        bandwidth_throttle = quotas.produce.record_and_throttle_ms(
            principal, client_id, produce_bytes(body), now)
    elif key == ApiKey.FETCH and isinstance(result, Struct):
        size = fetch_bytes(result) if fetch_quota else 0
        idle = False
        if fetch_quota:
            idle = quotas.fetch.rate(principal, client_id, now) <= 0
            bandwidth_throttle = quotas.fetch.record_and_throttle_ms(principal, client_id,
                                                                     size, now)
        if request_throttle > 0 or (bandwidth_throttle > 0 and not idle):
            if fetch_quota:
                quotas.fetch.unrecord(principal, client_id, size, now)
            result = throttled_fetch(result, body, version,
                                     max(bandwidth_throttle, request_throttle))
    throttle = max(bandwidth_throttle, request_throttle)
    if throttle > 0:
        ctx.throttle_ms = max(ctx.throttle_ms, throttle)
        if isinstance(result, Struct) and "throttle_time_ms" in result.SPEC.attrs:
            result.throttle_time_ms = throttle
    return result
