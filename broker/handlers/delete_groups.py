"""DeleteGroups (API key 42), versions 0-2.

Only an Empty group may go: its offsets and metadata get tombstones in
__consumer_offsets. Live groups -> NON_EMPTY_GROUP; unknown ->
GROUP_ID_NOT_FOUND; groups coordinated elsewhere -> NOT_COORDINATOR.
"""

from __future__ import annotations

from broker.context import RequestContext
from broker.coordinator import coordinator_of
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.DELETE_GROUPS).response
RESULT = SPEC.structs["DeletableGroupResult"]


@handler(ApiKey.DELETE_GROUPS)
async def handle_delete_groups(ctx: RequestContext, request: Struct) -> Struct:
    names = list(dict.fromkeys(request.groups_names))
    errors = await coordinator_of(ctx.broker).delete_groups(names)
    return SPEC.new(throttle_time_ms=0, results=[
        RESULT.new(group_id=g, error_code=int(errors[g])) for g in names])
