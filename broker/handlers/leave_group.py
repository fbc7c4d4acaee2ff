"""LeaveGroup (API key 13), versions 0-5.

v0-2 name one member; v3+ a batch (by member id, or by group.instance.id with
an empty member id — the admin path), each answered with its own error. A
v0-2 answer carries the top-level error, else the member's (Kafka's
LeaveGroupResponse for old versions). v5 members may give a reason.
ACLs (broker/acl): READ on the group, else a top-level GROUP_AUTHORIZATION_FAILED
with no members.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.context import RequestContext
from coordinator.group.classic import LeaveMember
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.LEAVE_GROUP).response
MEMBER = SPEC.structs["MemberResponse"]


@handler(ApiKey.LEAVE_GROUP)
async def handle_leave_group(ctx: RequestContext, request: Struct) -> Struct:
    v = ctx.version
    if not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return SPEC.new(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                        members=[])
    if v >= 3:
        members = [LeaveMember(m.member_id, m.group_instance_id, m.reason if v >= 5 else None)
                   for m in request.members]
    else:
        members = [LeaveMember(request.member_id)]
    error, answered = coordinator_of(ctx.broker).leave_group(request.group_id, members)
    if v < 3:
        if error == ErrorCode.NONE:
            error = next((m.error for m in answered if m.error != ErrorCode.NONE), ErrorCode.NONE)
        return SPEC.new(throttle_time_ms=0, error_code=int(error))
    return SPEC.new(throttle_time_ms=0, error_code=int(error), members=[
        MEMBER.new(member_id=m.member_id, group_instance_id=m.group_instance_id,
                   error_code=int(m.error)) for m in answered])
