"""Heartbeat (API key 12), versions 0-4: keeps a member's session alive and tells
it when the group rebalances (REBALANCE_IN_PROGRESS). v3+ carry group.instance.id.
ACLs (broker/acl): READ on the group, else GROUP_AUTHORIZATION_FAILED."""

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

SPEC = api(ApiKey.HEARTBEAT).response


@handler(ApiKey.HEARTBEAT)
async def handle_heartbeat(ctx: RequestContext, request: Struct) -> Struct:
    if not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return SPEC.new(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error = coordinator_of(ctx.broker).heartbeat(
        request.group_id, request.member_id,
        request.group_instance_id if ctx.version >= 3 else None, request.generation_id)
    return SPEC.new(throttle_time_ms=0, error_code=int(error))
