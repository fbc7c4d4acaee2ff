"""DeleteGroups (API key 42), versions 0-2.

Only an Empty group may go: its offsets and metadata get tombstones in
__consumer_offsets. Live groups -> NON_EMPTY_GROUP; unknown ->
GROUP_ID_NOT_FOUND; groups coordinated elsewhere -> NOT_COORDINATOR.
ACLs (broker/acl): DELETE on each group, else GROUP_AUTHORIZATION_FAILED (those
answered after the others, as Kafka).
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.checks import authorized_names
from coordinator.group.consumer import admin_ops
from broker.context import RequestContext
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.DELETE_GROUPS).response
RESULT = SPEC.structs["DeletableGroupResult"]


@handler(ApiKey.DELETE_GROUPS)
async def handle_delete_groups(ctx: RequestContext, request: Struct) -> Struct:
    names = list(dict.fromkeys(request.groups_names))
    deletable = authorized_names(ctx, AclOperation.DELETE, ResourceType.GROUP, names)
    permitted = [g for g in names if g in deletable]
    coordinator = coordinator_of(ctx.broker)
    # KIP-848 consumer groups first (issue 19): empty ones get their records' tombstones
    errors = await admin_ops.delete_groups(coordinator, permitted)
    errors.update(await coordinator.offsets.delete_groups([g for g in permitted if g not in errors]))
    errors.update({g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in names if g not in deletable})
    return SPEC.new(throttle_time_ms=0, results=[
        RESULT.new(group_id=g, error_code=int(errors[g]))
        for g in permitted + [g for g in names if g not in deletable]])
