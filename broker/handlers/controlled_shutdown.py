"""ControlledShutdown (API key 7), versions 0-3; broker -> controller.

Only the active controller answers: it moves leadership off the broker where
another ISR member exists (the broker also leaves the ISR of the partitions it
follows, which get StopReplica) and returns the partitions the broker still
leads (replication factor > 1). Any other broker answers NOT_CONTROLLER, so
the shutting-down broker looks the controller up again and retries. A broker
not registered: BROKER_NOT_AVAILABLE; an older broker epoch than its
registration (v2+; -1 skips the check): STALE_BROKER_EPOCH. ACLs (broker/acl):
CLUSTER_ACTION on the cluster first, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging

from broker.acl.checks import cluster_action_denied
from broker.context import RequestContext
from broker.dispatch import handler
from controller import NotControllerError, StaleBrokerEpochError
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger("pybroker.broker")
SPEC = api(7).response
REMAINING = SPEC.structs["RemainingPartition"]


@handler(7)
async def handle_controlled_shutdown(ctx: RequestContext, request: Struct) -> Struct:
    if cluster_action_denied(ctx):
        return SPEC.new(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        remaining_partitions=[])
    ctl = ctx.broker.controller
    if ctl is None or not ctl.is_active:
        return SPEC.new(error_code=ErrorCode.NOT_CONTROLLER, remaining_partitions=[])
    try:
        epoch = request.broker_epoch if ctx.version >= 2 else -1
        remaining = await ctl.controlled_shutdown(request.broker_id, epoch)
    except NotControllerError:
        return SPEC.new(error_code=ErrorCode.NOT_CONTROLLER, remaining_partitions=[])
    except StaleBrokerEpochError:
        return SPEC.new(error_code=ErrorCode.STALE_BROKER_EPOCH, remaining_partitions=[])
    except KeyError:
        return SPEC.new(error_code=ErrorCode.BROKER_NOT_AVAILABLE, remaining_partitions=[])
    return SPEC.new(error_code=0, remaining_partitions=[
        REMAINING.new(topic_name=t, partition_index=p) for t, p in remaining])
