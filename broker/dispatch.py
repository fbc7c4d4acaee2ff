"""The handler registry: one async function per API key, with its version range.

Handlers live one module per API family under ``broker/handlers/`` and register
themselves with ``@handler(api_key)``. The ApiVersions response is built from
this registry, so what we advertise is exactly what we implement — except
pybroker's own APIs (``protocol.api_keys.PybrokerApiKey``, keys from 10000:
DescribeWhy), which are served but never advertised, so stock clients never
see them.

A handler returns its response body, or an ``Outcome`` when the connection is
to write nothing (``NO_RESPONSE``: Produce with acks=0) or to close once the
responses before this one are written (``CLOSE_CONNECTION``: a failed acks=0
Produce, so the client refreshes its metadata). Handlers never touch the
socket; ``broker.network.connection`` acts on what they return.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from protocol.api_keys import ApiKey, is_pybroker_api
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api

if TYPE_CHECKING:
    from broker.context import RequestContext


class Outcome(enum.Enum):
    """What a handler asks of the connection instead of a response body."""

    NO_RESPONSE = "no response"            # write nothing (Produce acks=0)
    CLOSE_CONNECTION = "close connection"  # write nothing; close after the earlier responses


NO_RESPONSE = Outcome.NO_RESPONSE
CLOSE_CONNECTION = Outcome.CLOSE_CONNECTION

HandlerResult = Struct | Outcome
HandlerFn = Callable[["RequestContext", Struct], Coroutine[Any, Any, HandlerResult]]


@dataclass(frozen=True)
class Registration:
    api_key: int
    min_version: int
    max_version: int
    fn: HandlerFn


REGISTRY: dict[int, Registration] = {}


def handler(api_key: int, min_version: int = 0,
            max_version: int | None = None) -> Callable[[HandlerFn], HandlerFn]:
    """Register ``fn`` for ``api_key``; versions default to every version the
    schema declares (Kafka 3.9's range). A handler returns the response body,
    or an ``Outcome`` (see the module docstring)."""
    spec = api(api_key).request
    hi = spec.valid.hi if max_version is None else max_version

    def register(fn: HandlerFn) -> HandlerFn:
        if api_key in REGISTRY:
            raise ValueError(f"api key {api_key} registered twice")
        if not (spec.valid.lo <= min_version <= hi <= spec.valid.hi):
            raise ValueError(f"api key {api_key}: versions {min_version}-{hi} outside the schema")
        REGISTRY[api_key] = Registration(api_key, min_version, hi, fn)
        return fn

    return register


def supported(api_key: int, version: int) -> bool:
    reg = REGISTRY.get(api_key)
    return reg is not None and reg.min_version <= version <= reg.max_version


def load_handlers() -> None:
    """Import every handler module so its registrations run."""
    import importlib
    import pkgutil

    import broker.handlers as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{info.name}")


async def dispatch(ctx: RequestContext, header: RequestHeader, body: Struct) -> HandlerResult:
    fn = REGISTRY[header.api_key].fn
    # client quotas (broker/quotas/): the quota layer runs the handler, records what
    # the client used and sets the response's throttle time and ctx.throttle_ms
    quotas = ctx.broker.quotas
    if quotas is not None:
        return await quotas.call(ctx, header, body, fn)
    return await fn(ctx, body)


# ---- ApiVersions bodies, built from the registry ------------------------------------------
# Here rather than in the ApiVersions handler: the connection answers a too-new
# ApiVersions request itself (before the body is decoded), and the transport
# imports dispatch, never a handler module.

_API_VERSIONS = api(ApiKey.API_VERSIONS).response
_API_VERSION = _API_VERSIONS.structs["ApiVersion"]


def api_versions_body(error_code: int = 0, hidden: frozenset[int] = frozenset()) -> Struct:
    """Every registered handler's version range, by api key (pybroker's own APIs and
    ``hidden`` — APIs the broker's config turns off — left out)."""
    keys = [_API_VERSION.new(api_key=r.api_key, min_version=r.min_version,
                             max_version=r.max_version)
            for r in sorted(REGISTRY.values(), key=lambda r: r.api_key)
            if not is_pybroker_api(r.api_key) and r.api_key not in hidden]
    return _API_VERSIONS.new(error_code=error_code, api_keys=keys, throttle_time_ms=0)


def unsupported_version_body() -> Struct:
    """The answer to an ApiVersions request above our range: UNSUPPORTED_VERSION
    listing only ApiVersions itself, so the client retries at our maximum (the
    connection writes it in the v0 layout, which every client can read)."""
    reg = REGISTRY[ApiKey.API_VERSIONS]
    return _API_VERSIONS.new(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[
        _API_VERSION.new(api_key=ApiKey.API_VERSIONS, min_version=reg.min_version,
                         max_version=reg.max_version)])
