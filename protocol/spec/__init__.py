"""One module per API: each defines REQUEST and RESPONSE (protocol.schema.message).

The registry is discovered from this package, so adding an API is adding a file.
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
    """api key -> ApiSpec for every module in this package."""
    apis: dict[int, ApiSpec] = {}
    for info in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{info.name}")
        req: MessageSpec = mod.REQUEST
        resp: MessageSpec = mod.RESPONSE
        if req.api_key != resp.api_key or req.valid != resp.valid:
            raise ValueError(f"{info.name}: request/response disagree on key or versions")
        if req.api_key in apis:
            raise ValueError(f"{info.name}: api key {req.api_key} declared twice")
        apis[req.api_key] = ApiSpec(req.api_key, req.name.removesuffix("Request"), req, resp)
    return dict(sorted(apis.items()))


def api(api_key: int) -> ApiSpec:
    return all_apis()[api_key]
