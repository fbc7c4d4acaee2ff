"""ApiVersions (API key 18), versions 0-4.

Answers with every registered handler's version range (built by
``broker.dispatch.api_versions_body`` from the registry). A request version
above ours is answered — not refused — with UNSUPPORTED_VERSION in a v0-layout
body listing only ApiVersions itself, so clients retry at our maximum (see
``connection.py``, which builds that answer before decoding the body).
ClientSoftwareName/Version (v3+) are kept on the connection for logs.
Without "consumer" in group.coordinator.rebalance.protocols the KIP-848 APIs
(ConsumerGroupHeartbeat, ConsumerGroupDescribe) are not advertised, as Kafka 4.0.
"""

from __future__ import annotations

from broker.coordination.group_settings import protocol_enabled
from broker.context import RequestContext
from broker.dispatch import api_versions_body, handler
from protocol.api_keys import ApiKey
from protocol.schema import Struct

_KIP848_APIS = frozenset({ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE})


@handler(ApiKey.API_VERSIONS)
async def handle_api_versions(ctx: RequestContext, request: Struct) -> Struct:
    if ctx.header.api_version >= 3:
        ctx.connection.client_software = (request.client_software_name,
                                          request.client_software_version)
    hidden = frozenset() if protocol_enabled(ctx.broker.config) else _KIP848_APIS
    return api_versions_body(hidden=hidden)
