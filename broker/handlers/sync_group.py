"""SyncGroup (API key 14), versions 0-5.

The leader brings the assignment; every member waits until it is written to
__consumer_offsets and handed out. v3+ carry group.instance.id; v5+ must name
the protocol type and name (missing -> INCONSISTENT_GROUP_PROTOCOL, as Kafka)
and get them back. ACLs (broker/acl): READ on the group, else
GROUP_AUTHORIZATION_FAILED (checked after the protocol fields, as Kafka).
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.context import RequestContext
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.SYNC_GROUP).response


@handler(ApiKey.SYNC_GROUP)
async def handle_sync_group(ctx: RequestContext, request: Struct) -> Struct:
    v = ctx.version
    if v >= 5 and (request.protocol_type is None or request.protocol_name is None):
        return SPEC.new(throttle_time_ms=0, error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                        assignment=b"")
    if not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return SPEC.new(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                        assignment=b"")
    result = await coordinator_of(ctx.broker).sync.sync_group(
        request.group_id, request.generation_id, request.member_id,
        request.group_instance_id if v >= 3 else None,
        request.protocol_type if v >= 5 else None, request.protocol_name if v >= 5 else None,
        {a.member_id: bytes(a.assignment) for a in request.assignments})
    return SPEC.new(throttle_time_ms=0, error_code=int(result.error),
                    protocol_type=result.protocol_type, protocol_name=result.protocol_name,
                    assignment=result.assignment)
