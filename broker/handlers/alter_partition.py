"""AlterPartition (API key 56), versions 0-3; partition leader -> active controller.

A leader proposes a new ISR; only the active controller may accept it
(controller/alter_partition.py holds the checks and the ZooKeeper write). Any
other broker forwards a leader's request, one hop, to the controller it knows
and hands back the answer (``AlterPartitionRelay``: a leader that cannot reach
the controller asks through a peer; broker/replication/alter_partition_manager.py,
point 5); a forwarded request, or one it cannot forward, is answered
NOT_CONTROLLER at the top level, so the sender looks the controller up again
and retries.
ACLs (broker/acl): CLUSTER_ACTION on the cluster first, else a top-level
CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.acl.checks import cluster_action_denied
from broker.context import RequestContext
from broker.dispatch import handler
from controller import NotControllerError
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(56).response


@handler(56)
async def handle_alter_partition(ctx: RequestContext, request: Struct) -> Struct:
    if cluster_action_denied(ctx):
        return SPEC.new(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, topics=[])
    ctl = ctx.broker.controller
    if ctl is None or not ctl.is_active:
        relay = ctx.broker.alter_partition_relay
        forwarded = None if relay is None else await relay.forward(
            ctx.header.client_id, request, ctx.version)
        return forwarded if forwarded is not None else SPEC.new(
            error_code=ErrorCode.NOT_CONTROLLER, topics=[])
    try:
        return await ctl.alter_partition(request, ctx.version)
    except NotControllerError:
        return SPEC.new(error_code=ErrorCode.NOT_CONTROLLER, topics=[])
