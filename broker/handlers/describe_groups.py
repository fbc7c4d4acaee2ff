"""DescribeGroups (API key 15), versions 0-5.

Per group: its state, protocol type, protocol and members; member metadata
and assignments only while Stable (Kafka's GroupMetadata.summary). An unknown
group is answered as "Dead" with no error, and so is a KIP-848 consumer group
(Kafka 4.0 below v6; ConsumerGroupDescribe describes it). v3+ authorized
operations when asked, for the groups answered without error (no authorizer:
READ, DELETE, DESCRIBE), else Integer.MIN_VALUE; v4+ member group.instance.id.

ACLs (broker/acl): DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for
it; as Kafka, the refused groups come first in the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed, authorized_operations
from broker.context import RequestContext
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

if TYPE_CHECKING:
    from coordinator.group.classic.group_metadata import MemberMetadata

SPEC = api(ApiKey.DESCRIBE_GROUPS).response
GROUP = SPEC.structs["DescribedGroup"]
MEMBER = SPEC.structs["DescribedGroupMember"]

OPERATIONS_NOT_REQUESTED = -2147483648
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)   # READ, DELETE, DESCRIBE


@handler(ApiKey.DESCRIBE_GROUPS)
async def handle_describe_groups(ctx: RequestContext, request: Struct) -> Struct:
    with_ops = ctx.version >= 3 and bool(request.include_authorized_operations)
    out, permitted = [], []
    for group_id in request.groups:
        if allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            permitted.append(group_id)
        else:
            out.append(_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
    coordinator = coordinator_of(ctx.broker)
    for group_id in permitted:
        # a KIP-848 consumer group is no classic group: Dead here (Kafka 4.0, v0-5)
        error, group = coordinator.describe_group(group_id)
        if error != ErrorCode.NONE:
            out.append(_error(group_id, error))
            continue
        ops = (authorized_operations(ctx, ResourceType.GROUP, group_id, GROUP_OPERATIONS)
               if with_ops else OPERATIONS_NOT_REQUESTED)
        members: list[tuple[MemberMetadata, bytes, bytes]]
        if group is None:
            state, ptype, protocol, members = "Dead", "", "", []
        else:
            state, ptype, protocol, members = group.summary()
        out.append(GROUP.new(
            error_code=0, group_id=group_id, group_state=state, protocol_type=ptype,
            protocol_data=protocol, authorized_operations=ops,
            members=[MEMBER.new(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                client_id=m.client_id, client_host=m.client_host,
                                member_metadata=meta, member_assignment=assignment)
                     for m, meta, assignment in members]))
    return SPEC.new(throttle_time_ms=0, groups=out)


def _error(group_id: str, error: int) -> Struct:
    """DescribeGroupsResponse.groupError: no state, members or operations."""
    return GROUP.new(error_code=int(error), group_id=group_id, group_state="",
                     protocol_type="", protocol_data="", members=[],
                     authorized_operations=OPERATIONS_NOT_REQUESTED)
