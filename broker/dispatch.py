"""The handler registry: one async function per API key, with its version range.

Handlers live one module per API family under ``broker/handlers/`` and register
themselves with ``@handler(api_key)``. The ApiVersions response is built from
this registry, so what we advertise is exactly what we implement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api

if TYPE_CHECKING:
    from broker.context import RequestContext

HandlerFn = Callable[["RequestContext", Struct], Awaitable[Struct | None]]


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
    or None when no response is sent (Produce with acks=0)."""
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


async def dispatch(ctx: RequestContext, header: RequestHeader, body: Struct) -> Any:
    return await REGISTRY[header.api_key].fn(ctx, body)
