"""ListGroups (API key 16), versions 0-5: the groups this broker coordinates.

v4+ filter by state (case-insensitive); v5+ by type ("classic", or "consumer"
for KIP-848 consumer groups). While a partition of
__consumer_offsets is loading the answer carries COORDINATOR_LOAD_IN_PROGRESS
with the groups known so far (Kafka).

ACLs (broker/acl): DESCRIBE on the cluster lists every group; without it only
the groups the caller may DESCRIBE are listed (neither denial is logged).
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed_cluster
from broker.acl.checks import authorized_names
from coordinator.group.consumer import admin_ops
from broker.context import RequestContext
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.LIST_GROUPS).response
LISTED = SPEC.structs["ListedGroup"]


@handler(ApiKey.LIST_GROUPS)
async def handle_list_groups(ctx: RequestContext, request: Struct) -> Struct:
    v = ctx.version
    states = set(request.states_filter) if v >= 4 else set()
    types = set(request.types_filter) if v >= 5 else set()
    coordinator = coordinator_of(ctx.broker)
    error, groups = coordinator.list_groups(states, types)
    groups += admin_ops.list_groups(coordinator, states, types)
    if not allowed_cluster(ctx, AclOperation.DESCRIBE, log_denied=False):
        shown = authorized_names(ctx, AclOperation.DESCRIBE, ResourceType.GROUP,
                                 (g[0] for g in groups), log_denied=False)
        groups = [g for g in groups if g[0] in shown]
    return SPEC.new(throttle_time_ms=0, error_code=int(error), groups=[
        LISTED.new(group_id=g, protocol_type=ptype, group_state=state, group_type=gtype)
        for g, ptype, state, gtype in groups])
