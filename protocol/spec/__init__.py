"""One module per API: each defines REQUEST and RESPONSE (protocol.schema.message).

The registry is discovered from this package, so adding an API is adding a file.
``all_apis()`` is Kafka 3.9's catalogue (this package's modules: what the
cross-checks compare with Kafka and ApiVersions may advertise);
``pybroker_apis()`` are pybroker's own (the ``pybroker`` subpackage, keys from
10000, never advertised); ``wire_apis()`` and ``api()`` know both (what the
header and body codecs look up).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache

from protocol.schema import MessageSpec


@dataclass(frozen=True)
class ApiSpec:
    api_key: int
    name: str                 # e.g. "Produce"
    request: MessageSpec
    response: MessageSpec


@cache
def all_apis() -> dict[int, ApiSpec]:
    """api key -> ApiSpec for every module in this package (Kafka's APIs)."""
    return _discover(__name__, __path__)


@cache
def pybroker_apis() -> dict[int, ApiSpec]:
    """api key -> ApiSpec for pybroker's own APIs (``protocol.spec.pybroker``)."""
    from protocol.spec import pybroker
    return _discover(pybroker.__name__, pybroker.__path__)


@cache
def wire_apis() -> dict[int, ApiSpec]:
    """Every API the codecs know: Kafka's and pybroker's own, by key."""
    return {**all_apis(), **pybroker_apis()}


def _discover(package: str, path: list[str]) -> dict[int, ApiSpec]:
    apis: dict[int, ApiSpec] = {}
    for info in pkgutil.iter_modules(path):
        if info.ispkg:
            continue
        mod = importlib.import_module(f"{package}.{info.name}")
        req: MessageSpec = mod.REQUEST
        resp: MessageSpec = mod.RESPONSE
        if req.api_key != resp.api_key or req.valid != resp.valid:
            raise ValueError(f"{info.name}: request/response disagree on key or versions")
        if req.api_key in apis:
            raise ValueError(f"{info.name}: api key {req.api_key} declared twice")
        apis[req.api_key] = ApiSpec(req.api_key, req.name.removesuffix("Request"), req, resp)
    return dict(sorted(apis.items()))


def api(api_key: int) -> ApiSpec:
    return wire_apis()[api_key]
