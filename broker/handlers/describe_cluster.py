"""DescribeCluster (API key 60), versions 0-1 (KIP-700; v1 adds EndpointType, KIP-919).

Live brokers (id, host, port, rack) and the controller id from the metadata
cache, the cluster id from ZooKeeper's /cluster/id. A broker serves only
EndpointType 1 (brokers): 2 (KRaft controllers) gets MISMATCHED_ENDPOINT_TYPE,
anything else UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST in v0), as Kafka 3.9.
The request itself needs no ACL (AuthHelper.computeDescribeClusterResponse);
the authorized-operations bitfield, when asked for, is 0 without DESCRIBE on the
cluster, else the permitted cluster operations (all of them with no authorizer).

The cluster id is the broker's (/cluster/id, read once at start-up: it never
changes once written); the authorized-operations bitfields, which Metadata
shares, are in ``broker.handler_support``.
"""

from __future__ import annotations

from broker.acl.checks import cluster_operations
from broker.context import RequestContext
from broker.dispatch import handler
from broker.handler_support import CLUSTER_OPERATIONS, OPERATIONS_NOT_REQUESTED, \
    controller_id
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.DESCRIBE_CLUSTER).response
BROKER = SPEC.structs["DescribeClusterBroker"]

ENDPOINT_BROKERS = 1
ENDPOINT_CONTROLLERS = 2
def _endpoint_error(version: int, endpoint: int) -> Struct | None:
    """AuthHelper.computeDescribeClusterResponse's endpoint checks."""
    if endpoint == ENDPOINT_BROKERS:
        return None
    if endpoint == ENDPOINT_CONTROLLERS:
        code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
        message = ("The request was sent to an endpoint of type BROKER, "
                   "but we wanted an endpoint of type CONTROLLER")
    else:
        code, message = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {endpoint}"
    return SPEC.new(error_code=ErrorCode.INVALID_REQUEST if version == 0 else code,
                    error_message=message, endpoint_type=ENDPOINT_BROKERS)


@handler(ApiKey.DESCRIBE_CLUSTER)
async def handle_describe_cluster(ctx: RequestContext, request: Struct) -> Struct:
    error = _endpoint_error(ctx.version, request.endpoint_type)
    if error is not None:
        return error
    metadata = ctx.broker.metadata
    brokers = [BROKER.new(broker_id=b.id, host=b.host, port=b.port, rack=b.rack)
               for b in sorted(metadata.brokers_on(ctx.connection.listener),
                               key=lambda b: b.id)]
    # A controller id missing from the broker list is answered as -1 (as Kafka).
    cid = controller_id(metadata)
    if cid not in {b.broker_id for b in brokers}:
        cid = -1
    ops = (cluster_operations(ctx, CLUSTER_OPERATIONS)
           if request.include_cluster_authorized_operations else OPERATIONS_NOT_REQUESTED)
    return SPEC.new(throttle_time_ms=0, error_code=0, error_message=None,
                    endpoint_type=ENDPOINT_BROKERS, cluster_id=ctx.broker.cluster_id,
                    controller_id=cid, brokers=brokers, cluster_authorized_operations=ops)
