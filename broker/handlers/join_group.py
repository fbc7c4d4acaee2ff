"""JoinGroup (API key 11), versions 0-9.

* v0 has no rebalance timeout: the session timeout serves as both (Kafka).
* v4+ dynamic members joining without a member id get MEMBER_ID_REQUIRED with
  a fresh id and must rejoin with it (KIP-394); v5+ carry group.instance.id
  (static membership, KIP-345).
* v7+ answer the protocol type; before v7 an unknown protocol name is "".
* v9: SkipAssignment for a static leader rejoining a stable group.
* ACLs (broker/acl): READ on the group, else GROUP_AUTHORIZATION_FAILED with
  Kafka's error body (generation -1, no members, protocol name null from v7).
The request waits in the coordinator's rebalance purgatory until the
rebalance completes.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.context import RequestContext
from coordinator.group.classic import JoinRequest
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.JOIN_GROUP).response
MEMBER = SPEC.structs["JoinGroupResponseMember"]


def client_host(ctx: RequestContext) -> str:
    """Kafka's InetAddress.toString form: "/127.0.0.1"."""
    peer = ctx.connection.peer
    return "/" + peer.rsplit(":", 1)[0] if peer and peer != "?" else ""


@handler(ApiKey.JOIN_GROUP)
async def handle_join_group(ctx: RequestContext, request: Struct) -> Struct:
    v = ctx.version
    if not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return SPEC.new(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                        generation_id=-1, protocol_name=None if v >= 7 else "", leader="",
                        member_id="", members=[])
    instance_id = request.group_instance_id if v >= 5 else None
    result = await coordinator_of(ctx.broker).join_group(JoinRequest(
        group_id=request.group_id, member_id=request.member_id,
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms if v >= 1 else request.session_timeout_ms,
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        group_instance_id=instance_id,
        require_known_member_id=v >= 4 and instance_id is None,
        support_skip_assignment=v >= 9,
        client_id=ctx.header.client_id or "", client_host=client_host(ctx),
        reason=request.reason if v >= 8 else None))
    protocol_name = result.protocol_name if v >= 7 else (result.protocol_name or "")
    return SPEC.new(
        throttle_time_ms=0, error_code=int(result.error), generation_id=result.generation_id,
        protocol_type=result.protocol_type, protocol_name=protocol_name,
        leader=result.leader_id, skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[MEMBER.new(member_id=m, group_instance_id=i, metadata=meta)
                 for m, i, meta in result.members])
