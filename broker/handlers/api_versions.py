"""ApiVersions (key 18), versions 0-4.

Answers with every registered handler's version range. A request version
above ours is answered — not refused — with UNSUPPORTED_VERSION in a v0-layout
body listing only ApiVersions itself, so clients retry at our maximum (see
``connection.py``, which builds that answer before decoding the body).
ClientSoftwareName/Version (v3+) are kept on the connection for logs.
"""

from __future__ import annotations

from broker.context import RequestContext
from broker.dispatch import REGISTRY, handler
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(18).response
API_VERSION = SPEC.structs["ApiVersion"]


def api_versions_body(error_code: int = 0) -> Struct:
    keys = [API_VERSION.new(api_key=r.api_key, min_version=r.min_version,
                            max_version=r.max_version)
            for r in sorted(REGISTRY.values(), key=lambda r: r.api_key)]
    return SPEC.new(error_code=error_code, api_keys=keys, throttle_time_ms=0)


def unsupported_version_body() -> Struct:
    reg = REGISTRY[18]
    return SPEC.new(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[
        API_VERSION.new(api_key=18, min_version=reg.min_version, max_version=reg.max_version)])


@handler(18)
async def handle_api_versions(ctx: RequestContext, request: Struct) -> Struct:
    if ctx.header.api_version >= 3:
        ctx.connection.client_software = (request.client_software_name,
                                          request.client_software_version)
    return api_versions_body()
